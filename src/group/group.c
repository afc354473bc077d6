/* SPDX-License-Identifier: Apache-2.0 */
/* group.c: eht_group: rank, size and collectives, over the built-in sockets or a host framework's
 * adapter (whose ranks still pass file descriptors over our sockets). */
#include "group/group_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/name.h"
#include "util/settings.h"

static eht_group *group_alloc(int rank, int size)
{
	eht_group *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->socks = malloc(sizeof(int) * (size_t)(size > 0 ? size : 1));
	if (!g->socks) {
		free(g);
		return NULL;
	}
	for (int i = 0; i < (size > 0 ? size : 1); i++)
		g->socks[i] = -1;
	g->rank = rank;
	g->size = size;
	return g;
}

int eht_group_create_single(eht_group **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_group_create_single: NULL out");
	eht_group *g = group_alloc(0, 1);
	if (!g)
		return eht_err(ENOMEM, "group: out of memory");
	snprintf(g->key, sizeof(g->key), "single");
	g->timeout_ms = EHT_GROUP_TIMEOUT_DEFAULT_MS;
	g->connected = true;
	*out = g;
	return 0;
}

int eht_group_create(const char *key, int rank, int size, const struct eht_group_opts *opts, eht_group **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_group_create: NULL out");
	*out = NULL;
	struct eht_group_opts oc = {0};
	struct eht_group_adapter adc = {0};
	int orc = eht_opts_in(&oc, sizeof(oc), opts, "eht_group_create: opts");
	if (orc)
		return orc;
	if (opts)
		opts = &oc;
	if (opts && opts->adapter) {
		if ((orc = eht_opts_in(&adc, sizeof(adc), opts->adapter, "eht_group_create: adapter")))
			return orc;
		oc.adapter = &adc;
	}
	if (opts && (opts->flags & ~EHT_GROUP_ALLOW_GID))
		return eht_err(EINVAL, "eht_group_create: unknown flags 0x%x", opts->flags & ~EHT_GROUP_ALLOW_GID);
	if (eht_name_check("group key", key, EHT_GROUP_KEY_MAX, false))
		return eht_err_prefix(-EINVAL, "eht_group_create");
	const struct eht_group_adapter *ad = opts ? opts->adapter : NULL;
	if (ad) {
		if (!ad->broadcast || !ad->allgather)
			return eht_err(EINVAL, "eht_group_create: adapter needs size, broadcast and allgather");
		if ((rank >= 0 && rank != ad->rank) || (size > 0 && size != ad->nranks))
			return eht_err(EINVAL, "eht_group_create: rank %d of %d disagrees with the adapter's %d of %d",
				       rank, size, ad->rank, ad->nranks);
		rank = ad->rank;
		size = ad->nranks;
	}
	if (size < 1 || rank < 0 || rank >= size)
		return eht_err(EINVAL, "eht_group_create: rank %d of %d", rank, size);
	eht_group *g = group_alloc(rank, size);
	if (!g)
		return eht_err(ENOMEM, "group: out of memory");
	snprintf(g->key, sizeof(g->key), "%s", key);
	g->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms
						 : (uint32_t)eht_setting_u64(EHT_SET_GROUP_TIMEOUT_MS);
	if (g->timeout_ms == 0)
		g->timeout_ms = EHT_GROUP_TIMEOUT_DEFAULT_MS;
	g->flags = opts ? opts->flags : 0;
	g->allowed_gid = opts ? opts->allowed_gid : 0;
	int rc = 0;
	if (ad) {
		g->have_adapter = true;
		g->adapter = *ad;
	} else if (size == 1) {
		g->connected = true;
	} else {
		rc = eht_group_sock_connect(g, key);
	}
	if (rc) {
		eht_group_destroy(g);
		return rc;
	}
	*out = g;
	return 0;
}

void eht_group_destroy(eht_group *g)
{
	if (!g)
		return;
	eht_group_sock_close(g);
	free(g->socks);
	free(g);
}

int eht_group_rank(const eht_group *g) { return g ? g->rank : -1; }
int eht_group_size(const eht_group *g) { return g ? g->size : 0; }

static int adapter_rc(eht_group *g, int rc, const char *what)
{
	if (rc > 0)
		rc = -rc;
	if (rc && !eht_last_error()[0])
		return eht_err(rc, "group '%s' rank %d: the adapter's %s failed", g->key, g->rank, what);
	return rc ? eht_err_prefix(rc, "group '%s' rank %d: adapter %s", g->key, g->rank, what) : 0;
}

int eht_group_broadcast(eht_group *g, void *buf, size_t len)
{
	if (!g || (len && !buf))
		return eht_err(EINVAL, "eht_group_broadcast: NULL group or buffer");
	if (g->size == 1)
		return 0;
	if (g->have_adapter) {
		eht_err_clear();
		return adapter_rc(g, g->adapter.broadcast(g->adapter.user, buf, len), "broadcast");
	}
	return eht_group_sock_broadcast(g, buf, len);
}

int eht_group_allgather(eht_group *g, const void *in, size_t len, void *out)
{
	if (!g || (len && (!in || !out)))
		return eht_err(EINVAL, "eht_group_allgather: NULL group or buffer");
	if (len > EHT_GROUP_GATHER_MAX)
		return eht_err(EINVAL, "eht_group_allgather: %zu bytes per rank (at most %u)", len,
			       EHT_GROUP_GATHER_MAX);
	if (g->size == 1) {
		if (len)
			memmove(out, in, len);
		return 0;
	}
	if (g->have_adapter) {
		eht_err_clear();
		return adapter_rc(g, g->adapter.allgather(g->adapter.user, in, len, out), "all-gather");
	}
	return eht_group_sock_allgather(g, in, len, out);
}

int eht_group_barrier(eht_group *g)
{
	if (!g)
		return eht_err(EINVAL, "eht_group_barrier: NULL group");
	if (g->size == 1)
		return 0;
	if (g->have_adapter) {
		eht_err_clear();
		if (g->adapter.barrier)
			return adapter_rc(g, g->adapter.barrier(g->adapter.user), "barrier");
		char one = 1, *all = malloc((size_t)g->size);
		if (!all)
			return eht_err(ENOMEM, "group: out of memory");
		int rc = adapter_rc(g, g->adapter.allgather(g->adapter.user, &one, 1, all), "barrier");
		free(all);
		return rc;
	}
	return eht_group_sock_allgather(g, NULL, 0, NULL);
}

/* With an adapter, rank 0 invents a one-time key, listens on it, and sends it through the adapter;
 * the others connect. The sockets then stay for later descriptor passing. */
static int adapter_connect(eht_group *g)
{
	char key[EHT_GROUP_KEY_MAX + 1] = {0};
	int lfd = -1, rc = 0, lrc = 0;
	if (g->rank == 0) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint64_t)eht_now_ms() ^ ((uint64_t)getpid() << 32);
		snprintf(key, sizeof(key), "fd.%.20s.%d.%016llx", g->key, (int)getpid(), (unsigned long long)r);
		/* The key is sent even when listening failed (as ""), so no rank waits on a dead name. */
		lrc = eht_group_sock_listen(g, key, &lfd);
		if (lrc)
			key[0] = '\0';
	}
	eht_err_clear();
	rc = adapter_rc(g, g->adapter.broadcast(g->adapter.user, key, sizeof(key)), "broadcast of the socket key");
	if (rc) {
		if (lfd >= 0)
			close(lfd);
		return rc;
	}
	key[EHT_GROUP_KEY_MAX] = '\0';
	if (!key[0])
		return lrc ? lrc : eht_err(EIO, "group '%s' rank %d: rank 0 could not open its socket", g->key, g->rank);
	if (g->rank == 0) {
		rc = eht_group_sock_accept(g, lfd);
		close(lfd);
		return rc;
	}
	return eht_group_sock_join(g, key);
}

int eht_group_broadcast_fds(eht_group *g, int *fds, size_t n)
{
	if (!g || (n && !fds))
		return eht_err(EINVAL, "eht_group_broadcast_fds: NULL group or fds");
	if (g->size == 1)
		return 0;
	if (!g->connected) {
		int rc = adapter_connect(g);
		if (rc)
			return rc;
	}
	return eht_group_sock_fds(g, fds, n);
}
