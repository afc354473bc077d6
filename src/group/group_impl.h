/* SPDX-License-Identifier: Apache-2.0 */
/* group_impl.h: the node-local group's state and its Unix-socket transport (private to src/group). */
#ifndef EHT_GROUP_GROUP_IMPL_H
#define EHT_GROUP_GROUP_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "eht.h"
#include "os/sock_io.h"

#define EHT_GROUP_KEY_MAX 64
#define EHT_GROUP_TIMEOUT_DEFAULT_MS 300000u
#define EHT_GROUP_GATHER_MAX (1u << 20)

struct eht_group {
	int rank, size;
	uint32_t timeout_ms;
	uint32_t flags;
	gid_t allowed_gid;
	bool have_adapter;
	struct eht_group_adapter adapter;
	char key[EHT_GROUP_KEY_MAX + 1];
	/* Built-in star: rank 0 holds one socket per peer (index = peer rank; [0] unused), the others
	 * one socket to rank 0 in socks[0]. With an adapter the sockets are made on the first fd pass. */
	int *socks;
	bool connected;
	uint32_t seq;   /* collective counter: a mismatch between ranks is -EPROTO, never a hang */
	int broken;     /* sticky first error of the built-in transport, 0 while healthy */
};


/* Establishes the built-in sockets for g (rank 0 listens on key, the others connect). Fills
 * g->socks and sets g->connected. Returns 0 or -errno with a message. */
int eht_group_sock_connect(eht_group *g, const char *key);
/* rank 0 only: binds the listening socket first, so peers told the key can connect at once. */
int eht_group_sock_listen(eht_group *g, const char *key, int *lfd);
int eht_group_sock_accept(eht_group *g, int lfd);
int eht_group_sock_join(eht_group *g, const char *key);

/* Collectives over the built-in sockets (g->connected). Each returns 0 or -errno; on failure the
 * group is broken (sockets shut down so peers fail fast). */
int eht_group_sock_broadcast(eht_group *g, void *buf, size_t len);
int eht_group_sock_allgather(eht_group *g, const void *in, size_t len, void *out);
int eht_group_sock_fds(eht_group *g, int *fds, size_t n);
void eht_group_sock_close(eht_group *g);

#endif
