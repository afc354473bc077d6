/* SPDX-License-Identifier: Apache-2.0 */
/* client.c: eht_attach: map the tables a server hands out, and notice when it goes away. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "os/sock_io.h"
#include "serve/serve_client.h"
#include "serve/serve_hot.h"
#include "serve/serve_proto.h"
#include "table/numa_copy.h"
#include "table/table_impl.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"
#include "util/clock.h"

struct eht_client {
	int fd;
	int device;
	char key[SERVE_KEY_MAX + 1];
	eht_table **tables;
	size_t ntables;
	atomic_int gone;
};

/* ---- liveness ---- */

static int client_alive(void *arg)
{
	eht_client *c = arg;
	if (!atomic_load_explicit(&c->gone, memory_order_relaxed)) {
		struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
		/* The server never writes after attaching: any event is its end closing. */
		if (poll(&p, 1, 0) > 0 && p.revents)
			atomic_store(&c->gone, 1);
	}
	if (atomic_load_explicit(&c->gone, memory_order_relaxed))
		return eht_err(ECONNRESET, "eht serve '%s' is gone: its tables are no longer served", c->key);
	return 0;
}

int eht_client_check(eht_client *c)
{
	if (!c)
		return eht_err(EINVAL, "eht_client_check: NULL client");
	return client_alive(c);
}

/* ---- attach ---- */

static int connect_retry(const char *key, uint32_t timeout_ms, bool fail_fast, int *fd_out)
{
	struct sockaddr_un a, ra;
	socklen_t alen, ralen;
	int rc = serve_addr(key, &a, &alen);
	/* A worker of the EHT_SERVE_ALLOW_GID group also looks for root's server of the key. */
	const bool root_too = geteuid() != 0 && serve_allowed_gid() >= 0;
	if (!rc && root_too)
		rc = serve_addr_of(key, 0, &ra, &ralen);
	if (rc)
		return rc;
	int64_t deadline = eht_now_ms() + timeout_ms;
	for (;;) {
		int fd = -1;
		/* Non-blocking: a full backlog must not hold us past the deadline. */
		rc = serve_connect(&a, alen, deadline, &fd);
		if (rc == -ECONNREFUSED && root_too)
			rc = serve_connect(&ra, ralen, deadline, &fd);
		if (!rc) {
			/* Anyone may bind an abstract name first: trust only our own user or root, before
			 * reading a byte from it. */
			int prc = serve_peer_trusted(fd, "attach", key);
			if (prc) {
				close(fd);
				return prc;
			}
			*fd_out = fd;
			return 0;
		}
		if (rc == -ETIMEDOUT)
			return eht_err(ETIMEDOUT, "attach %s: the server's listen backlog stayed full for %u ms (a server "
				       "still loading, or another process filling it)", key, timeout_ms);
		if (rc != -ECONNREFUSED)
			return eht_err_sys(-rc, "attach %s: connect", key);
		if (fail_fast) /* the name is not bound: nobody serves the key (a full backlog is EAGAIN) */
			return eht_err(ENOENT, "attach %s: no server holds key '%s' on this node (start one: eht serve "
					       "CHECKPOINT --key %s)", key, key, key);
		int64_t left = deadline - eht_now_ms();
		if (left <= 0)
			return eht_err(ETIMEDOUT, "attach %s: no `eht serve --key %s` answered within %u ms", key, key,
				       timeout_ms);
		struct timespec ts = {0, (left < 20 ? left : 20) * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static int receive(eht_client *c, uint32_t timeout_ms, json_t **root_out, int **fds_out, size_t *nfds_out)
{
	/* The server may still be loading its tables: the whole wait is bounded by the timeout. */
	int64_t deadline = eht_now_ms() + timeout_ms;
	/* First our GPU and NUMA node: the server picks the copy of the tables we get. A server of an
	 * older eht never reads it (it drains what a worker sends). */
	struct serve_request rq = {.magic = SERVE_REQ_MAGIC, .version = SERVE_VERSION, .device = c->device,
				   .numa_node = eht_copy_node_for(c->device)};
	struct serve_hello h;
	int rc = eht_sock_send_all(c->fd, &rq, sizeof(rq), NULL, 0, deadline);
	if (rc && rc != -ECONNRESET && rc != -EPIPE) /* a closed peer: its answer, if any, says why */
		return eht_err(rc, "attach %s: %s while sending this worker's GPU and node", c->key,
			       rc == -ETIMEDOUT ? "timed out" : "connection lost");
	rc = eht_sock_recv_all(c->fd, &h, sizeof(h), NULL, 0, NULL, deadline);
	if (rc)
		return eht_err(rc, "attach %s: %s while waiting for the server's tables", c->key,
			       rc == -ETIMEDOUT ? "timed out" : "connection lost");
	if (h.magic != SERVE_MAGIC || h.version != SERVE_VERSION)
		return eht_err(EPROTO, "attach %s: the server speaks protocol %u (magic 0x%x), this libeht %u", c->key,
			       h.version, h.magic, SERVE_VERSION);
	if (h.json_len > SERVE_JSON_MAX || h.nfds > SERVE_FDS_MAX)
		return eht_err(EPROTO, "attach %s: oversized answer", c->key);
	char *text = malloc((size_t)h.json_len + 1);
	int *fds = malloc(((size_t)h.nfds + 1) * sizeof(int));
	if (!text || !fds) {
		free(text);
		free(fds);
		return eht_err(ENOMEM, "attach: out of memory");
	}
	rc = eht_sock_recv_all(c->fd, text, h.json_len, NULL, 0, NULL, deadline);
	text[rc ? 0 : h.json_len] = '\0';
	size_t got = 0;
	while (!rc && got < h.nfds) {
		char byte;
		size_t n = 0;
		rc = eht_sock_recv_all(c->fd, &byte, 1, fds + got, h.nfds - got, &n, deadline);
		got += n;
	}
	if (rc) {
		eht_sock_close_fds(fds, got);
		free(fds);
		free(text);
		struct rlimit rl = {0};
		if (rc == -EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
			return eht_err(EMFILE, "attach %s: this process's open-file limit (%llu, `ulimit -n`) has no room "
					       "for the tables' %u descriptors: raise it", c->key,
				       (unsigned long long)rl.rlim_cur, h.nfds);
		return eht_err(rc, "attach %s: %s while receiving tables", c->key,
			       rc == -ETIMEDOUT ? "timed out" : rc == -EPROTO ? "a protocol error" : "connection lost");
	}
	json_error_t jerr;
	json_t *root = json_loadb(text, h.json_len, 0, &jerr);
	free(text);
	if (h.status || !root || !json_is_array(json_object_get(root, "tables"))) {
		const char *why = json_string_value(json_object_get(root, "error"));
		if (h.status == -EACCES) /* refused: not its uid, root or its EHT_SERVE_ALLOW_GID group */
			rc = eht_err(EACCES, "attach %s: the server refused this worker: %s", c->key,
				     why ? why : "not its user");
		else
			rc = h.status ? eht_err(h.status, "attach %s: the server failed to export its tables", c->key)
				      : eht_err(EPROTO, "attach %s: malformed table list", c->key);
		json_decref(root);
		eht_sock_close_fds(fds, got);
		free(fds);
		return rc;
	}
	*root_out = root;
	*fds_out = fds;
	*nfds_out = got;
	return 0;
}

static int check_opts(const char *key, const struct eht_attach_opts *opts, struct eht_attach_opts *o)
{
	*o = (struct eht_attach_opts){.size = sizeof(*o), .device = -1, .nranks = 1};
	if (!key)
		return eht_err(EINVAL, "eht_attach: NULL key");
	int orc = eht_opts_in(o, sizeof(*o), opts, "eht_attach: opts");
	if (orc)
		return orc;
	const uint32_t known = EHT_ATTACH_FAIL_FAST | EHT_ATTACH_WAIT;
	if (o->flags & ~known)
		return eht_err(EINVAL, "eht_attach: unknown flags 0x%x", o->flags & ~known);
	if (!o->timeout_ms)
		o->timeout_ms = 60000;
	if (!o->nranks)
		o->nranks = 1;
	if (o->rank >= o->nranks)
		return eht_err(EINVAL, "eht_attach: rank %u of %u", o->rank, o->nranks);
	return 0;
}

int eht_attach(const char *key, const struct eht_attach_opts *opts, eht_client **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_attach: NULL out");
	*out = NULL;
	struct eht_attach_opts o;
	int rc = check_opts(key, opts, &o);
	int fd = -1;
	if (!rc)
		rc = connect_retry(key, o.timeout_ms, !(o.flags & EHT_ATTACH_WAIT), &fd); /* as Python's attach */
	return rc ? rc : serve_attach_fd(fd, key, &o, out);
}

/* A table's "hotset": {"rows": n, "fd": index} (absent: none): the descriptor is checked and read
 * (serve_hot_receive), the rows given to the table. */
static int receive_hotset(const char *key, json_t *hj, int *fds, size_t nfds, eht_table *t)
{
	if (!hj)
		return 0;
	json_t *jr = json_object_get(hj, "rows"), *jf = json_object_get(hj, "fd");
	json_int_t n = json_integer_value(jr), at = json_integer_value(jf);
	if (!json_is_integer(jr) || !json_is_integer(jf) || n <= 0 || at < 0 || (uint64_t)at >= nfds || fds[at] < 0)
		return eht_err(EPROTO, "attach %s: table %s: malformed hot set (rows %lld, descriptor %lld of %zu)", key,
			       t->name, (long long)n, (long long)at, nfds);
	int64_t *rows = NULL;
	int rc = serve_hot_receive(fds[at], (uint64_t)n, t->info.rows, key, t->name, &rows);
	/* Used once: a second table naming the same descriptor is malformed. */
	eht_sock_close_fds(fds + at, 1);
	if (!rc)
		eht_table_set_hotset(t, rows, (uint64_t)n);
	return rc;
}

int serve_attach_fd(int fd, const char *key, const struct eht_attach_opts *opts, eht_client **out)
{
	*out = NULL;
	struct eht_attach_opts o;
	int rc = check_opts(key, opts, &o);
	if (rc) {
		close(fd);
		return rc;
	}
	eht_client *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return eht_err(ENOMEM, "attach: out of memory");
	}
	snprintf(c->key, sizeof(c->key), "%s", key);
	c->fd = fd;
	c->device = o.device;
	json_t *root = NULL;
	int *fds = NULL;
	size_t nfds = 0;
	rc = receive(c, o.timeout_ms, &root, &fds, &nfds);
	json_t *arr = root ? json_object_get(root, "tables") : NULL;
	size_t n = json_array_size(arr);
	/* Which copy the server sent (absent from an older server: the only one), and our pool budget. */
	json_t *cj = root ? json_object_get(root, "copy") : NULL;
	json_int_t cidx = json_integer_value(json_object_get(cj, "index")), ccount = json_integer_value(json_object_get(cj, "count"));
	json_int_t cnode = json_object_get(cj, "numa_node") ? json_integer_value(json_object_get(cj, "numa_node")) : -1;
	json_int_t budget = root ? json_integer_value(json_object_get(root, "pool_threads")) : 0;
	if (!rc && cj && (ccount < 1 || ccount > EHT_COPIES_MAX || cidx < 0 || cidx >= ccount || cnode < -1 || cnode > 4095))
		rc = eht_err(EPROTO, "attach %s: malformed copy (%lld of %lld, node %lld)", key, (long long)cidx,
			     (long long)ccount, (long long)cnode);
	if (!rc && (budget < 0 || budget > 65536))
		rc = eht_err(EPROTO, "attach %s: malformed pool_threads %lld", key, (long long)budget);
	struct eht_import_keep keep = {0}; /* what a tier keeps from one table's import to the next */
	if (!rc && !(c->tables = calloc(n ? n : 1, sizeof(*c->tables))))
		rc = eht_err(ENOMEM, "attach: out of memory");
	for (size_t i = 0; !rc && i < n; i++) {
		json_t *tj = json_array_get(arr, i);
		json_t *span = json_object_get(tj, "fds");
		size_t first = (size_t)json_integer_value(json_array_get(span, 0));
		size_t cnt = (size_t)json_integer_value(json_array_get(span, 1));
		if ((cnt && !json_is_array(span)) || first > nfds || cnt > nfds - first) {
			rc = eht_err(EPROTO, "attach %s: malformed entry %zu (descriptors [%zu, +%zu) of %zu)", key, i, first,
				     cnt, nfds);
			break;
		}
		/* The tier checks that the span holds exactly the descriptors it consumes, takes those it
		 * keeps (set to -1); the rest are closed here. */
		struct eht_import_args ia = {.device = o.device, .rank = o.rank, .nranks = o.nranks,
					     .rows_of = o.disk_rows, .rows_of_arg = o.disk_rows_arg, .keep = &keep};
		rc = eht_table_import(tj, fds + first, cnt, &ia, &c->tables[i]);
		if (rc)
			eht_err_prefix(rc, "attach %s", key);
		eht_sock_close_fds(fds + first, cnt);
		if (!rc) {
			c->tables[i]->alive = client_alive;
			c->tables[i]->alive_arg = c;
			if (cj)
				eht_table_set_copy(c->tables[i], (int)cidx, (int)ccount, (int)cnode, 0);
			else
				c->tables[i]->copy.writer = 0;
			c->tables[i]->copy.pool_threads = (unsigned)budget;
			c->ntables = i + 1;
			rc = receive_hotset(key, json_object_get(tj, "hotset"), fds, nfds, c->tables[i]);
		}
	}
	eht_table_import_end(&keep);
	if (fds)
		eht_sock_close_fds(fds, nfds);
	free(fds);
	json_decref(root);
	if (rc) {
		struct eht_err_saved cause;
		eht_err_save(&cause);
		eht_detach(c);
		return eht_err_restore(&cause, rc);
	}
	*out = c;
	return 0;
}

size_t eht_client_table_count(const eht_client *c) { return c ? c->ntables : 0; }

int eht_client_table(eht_client *c, size_t i, eht_table **t)
{
	if (!c || !t || i >= c->ntables)
		return eht_err(EINVAL, "eht_client_table: index %zu of %zu", i, c ? c->ntables : 0);
	*t = c->tables[i];
	return 0;
}

int eht_client_find(eht_client *c, const char *name, eht_table **t)
{
	for (size_t i = 0; c && name && i < c->ntables; i++)
		if (!strcmp(c->tables[i]->name, name)) {
			*t = c->tables[i];
			return 0;
		}
	return eht_err(ENOENT, "no served table named '%s'", name ? name : "(null)");
}

int eht_detach(eht_client *c)
{
	if (!c)
		return 0;
	int first = 0;
	for (size_t i = 0; i < c->ntables; i++) {
		int rc = eht_table_close(c->tables[i]);
		if (rc && !first)
			first = rc;
	}
	free(c->tables);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
	return first;
}
