/* SPDX-License-Identifier: Apache-2.0 */
/* server.c: eht_serve_start/stop: load tables once, then hand them to every worker that attaches. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cuda/cu_driver.h"
#include "group/sock_io.h"
#include "serve/serve_impl.h"
#include "serve/serve_proto.h"
#include "serve/serve_status.h"
#include "table/host_numa.h"
#include "table/region_table.h"
#include "table/table_impl.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"

#define SEND_TIMEOUT_MS 30000

struct eht_server {
	char key[SERVE_KEY_MAX + 1];
	char path[PATH_MAX];
	int tier;
	struct served *tables;
	size_t ntables;
	int lfd;
	int wake[2]; /* written by eht_serve_stop to end the thread */
	pthread_t thread;
	bool running;
	int *clients;
	size_t nclients, cap;
	atomic_uint_fast64_t attaches;
	atomic_uint live_clients;
	struct serve_status *status; /* serve_status.c: what `eht status` sees; NULL when it failed */
};

static json_t *table_json(const eht_server *s, const struct served *t, size_t first_fd, size_t *nfds)
{
	json_t *o = json_object();
	struct eht_table_info info = {.size = sizeof(info)};
	*nfds = 0;
	json_object_set_new(o, "name", json_string(t->name));
	json_object_set_new(o, "rows", json_integer((json_int_t)t->rows));
	json_object_set_new(o, "row_bytes", json_integer((json_int_t)t->row_bytes));
	if (!t->table) {
		json_object_set_new(o, "tier", json_string("disk"));
		json_object_set_new(o, "checkpoint", json_string(s->path));
		json_object_set_new(o, "weight", json_string(t->weight));
		json_object_set_new(o, "scale", t->scale[0] ? json_string(t->scale) : json_null());
		return o;
	}
	if (eht_table_get_info(t->table, &info) != 0)
		return o;
	struct eht_hn_layout lay;
	if (eht_host_numa_layout(t->table, &lay) == 0) {
		json_object_set_new(o, "tier", json_string("host-numa"));
		json_object_set_new(o, "numa", json_integer(lay.numa));
		json_object_set_new(o, "handle_type", json_integer(lay.handle_type));
		json_object_set_new(o, "bytes", json_integer((json_int_t)lay.bytes));
		json_object_set_new(o, "padded", json_integer((json_int_t)lay.padded));
		json_object_set_new(o, "chunk", json_integer((json_int_t)lay.chunk));
		json_object_set_new(o, "nchunks", json_integer((json_int_t)lay.nchunks));
		json_object_set_new(o, "granularity", json_integer((json_int_t)lay.granularity));
		if (lay.handle_type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
			*nfds = lay.nchunks;
	} else {
		int fd;
		uint64_t off, fbytes;
		eht_region_table_export(t->table, &fd, &off, &fbytes);
		json_object_set_new(o, "tier", json_string("region"));
		json_object_set_new(o, "data_offset", json_integer((json_int_t)off));
		json_object_set_new(o, "file_bytes", json_integer((json_int_t)fbytes));
		json_object_set_new(o, "numa", json_integer(info.numa_node));
		json_object_set_new(o, "page_size", json_integer((json_int_t)info.page_size));
		*nfds = 1;
	}
	json_t *fds = json_array();
	json_array_append_new(fds, json_integer((json_int_t)first_fd));
	json_array_append_new(fds, json_integer((json_int_t)*nfds));
	json_object_set_new(o, "fds", fds);
	return o;
}

/* Exports table t's descriptors (and FABRIC handles into the JSON) for one worker. */
static int table_fds(const struct served *t, json_t *tj, int *fds)
{
	if (!t->table)
		return 0;
	struct eht_hn_layout lay;
	if (eht_host_numa_layout(t->table, &lay) == 0) {
		if (lay.handle_type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
			return eht_host_numa_export(t->table, fds, NULL);
		CUmemFabricHandle *fab = calloc(lay.nchunks, sizeof(*fab));
		if (!fab)
			return eht_err(ENOMEM, "serve: out of memory");
		int rc = eht_host_numa_export(t->table, NULL, fab);
		json_t *arr = json_array();
		for (size_t i = 0; !rc && i < lay.nchunks; i++) {
			char hex[2 * sizeof(fab[i].data) + 1];
			for (size_t b = 0; b < sizeof(fab[i].data); b++)
				snprintf(hex + 2 * b, 3, "%02x", fab[i].data[b]);
			json_array_append_new(arr, json_string(hex));
		}
		json_object_set_new(tj, "fabric", arr);
		free(fab);
		return rc;
	}
	int fd;
	uint64_t off, fbytes;
	int rc = eht_region_table_export(t->table, &fd, &off, &fbytes);
	if (rc)
		return rc;
	fds[0] = dup(fd);
	return fds[0] < 0 ? eht_err_sys(errno, "serve: dup") : 0;
}

/* Sends the hello, the JSON and every descriptor to one worker. */
static int send_tables(eht_server *s, int cfd)
{
	json_t *root = json_object(), *arr = json_array();
	json_object_set_new(root, "key", json_string(s->key));
	size_t total = 0;
	for (size_t i = 0; i < s->ntables; i++) {
		size_t n;
		json_array_append_new(arr, table_json(s, &s->tables[i], total, &n));
		total += n;
	}
	json_object_set_new(root, "tables", arr);
	int *fds = malloc((total ? total : 1) * sizeof(int));
	int rc = fds ? 0 : eht_err(ENOMEM, "serve: out of memory");
	for (size_t i = 0; i < total && fds; i++)
		fds[i] = -1;
	for (size_t i = 0, at = 0; !rc && i < s->ntables; i++) {
		json_t *tj = json_array_get(arr, i);
		size_t n = (size_t)json_integer_value(json_array_get(json_object_get(tj, "fds"), 1));
		rc = table_fds(&s->tables[i], tj, fds + at);
		at += n;
	}
	char *text = rc ? NULL : json_dumps(root, JSON_COMPACT);
	if (!rc && !text)
		rc = eht_err(ENOMEM, "serve: out of memory");
	struct serve_hello h = {.magic = SERVE_MAGIC, .version = SERVE_VERSION, .status = rc,
				.json_len = text ? (uint32_t)strlen(text) : 0, .nfds = rc ? 0 : (uint32_t)total};
	int64_t deadline = eht_group_now_ms() + SEND_TIMEOUT_MS;
	int src = eht_sock_send_all(cfd, &h, sizeof(h), NULL, 0, deadline);
	if (!src && text)
		src = eht_sock_send_all(cfd, text, h.json_len, NULL, 0, deadline);
	for (size_t at = 0; !src && h.nfds && at < total; at += EHT_SOCK_FDS_PER_MSG) {
		size_t k = total - at < EHT_SOCK_FDS_PER_MSG ? total - at : EHT_SOCK_FDS_PER_MSG;
		char byte = 'F';
		src = eht_sock_send_all(cfd, &byte, 1, fds + at, k, deadline);
	}
	if (fds)
		eht_sock_close_fds(fds, total);
	free(fds);
	free(text);
	json_decref(root);
	return rc ? rc : src;
}

static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return false;
	return cred.uid == geteuid() || cred.uid == 0;
}

static void drop_client(eht_server *s, size_t i)
{
	serve_status_detached(s->status, s->clients[i]);
	close(s->clients[i]);
	s->clients[i] = s->clients[--s->nclients];
	atomic_fetch_sub(&s->live_clients, 1);
}

static void accept_one(eht_server *s)
{
	int cfd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	if (!peer_allowed(cfd)) {
		eht_warn("serve %s: refused a worker of another user", s->key);
		close(cfd);
		return;
	}
	if (s->nclients == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		int *c = realloc(s->clients, cap * sizeof(*c));
		if (!c) {
			close(cfd);
			return;
		}
		s->clients = c;
		s->cap = cap;
	}
	int rc = send_tables(s, cfd);
	if (rc) {
		eht_warn("serve %s: a worker could not attach: %s", s->key, eht_last_error());
		close(cfd);
		return;
	}
	s->clients[s->nclients++] = cfd;
	serve_status_attached(s->status, cfd);
	atomic_fetch_add(&s->attaches, 1);
	atomic_fetch_add(&s->live_clients, 1);
	eht_info("serve %s: worker attached (%zu now)", s->key, s->nclients);
}

static void *serve_thread(void *arg)
{
	eht_server *s = arg;
	for (;;) {
		size_t n = 2 + s->nclients;
		struct pollfd *p = calloc(n, sizeof(*p));
		if (!p) {
			sleep(1);
			continue;
		}
		p[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
		p[1] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		for (size_t i = 0; i < s->nclients; i++)
			p[2 + i] = (struct pollfd){.fd = s->clients[i], .events = POLLIN};
		int r = poll(p, (nfds_t)n, -1);
		if (r < 0 && errno != EINTR) {
			free(p);
			break;
		}
		if (p[0].revents) {
			free(p);
			break;
		}
		/* Workers send nothing: readable means gone (EOF) or misbehaving; either way, drop. */
		for (size_t i = s->nclients; i-- > 0;)
			if (p[2 + i].revents) {
				char buf[64];
				if (recv(s->clients[i], buf, sizeof(buf), MSG_DONTWAIT) <= 0 || p[2 + i].revents & (POLLHUP | POLLERR)) {
					drop_client(s, i);
					eht_info("serve %s: worker detached (%zu left)", s->key, s->nclients);
				}
			}
		if (p[1].revents & POLLIN)
			accept_one(s);
		free(p);
	}
	return NULL;
}

static int load_tables(eht_server *s, eht_ckpt *ck, const struct eht_serve_opts *o)
{
	int device = o->device;
	if (device < 0 && eht_cu_device_count() > 0)
		device = 0;
	uint64_t total = 0, done = 0;
	for (size_t i = 0; i < s->ntables; i++)
		total += s->tables[i].rows * s->tables[i].row_bytes;
	if (s->tier == EHT_TIER_DISK)
		return 0;
	eht_group *g = NULL;
	eht_pool *pool = NULL;
	int rc = eht_group_create_single(&g);
	if (!rc)
		rc = eht_pool_create(o->threads, -1, 200, &pool);
	for (size_t i = 0; !rc && i < s->ntables; i++) {
		struct served *t = &s->tables[i];
		struct eht_share_opts so = {.size = sizeof(so), .tier = s->tier, .device = device,
					    .row_bytes = t->row_bytes, .name = t->name};
		rc = eht_table_share(t->rows * t->row_bytes, g, &so, &t->table);
		if (rc) {
			if (rc == -ENOSPC) /* the fix must cover every table, not the one that did not fit */
				eht_err_prefix(rc, "table %s (%.2f GiB; the whole checkpoint needs %.2f GiB for its %zu table(s): "
						   "for all of them give /dev/shm %lluG, e.g. Docker --shm-size=%lluG)",
					       t->name, (double)(t->rows * t->row_bytes) / (1 << 30), (double)total / (1 << 30),
					       s->ntables, (unsigned long long)((total >> 30) + 1),
					       (unsigned long long)((total >> 30) + 1));
			else
				eht_err_prefix(rc, "table %s (%.2f GiB)", t->name, (double)(t->rows * t->row_bytes) / (1 << 30));
			break;
		}
		struct eht_table_info info = {.size = sizeof(info)};
		rc = eht_table_get_info(t->table, &info);
		if (rc == 0)
			rc = serve_fill(ck, t, info.host, pool, done, total, o->progress, o->progress_arg);
		done += t->rows * t->row_bytes;
	}
	eht_pool_destroy(pool);
	eht_group_destroy(g);
	return rc;
}

int eht_serve_start(const char *path, const struct eht_serve_opts *opts, eht_server **out)
{
	struct eht_serve_opts o = {.size = sizeof(o), .device = -1};
	if (!out || !path)
		return eht_err(EINVAL, "eht_serve_start: NULL %s", path ? "out" : "path");
	*out = NULL;
	int orc = eht_opts_in(&o, sizeof(o), opts, "eht_serve_start: opts");
	if (orc)
		return orc;
	if (o.flags)
		return eht_err(EINVAL, "eht_serve_start: unknown flags 0x%x", o.flags);
	if (o.tier != 0 && o.tier != EHT_TIER_HOST_NUMA && o.tier != EHT_TIER_REGION_PINNED &&
	    o.tier != EHT_TIER_REGION && o.tier != EHT_TIER_DISK)
		return eht_err(EINVAL, "eht_serve_start: tier %d (%s) cannot be served", o.tier, eht_tier_name(o.tier));
	const char *key = o.key ? o.key : "default";
	struct sockaddr_un addr;
	socklen_t alen;
	int rc = serve_addr(key, &addr, &alen);
	if (rc)
		return rc;
	eht_server *s = calloc(1, sizeof(*s));
	if (!s)
		return eht_err(ENOMEM, "serve: out of memory");
	s->lfd = s->wake[0] = s->wake[1] = -1;
	s->tier = o.tier;
	snprintf(s->key, sizeof(s->key), "%s", key);
	if (!realpath(path, s->path))
		snprintf(s->path, sizeof(s->path), "%s", path);

	/* Claim the key first: a second server of the same key fails before loading anything. */
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		rc = eht_err_sys(errno, "serve %s: socket", key);
	else if (bind(s->lfd, (struct sockaddr *)&addr, alen) != 0)
		rc = errno == EADDRINUSE ? eht_err(EADDRINUSE, "key '%s' is served already on this node", key)
					 : eht_err_sys(errno, "serve %s: bind", key);
	else if (listen(s->lfd, 128) != 0)
		rc = eht_err_sys(errno, "serve %s: listen", key);
	if (!rc && pipe2(s->wake, O_CLOEXEC) != 0)
		rc = eht_err_sys(errno, "serve %s: pipe", key);
	if (!rc && serve_status_start(key, s->path, o.device, &s->status) != 0)
		eht_warn("serve %s: no status for `eht status`: %s", key, eht_last_error());
	serve_status_wrap_progress(s->status, &o.progress, &o.progress_arg);

	eht_ckpt *ck = NULL;
	if (!rc)
		rc = eht_ckpt_open(path, 0, &ck);
	if (!rc)
		rc = serve_pick_tables(ck, o.pattern ? o.pattern : EHT_SERVE_DEFAULT_PATTERN, &s->tables, &s->ntables);
	if (!rc)
		rc = load_tables(s, ck, &o);
	eht_ckpt_close(ck);
	if (!rc) {
		int e = pthread_create(&s->thread, NULL, serve_thread, s);
		if (e)
			rc = eht_err(e, "serve %s: cannot start the attach thread", key);
		else
			s->running = true;
	}
	if (!rc)
		serve_status_ready(s->status, s);
	if (rc) {
		struct eht_err_saved cause;
		eht_err_save(&cause);
		eht_serve_stop(s);
		return eht_err_restore(&cause, rc);
	}
	*out = s;
	return 0;
}

size_t eht_serve_table_count(const eht_server *s) { return s ? s->ntables : 0; }

int eht_serve_table_info(const eht_server *s, size_t i, struct eht_table_info *info)
{
	if (!s || i >= s->ntables || !info)
		return eht_err(EINVAL, "eht_serve_table_info: bad server, index %zu or info", i);
	const struct served *t = &s->tables[i];
	if (t->table)
		return eht_table_get_info(t->table, info);
	const struct eht_table_info x = {.size = sizeof(x), .tier = EHT_TIER_DISK, .rows = t->rows,
					 .row_bytes = t->row_bytes, .local_rows = t->rows, .device = -1,
					 .numa_node = -1, .page_size = 4096, .name = t->name};
	return eht_opts_out(info, &x, sizeof(x), "eht_serve_table_info: info");
}

uint64_t eht_serve_attaches(const eht_server *s) { return s ? atomic_load(&s->attaches) : 0; }
unsigned eht_serve_clients(const eht_server *s) { return s ? atomic_load(&s->live_clients) : 0; }

int eht_serve_stop(eht_server *s)
{
	if (!s)
		return 0;
	int first = 0;
	if (s->running) {
		char b = 'q';
		if (write(s->wake[1], &b, 1) != 1)
			eht_warn("serve %s: cannot wake the attach thread", s->key);
		pthread_join(s->thread, NULL);
	}
	serve_status_stop(s->status); /* after the attach thread: it reports workers to the status */
	/* Workers learn the server is gone from their end of these sockets. */
	for (size_t i = 0; i < s->nclients; i++)
		close(s->clients[i]);
	free(s->clients);
	if (s->lfd >= 0)
		close(s->lfd);
	for (int i = 0; i < 2; i++)
		if (s->wake[i] >= 0)
			close(s->wake[i]);
	for (size_t i = 0; i < s->ntables; i++) {
		int rc = eht_table_close(s->tables[i].table);
		if (rc) {
			eht_warn("serve %s: closing table %s: %s", s->key, s->tables[i].name, eht_last_error());
			first = first ? first : rc;
		}
	}
	free(s->tables);
	free(s);
	return first;
}
