/* SPDX-License-Identifier: Apache-2.0 */
/* serve_client.h: an attaching worker: attaching on a connected socket. */
#ifndef EHT_SERVE_SERVE_CLIENT_H
#define EHT_SERVE_SERVE_CLIENT_H

#include "eht.h"

/* eht_attach on a connected socket fd (taken over, closed on failure): receives the hello, the
 * table list and the descriptors, and imports the tables through their tiers. The fuzzer drives
 * it with a socketpair. Returns 0 or eht_attach's errors. */
int serve_attach_fd(int fd, const char *key, const struct eht_attach_opts *opts, eht_client **out);

#endif
