/* SPDX-License-Identifier: Apache-2.0 */
/* serve_client.h: an attaching worker: the disk tier's tables, and attaching on a connected socket. */
#ifndef EHT_SERVE_SERVE_CLIENT_H
#define EHT_SERVE_SERVE_CLIENT_H

#include <jansson.h>

#include "eht.h"

/* Opens the disk-tier table described by tj ("checkpoint", "weight", "scale") for this worker's
 * rank of opts->nranks. Returns 0 or the disk tier's error. */
int serve_open_disk(json_t *tj, const struct eht_attach_opts *opts, eht_table **out);

/* eht_attach on a connected socket fd (taken over, closed on failure): receives the hello, the
 * table list and the descriptors, and maps the tables. The fuzzer drives it with a socketpair.
 * Returns 0 or eht_attach's errors. */
int serve_attach_fd(int fd, const char *key, const struct eht_attach_opts *opts, eht_client **out);

#endif
