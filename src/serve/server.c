/* SPDX-License-Identifier: Apache-2.0 */
/* server.c: eht_serve_start/stop: load tables once, then hand them to every worker that attaches. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "os/sock_io.h"
#include "serve/serve_hot.h"
#include "serve/serve_impl.h"
#include "serve/serve_proto.h"
#include "serve/serve_status.h"
#include "table/table_impl.h"
#include "util/err.h"
#include "util/grow.h"
#include "util/opts.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/thread.h"

#define SEND_TIMEOUT_MS 30000
#define MAX_SENDERS 64          /* workers being sent their tables at once (one thread each) */
#define WARN_INTERVAL_MS 10000  /* at most one warning of a kind per interval; the rest counted */

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
	pthread_mutex_t mu;  /* guards what follows, up to the atomics */
	pthread_cond_t idle; /* signalled when a sender ends */
	int *clients;        /* attached workers' sockets (polled for their closing) */
	size_t nclients, cap;
	int pending[MAX_SENDERS]; /* sockets a sender thread is writing to */
	unsigned senders;
	bool stopping;
	int64_t warned_ms[2];     /* rate limit per kind: 0 refused peers, 1 failed sends */
	unsigned suppressed[2];
	atomic_uint_fast64_t attaches;
	atomic_uint live_clients;
	struct serve_status *status; /* serve_status.c: what `eht status` sees; NULL when it failed */
	long allow_gid;              /* EHT_SERVE_ALLOW_GID at start, or -1 */
	/* One copy of every table per NUMA node (--per-numa), each worker sent its node's copy. */
	int ncopies;
	int copy_nodes[EHT_COPIES_MAX];
	char copies_note[EHT_ERR_MAX]; /* why there is one copy when more were asked for, else "" */
	struct serve_budget budget;
};

/* One warning per kind per WARN_INTERVAL_MS: a flood of bad connections must not flood the log. */
static void warn_limited(eht_server *s, int kind, const char *what, const char *why)
{
	int64_t now = eht_now_ms();
	pthread_mutex_lock(&s->mu);
	bool say = now - s->warned_ms[kind] >= WARN_INTERVAL_MS;
	unsigned more = s->suppressed[kind];
	if (say) {
		s->warned_ms[kind] = now;
		s->suppressed[kind] = 0;
	} else {
		s->suppressed[kind]++;
	}
	pthread_mutex_unlock(&s->mu);
	if (say && more)
		eht_warn("serve %s: %s: %s (and %u more like it in the last %d s)", s->key, what, why, more,
			 WARN_INTERVAL_MS / 1000);
	else if (say)
		eht_warn("serve %s: %s: %s", s->key, what, why);
}

/* Sends the hello, the JSON and every descriptor of copy k of the tables to one worker. */
static int send_tables(eht_server *s, int cfd, int k)
{
	json_t *root = json_object(), *arr = json_array();
	json_object_set_new(root, "key", json_string(s->key));
	json_object_set_new(root, "copy", json_pack("{s:i, s:i, s:i}", "index", k, "count", s->ncopies, "numa_node",
						     s->copy_nodes[k]));
	json_object_set_new(root, "pool_threads", json_integer((json_int_t)s->budget.per_worker));
	json_object_set_new(root, "tables", arr);
	/* Each table's tier describes and exports it; the descriptors of all tables travel in order,
	 * each table's span named by "fds": [first, count]. */
	int *fds = NULL;
	size_t total = 0;
	int rc = 0;
	for (size_t i = 0; !rc && i < s->ntables; i++) {
		json_t *tj = json_object();
		int *tf = NULL;
		size_t n = 0;
		json_array_append_new(arr, tj);
		rc = eht_table_export(s->tables[i].copies[k], tj, &tf, &n);
		/* The hot set's memfd rides after the table's span: a worker of an older eht ignores the
		 * "hotset" field and closes the extra descriptor with the rest. */
		const struct served *sv = &s->tables[i];
		int hfd = -1;
		if (!rc && sv->hot && (hfd = fcntl(sv->hot_fd, F_DUPFD_CLOEXEC, 0)) < 0)
			rc = eht_err_sys(errno, "serve %s: table %s: duplicating the hot set's memfd", s->key, sv->name);
		int *grown = rc ? NULL : realloc(fds, (total + n + 2) * sizeof(int));
		if (!rc && !grown)
			rc = eht_err(ENOMEM, "serve: out of memory");
		if (rc) {
			eht_sock_close_fds(tf, n);
			free(tf);
			if (hfd >= 0)
				close(hfd);
			break;
		}
		fds = grown;
		if (n)
			memcpy(fds + total, tf, n * sizeof(int));
		free(tf);
		json_t *span = json_array();
		json_array_append_new(span, json_integer((json_int_t)total));
		json_array_append_new(span, json_integer((json_int_t)n));
		json_object_set_new(tj, "fds", span);
		total += n;
		if (hfd >= 0) {
			fds[total] = hfd;
			json_object_set_new(tj, "hotset", json_pack("{s:I, s:I}", "rows", (json_int_t)sv->nhot, "fd",
								    (json_int_t)total));
			total++;
		}
	}
	char *text = rc ? NULL : json_dumps(root, JSON_COMPACT);
	if (!rc && !text)
		rc = eht_err(ENOMEM, "serve: out of memory");
	struct serve_hello h = {.magic = SERVE_MAGIC, .version = SERVE_VERSION, .status = rc,
				.json_len = text ? (uint32_t)strlen(text) : 0, .nfds = rc ? 0 : (uint32_t)total};
	int64_t deadline = eht_now_ms() + SEND_TIMEOUT_MS;
	int src = eht_sock_send_all(cfd, &h, sizeof(h), NULL, 0, deadline);
	if (!src && text)
		src = eht_sock_send_all(cfd, text, h.json_len, NULL, 0, deadline);
	for (size_t at = 0; !src && h.nfds && at < total; at += EHT_SOCK_FDS_PER_MSG) {
		size_t k = total - at < EHT_SOCK_FDS_PER_MSG ? total - at : EHT_SOCK_FDS_PER_MSG;
		char byte = 'F';
		src = eht_sock_send_all(cfd, &byte, 1, fds + at, k, deadline);
	}
	if (src == -ETOOMANYREFS)
		src = eht_err(ETOOMANYREFS, "serve %s: the tables' descriptors in flight to workers stayed over this "
					    "user's open-file limit for %d s (unread descriptors count against it): raise "
					    "`ulimit -n` for eht serve", s->key, SEND_TIMEOUT_MS / 1000);
	if (fds)
		eht_sock_close_fds(fds, total);
	free(fds);
	free(text);
	json_decref(root);
	return rc ? rc : src;
}

/* Called with s->mu held. */
static void drop_client(eht_server *s, size_t i)
{
	serve_status_detached(s->status, s->clients[i]);
	close(s->clients[i]);
	s->clients[i] = s->clients[--s->nclients];
	atomic_fetch_sub(&s->live_clients, 1);
}

struct sender {
	eht_server *s;
	int cfd;
};

/* Sends one worker its tables on a thread of its own: a worker that never reads stalls only this
 * thread (until SEND_TIMEOUT_MS), never the accept loop or the other workers. */
static void *sender_thread(void *arg)
{
	struct sender *sd = arg;
	eht_thread_name("eht-serve-send");
	eht_server *s = sd->s;
	int cfd = sd->cfd;
	free(sd);
	/* The worker says its GPU and node first; an older one says nothing and gets copy 0. */
	struct serve_request rq = {0};
	int64_t wait = s->ncopies > 1 ? SERVE_REQUEST_COPIES_MS : SERVE_REQUEST_MS;
	if (eht_sock_recv_all(cfd, &rq, sizeof(rq), NULL, 0, NULL, eht_now_ms() + wait) != 0 || rq.magic != SERVE_REQ_MAGIC)
		rq = (struct serve_request){.device = -1, .numa_node = -1};
	int k = eht_copy_pick(s->copy_nodes, s->ncopies, rq.numa_node);
	int rc = send_tables(s, cfd, k);
	char why[256];
	const char *msg = rc ? eht_last_error() : "";
	snprintf(why, sizeof(why), "%s", *msg || !rc ? msg : strerror(-rc));
	eht_err_clear();
	pthread_mutex_lock(&s->mu);
	for (unsigned i = 0; i < MAX_SENDERS; i++)
		if (s->pending[i] == cfd) {
			s->pending[i] = -1;
			break;
		}
	if (!rc && !s->stopping) {
		int *c = eht_grow(s->clients, &s->cap, s->nclients, sizeof(*c));
		if (c)
			s->clients = c;
	}
	bool keep = !rc && !s->stopping && s->nclients < s->cap, stopping = s->stopping;
	if (keep) {
		s->clients[s->nclients++] = cfd;
		serve_status_attached(s->status, cfd);
		serve_status_placed(s->status, cfd, rq.device, rq.numa_node, k, s->budget.per_worker);
		atomic_fetch_add(&s->attaches, 1);
		atomic_fetch_add(&s->live_clients, 1);
		eht_info("serve %s: worker attached (%zu now; GPU %d, NUMA node %d: copy %d of %d, %u pool threads)",
			 s->key, s->nclients, (int)rq.device, (int)rq.numa_node, k, s->ncopies, s->budget.per_worker);
		char b = 'c'; /* the poll loop now watches this worker too */
		if (write(s->wake[1], &b, 1) != 1)
			eht_debug("serve %s: wake pipe full", s->key);
	}
	pthread_mutex_unlock(&s->mu);
	if (!keep) {
		close(cfd);
		if (rc && !stopping)
			warn_limited(s, 1, "a worker could not attach", why);
	}
	pthread_mutex_lock(&s->mu);
	s->senders--;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void accept_one(eht_server *s)
{
	int cfd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	struct ucred cred = {.uid = (uid_t)-1};
	if (serve_client_allowed(cfd, s->allow_gid, &cred) != 0) {
		char why[160], json[256];
		long g = s->allow_gid;
		snprintf(why, sizeof(why), "uid %u (pid %d, gid %u) is not this user (uid %u), root%s", (unsigned)cred.uid,
			 (int)cred.pid, (unsigned)cred.gid, (unsigned)geteuid(),
			 g >= 0 ? " or a member of EHT_SERVE_ALLOW_GID's group" : " (EHT_SERVE_ALLOW_GID unset)");
		if (g >= 0)
			snprintf(why + strlen(why), sizeof(why) - strlen(why), " %ld", g);
		warn_limited(s, 0, "refused a worker of another user", why);
		/* Tell it why, in one try that cannot block: a refused peer gets no thread and no wait. */
		int n = snprintf(json, sizeof(json), "{\"error\":\"%s\"}", why);
		struct serve_hello h = {.magic = SERVE_MAGIC, .version = SERVE_VERSION, .status = -EACCES,
					.json_len = (uint32_t)n};
		if (eht_sock_send_all(cfd, &h, sizeof(h), NULL, 0, 0) == 0)
			(void)!eht_sock_send_all(cfd, json, (size_t)n, NULL, 0, 0);
		close(cfd);
		return;
	}
	struct sender *sd = malloc(sizeof(*sd));
	pthread_mutex_lock(&s->mu);
	unsigned slot = MAX_SENDERS;
	for (unsigned i = 0; sd && i < MAX_SENDERS; i++)
		if (s->pending[i] < 0) {
			slot = i;
			break;
		}
	if (slot == MAX_SENDERS) {
		pthread_mutex_unlock(&s->mu);
		free(sd);
		warn_limited(s, 1, "a worker could not attach", "too many workers attaching at once");
		close(cfd);
		return;
	}
	*sd = (struct sender){.s = s, .cfd = cfd};
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int e = pthread_create(&th, &at, sender_thread, sd);
	pthread_attr_destroy(&at);
	if (!e) {
		s->pending[slot] = cfd;
		s->senders++;
	}
	pthread_mutex_unlock(&s->mu);
	if (e) {
		free(sd);
		close(cfd);
		warn_limited(s, 1, "a worker could not attach", "cannot start a sender thread");
	}
}

static void *serve_thread(void *arg)
{
	eht_server *s = arg;
	eht_thread_name("eht-serve");
	for (;;) {
		pthread_mutex_lock(&s->mu);
		size_t n = 2 + s->nclients;
		struct pollfd *p = calloc(n, sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&s->mu);
			sleep(1);
			continue;
		}
		p[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
		p[1] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		for (size_t i = 0; i < s->nclients; i++)
			p[2 + i] = (struct pollfd){.fd = s->clients[i], .events = POLLIN};
		pthread_mutex_unlock(&s->mu);
		int r = poll(p, (nfds_t)n, -1);
		if (r < 0 && errno != EINTR) {
			free(p);
			break;
		}
		if (p[0].revents) {
			/* 'c': a sender added a worker (rebuild the poll set); 'q': stop. */
			char b[64];
			ssize_t k = read(s->wake[0], b, sizeof(b));
			if (k <= 0 || memchr(b, 'q', (size_t)k)) {
				free(p);
				break;
			}
		}
		/* Workers send nothing: readable means gone (EOF) or misbehaving; either way, drop. Only
		 * this thread removes clients, so the indices polled are still valid (senders append). */
		pthread_mutex_lock(&s->mu);
		for (size_t i = n - 2; i-- > 0;)
			if (p[2 + i].revents) {
				char buf[64];
				if (recv(s->clients[i], buf, sizeof(buf), MSG_DONTWAIT) <= 0 || p[2 + i].revents & (POLLHUP | POLLERR)) {
					drop_client(s, i);
					eht_info("serve %s: worker detached (%zu left)", s->key, s->nclients);
				}
			}
		pthread_mutex_unlock(&s->mu);
		if (p[1].revents & POLLIN)
			accept_one(s);
		free(p);
	}
	return NULL;
}

/* --per-numa: the nodes that get a copy of every table (s->copy_nodes), or one copy and why
 * (s->copies_note). Returns 0, or -EINVAL for a node list naming a node this machine lacks. */
static int plan_copies(eht_server *s, const struct eht_serve_opts *o, uint64_t total)
{
	s->ncopies = 1;
	s->copy_nodes[0] = -1;
	if (!(o->flags & EHT_SERVE_PER_NUMA))
		return 0;
	const struct eht_tier_def *tier = eht_tier_of(s->tier);
	int nodes[EHT_COPIES_MAX], n = 0;
	if (tier && (tier->caps & EHT_TIER_IN_PLACE)) {
		snprintf(s->copies_note, sizeof(s->copies_note),
			 "the %s tier reads the checkpoint where it lies: there is no copy to place", tier->label);
	} else if ((n = eht_copy_nodes(o->numa_nodes, o->nnuma_nodes, nodes)) < 0) {
		return eht_err_prefix(n, "serve %s: --per-numa", s->key);
	} else if (n == 0) {
		snprintf(s->copies_note, sizeof(s->copies_note),
			 "no GPU of this machine names its NUMA node (name the nodes: --per-numa=0,1)");
	} else if (n == 1) {
		snprintf(s->copies_note, sizeof(s->copies_note), "every GPU is on NUMA node %d", nodes[0]);
	} else {
		for (int i = 0; i < n; i++)
			if (eht_copy_fits(nodes[i], total) != 0) {
				snprintf(s->copies_note, sizeof(s->copies_note), "%d copies of %.1f MiB do not fit: %s", n,
					 (double)total / (1 << 20), eht_last_error());
				eht_err_clear();
				return 0;
			}
		s->ncopies = n;
		memcpy(s->copy_nodes, nodes, (size_t)n * sizeof(int));
	}
	return 0;
}

/* A copy past the first could not be made: every table keeps its first copy only. */
static void drop_extra_copies(eht_server *s, int k, const char *why)
{
	snprintf(s->copies_note, sizeof(s->copies_note), "copy %d (NUMA node %d) failed: %s", k, s->copy_nodes[k], why);
	for (size_t i = 0; i < s->ntables; i++)
		for (int c = 1; c < EHT_COPIES_MAX; c++) {
			eht_table_close(s->tables[i].copies[c]);
			s->tables[i].copies[c] = NULL;
		}
	s->ncopies = 1;
}

static int load_tables(eht_server *s, eht_ckpt *ck, const struct eht_serve_opts *o)
{
	int device = o->device;
	if (device < 0 && eht_dev_count() > 0)
		device = 0;
	uint64_t total = 0, done = 0;
	for (size_t i = 0; i < s->ntables; i++)
		total += s->tables[i].rows * s->tables[i].row_bytes;
	int rc = plan_copies(s, o, total);
	if (rc)
		return rc;
	if (s->copies_note[0])
		eht_warn("serve %s: one copy of the tables for every NUMA node, not one per node: %s", s->key, s->copies_note);
	/* A tier that reads the checkpoint where it lies opens it; the others are shared and filled. */
	const struct eht_tier_def *tier = eht_tier_of(s->tier);
	if (tier && (tier->caps & EHT_TIER_IN_PLACE)) {
		for (size_t i = 0; !rc && i < s->ntables; i++) {
			struct served *t = &s->tables[i];
			rc = tier->open_in_place(ck, t->weight, t->scale[0] ? t->scale : NULL, t->name, 0, 1,
						 EHT_OPEN_EXPORT_ONLY, &t->table);
			t->copies[0] = t->table;
		}
		return rc;
	}
	eht_group *g = NULL;
	eht_pool *pool = NULL;
	rc = eht_group_create_single(&g);
	if (!rc)
		rc = eht_pool_create(o->threads, -1, 200, &pool);
	uint64_t all = total * (uint64_t)s->ncopies;
	for (size_t i = 0; !rc && i < s->ntables; i++) {
		struct served *t = &s->tables[i];
		int tier0 = s->tier;
		for (int k = 0; !rc && k < s->ncopies; k++) {
			if (o->cancel && __atomic_load_n(o->cancel, __ATOMIC_RELAXED)) {
				rc = eht_err(EINTR, "serve %s: loading stopped by a signal before table %s", s->key, t->name);
				break;
			}
			/* A table's populate can take a minute (100 GB): the stop flag cuts it short too. */
			struct eht_share_opts so = {.size = sizeof(so), .tier = tier0, .device = device,
						    .row_bytes = t->row_bytes, .name = t->name, .cancel = o->cancel};
			if (s->ncopies > 1) { /* copy k on its node; every copy in the tier the first got */
				so.flags |= EHT_SHARE_NUMA_NODE;
				so.numa_node = s->copy_nodes[k];
			}
			rc = eht_table_share(t->rows * t->row_bytes, g, &so, &t->copies[k]);
			if (rc && k > 0 && rc != -EINTR) { /* the first copy serves every worker */
				drop_extra_copies(s, k, eht_last_error());
				eht_warn("serve %s: one copy of the tables for every NUMA node, not one per node: %s", s->key,
					 s->copies_note);
				eht_err_clear();
				all = total;
				rc = 0;
				break;
			}
			if (rc) {
				if (rc == -ENOSPC) /* the fix must cover every table, not the one that did not fit */
					eht_err_prefix(rc, "table %s (%.2f GiB; the whole checkpoint needs %.2f GiB for its %zu table(s): "
							   "for all of them give /dev/shm %lluG, e.g. Docker --shm-size=%lluG)",
						       t->name, (double)(t->rows * t->row_bytes) / (1 << 30), (double)all / (1 << 30),
						       s->ntables, (unsigned long long)((all >> 30) + 1),
						       (unsigned long long)((all >> 30) + 1));
				else
					eht_err_prefix(rc, "table %s (%.2f GiB)", t->name, (double)(t->rows * t->row_bytes) / (1 << 30));
				break;
			}
			struct eht_table_info info = {.size = sizeof(info)};
			rc = eht_table_get_info(t->copies[k], &info);
			if (k == 0) {
				t->table = t->copies[0];
				tier0 = info.tier;
			}
			if (rc == 0)
				rc = serve_fill(ck, t, info.host, pool, done, all, o->progress, o->progress_arg, o->cancel);
			done += t->rows * t->row_bytes;
			if (!rc) /* loaded: from now on the rows are only read (a region file loses its write bits) */
				eht_table_seal(t->copies[k]);
		}
	}
	for (size_t i = 0; !rc && i < s->ntables; i++)
		for (int k = 0; k < s->ncopies; k++) {
			if (s->ncopies == 1)
				s->copy_nodes[0] = s->tables[0].table->info.numa_node;
			eht_table_set_copy(s->tables[i].copies[k], k, s->ncopies, s->copy_nodes[k], 1);
		}
	eht_pool_destroy(pool);
	eht_group_destroy(g);
	return rc;
}

json_t *serve_copies_json(const eht_server *s)
{
	json_t *copies = json_array();
	for (int k = 0; k < s->ncopies; k++) {
		uint64_t bytes = 0;
		for (size_t i = 0; i < s->ntables; i++)
			bytes += s->tables[i].rows * s->tables[i].row_bytes;
		json_array_append_new(copies, json_pack("{s:i, s:i, s:I}", "index", k, "numa_node", s->copy_nodes[k], "bytes",
							(json_int_t)bytes));
	}
	const struct serve_budget *b = &s->budget;
	return json_pack("{s:o, s:s?, s:{s:I, s:I, s:I, s:I, s:s}}", "copies", copies, "copies_note",
			 s->copies_note[0] ? s->copies_note : NULL, "cpu_budget", "cores", (json_int_t)b->cores, "workers",
			 (json_int_t)b->workers, "per_worker", (json_int_t)b->per_worker, "usable_cores",
			 (json_int_t)b->usable, "source", b->source ? b->source : "cores");
}

/* A name of the key (what: "key", "status name of key") is bound: say by whom (another user
 * squatting it is not "served already"). */
int serve_name_taken(const char *what, const char *key, const struct sockaddr_un *addr, socklen_t alen)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct ucred c;
	int ok = fd >= 0 && connect(fd, (const struct sockaddr *)addr, alen) == 0 && serve_peer(fd, &c) == 0;
	if (fd >= 0)
		close(fd);
	if (!ok)
		return eht_err(EADDRINUSE, "%s '%s' is bound on this node by a process that does not answer; use another --key",
			       what, key);
	if (c.uid != geteuid())
		return eht_err(EADDRINUSE,
			       "%s '%s' is taken on this node by another user: uid %u (pid %d); workers would refuse it; "
			       "use another --key",
			       what, key, (unsigned)c.uid, (int)c.pid);
	return eht_err(EADDRINUSE, "%s '%s' is served already on this node (pid %d, uid %u)", what, key, (int)c.pid,
		       (unsigned)c.uid);
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
	if (o.flags & ~EHT_SERVE_PER_NUMA)
		return eht_err(EINVAL, "eht_serve_start: unknown flags 0x%x", o.flags & ~EHT_SERVE_PER_NUMA);
	if (o.nnuma_nodes > EHT_COPIES_MAX || (o.nnuma_nodes && !o.numa_nodes))
		return eht_err(EINVAL, "eht_serve_start: %zu NUMA nodes (at most %d, numa_nodes set)", o.nnuma_nodes,
			       EHT_COPIES_MAX);
	const struct eht_tier_def *tier = eht_tier_of(o.tier);
	if (o.tier != 0 && !(tier && (tier->caps & (EHT_TIER_CAN_SHARE | EHT_TIER_IN_PLACE))))
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
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->idle, NULL);
	for (unsigned i = 0; i < MAX_SENDERS; i++)
		s->pending[i] = -1;
	s->tier = o.tier;
	s->allow_gid = serve_allowed_gid();
	serve_budget_plan(o.cpu_budget, o.workers, &s->budget);
	snprintf(s->key, sizeof(s->key), "%s", key);
	if (!realpath(path, s->path))
		snprintf(s->path, sizeof(s->path), "%s", path);

	/* Claim the key first: a second server of the same key fails before loading anything. */
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		rc = eht_err_sys(errno, "serve %s: socket", key);
	else if (bind(s->lfd, (struct sockaddr *)&addr, alen) != 0)
		rc = errno == EADDRINUSE ? serve_name_taken("key", key, &addr, alen) : eht_err_sys(errno, "serve %s: bind", key);
	else if (listen(s->lfd, 128) != 0)
		rc = eht_err_sys(errno, "serve %s: listen", key);
	if (!rc && pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0)
		rc = eht_err_sys(errno, "serve %s: pipe", key);
	/* A status name someone else holds would answer `eht status` and the ready file in our place:
	 * taken like the key itself. Any other failure leaves the server without status. */
	if (!rc && (rc = serve_status_start(key, s->path, o.device, s->allow_gid, &s->status)) != 0 && rc != -EADDRINUSE) {
		eht_warn("serve %s: no status for `eht status`: %s", key, eht_last_error());
		rc = 0;
	}
	if (!rc && s->allow_gid >= 0 && geteuid() != 0)
		eht_warn("serve %s: EHT_SERVE_ALLOW_GID=%ld: workers of other users trust only a server run by root; "
			 "this one (uid %u) serves its own user", key, s->allow_gid, (unsigned)geteuid());
	serve_status_wrap_progress(s->status, &o.progress, &o.progress_arg);

	eht_ckpt *ck = NULL;
	if (!rc)
		rc = eht_ckpt_open(path, 0, &ck);
	if (!rc)
		rc = serve_pick_tables(ck, o.pattern ? o.pattern : EHT_SERVE_DEFAULT_PATTERN, &s->tables, &s->ntables);
	/* Hot sets are checked before the (long) load: a bad file fails in a moment, not after it. */
	if (!rc)
		rc = serve_hot_load(s->tables, s->ntables, o.hotsets, o.nhotsets, key);
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
	return eht_table_get_info(s->tables[i].table, info);
}

const struct served *serve_table_at(const eht_server *s, size_t i)
{
	return s && i < s->ntables ? &s->tables[i] : NULL;
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
	/* Senders still writing to a slow worker: cut their sockets short and wait for them. */
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	for (unsigned i = 0; i < MAX_SENDERS; i++)
		if (s->pending[i] >= 0)
			shutdown(s->pending[i], SHUT_RDWR);
	while (s->senders)
		pthread_cond_wait(&s->idle, &s->mu);
	pthread_mutex_unlock(&s->mu);
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
	for (size_t i = 0; i < s->ntables; i++)
		for (int k = 0; k < EHT_COPIES_MAX; k++) {
			int rc = eht_table_close(s->tables[i].copies[k]);
			if (rc) {
				eht_warn("serve %s: closing table %s (copy %d): %s", s->key, s->tables[i].name, k, eht_last_error());
				first = first ? first : rc;
			}
		}
	serve_hot_free(s->tables, s->ntables);
	free(s->tables);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->idle);
	free(s);
	return first;
}
