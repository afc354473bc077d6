/* SPDX-License-Identifier: Apache-2.0 */
/* serve_client.h: how an attaching worker opens a table of the disk tier. */
#ifndef EHT_SERVE_SERVE_CLIENT_H
#define EHT_SERVE_SERVE_CLIENT_H

#include <jansson.h>

#include "eht.h"

/* Opens the disk-tier table described by tj ("checkpoint", "weight", "scale") for this worker's
 * rank of opts->nranks. Returns 0 or the disk tier's error. */
int serve_open_disk(json_t *tj, const struct eht_attach_opts *opts, eht_table **out);

#endif
