/* SPDX-License-Identifier: Apache-2.0 */
/* serve_status.c: a server's status socket (key, checkpoint, tables, workers, readiness), and
 * eht_serve_status, its client. */
#include "serve/serve_status.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "os/sock_io.h"
#include "serve/serve_impl.h"
#include "serve/serve_proto.h"
#include "table/table_impl.h"
#include "util/err.h"
#include "util/grow.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/thread.h"

#define STATUS_TIMEOUT_MS 2000
#define STATUS_MAX (16u << 20)
#define KEY_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

struct worker {
	int fd;
	int pid;
	unsigned uid, gid;
	int64_t since_ms;
	int device, numa_node, copy; /* -1: not said (a worker of an older eht) */
	unsigned pool_threads;
};

struct serve_status {
	pthread_mutex_t mu;
	char key[SERVE_KEY_MAX + 1];
	char path[PATH_MAX];
	int device;
	int state; /* 0 loading, 1 ready */
	int64_t start_ms;
	uint64_t bytes; /* in memory, over all tables (known once ready) */
	uint64_t load_done, load_total; /* loading progress */
	eht_serve_progress_fn user_progress; /* the caller's progress callback, called from ours */
	void *user_arg;
	json_t *tables;
	json_t *copies; /* serve_copies_json at ready */
	struct worker *w;
	size_t nw, cap;
	long allow_gid; /* whom the attach socket serves beside our uid and root */
	int lfd;
	int wake[2];
	pthread_t thread;
};

static int status_addr(const char *key, unsigned uid, struct sockaddr_un *a, socklen_t *len)
{
	size_t n = key ? strlen(key) : 0;
	if (n == 0 || n > SERVE_KEY_MAX || strspn(key, KEY_CHARS) != n)
		return eht_err(EINVAL, "serve key '%s': use 1..%d of [A-Za-z0-9._-]", key ? key : "", SERVE_KEY_MAX);
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	int m = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "eht.status.%u.%s", uid, key);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)m);
	return 0;
}

static const char *state_name(int s) { return s == 1 ? "ready" : "loading"; }

static json_t *status_json(struct serve_status *st)
{
	pthread_mutex_lock(&st->mu);
	int64_t now = eht_now_ms();
	json_t *workers = json_array();
	size_t ncopies = st->copies ? json_array_size(json_object_get(st->copies, "copies")) : 0;
	unsigned *per_copy = calloc(ncopies ? ncopies : 1, sizeof(unsigned));
	for (size_t i = 0; i < st->nw; i++) {
		const struct worker *w = &st->w[i];
		json_t *wj = json_pack("{s:i, s:I, s:I, s:n, s:f, s:n, s:n, s:I}", "pid", w->pid, "uid", (json_int_t)w->uid,
				       "gid", (json_int_t)w->gid, "device", "attached_s",
				       (double)(now - w->since_ms) / 1e3, "numa_node", "copy", "pool_threads",
				       (json_int_t)w->pool_threads);
		if (wj && w->device >= 0)
			json_object_set_new(wj, "device", json_integer(w->device));
		if (wj && w->numa_node >= 0)
			json_object_set_new(wj, "numa_node", json_integer(w->numa_node));
		if (wj && w->copy >= 0) {
			json_object_set_new(wj, "copy", json_integer(w->copy));
			if (per_copy && (size_t)w->copy < ncopies)
				per_copy[w->copy]++;
		}
		json_array_append_new(workers, wj);
	}
	/* The copies, each with the count of workers reading it. */
	json_t *copies = json_deep_copy(json_object_get(st->copies, "copies"));
	for (size_t k = 0; copies && per_copy && k < ncopies; k++)
		json_object_set_new(json_array_get(copies, k), "workers", json_integer(per_copy[k]));
	free(per_copy);
	json_t *tables = st->tables ? json_incref(st->tables) : json_array();
	json_t *o = json_pack("{s:s, s:s, s:i, s:I, s:i, s:s, s:b, s:f, s:I, s:o, s:o}", "key", st->key, "checkpoint",
			      st->path, "pid", (int)getpid(), "uid", (json_int_t)geteuid(), "device", st->device, "state",
			      state_name(st->state), "ready", st->state == 1, "uptime_s",
			      (double)(now - st->start_ms) / 1e3, "bytes", (json_int_t)st->bytes, "tables", tables,
			      "workers", workers);
	if (o) {
		json_object_set_new(o, "loaded_bytes", json_integer((json_int_t)st->load_done));
		json_object_set_new(o, "load_bytes", json_integer((json_int_t)st->load_total));
		/* Present in every state (an empty list and nulls while loading): one shape. */
		json_t *note = json_object_get(st->copies, "copies_note"), *budget = json_object_get(st->copies, "cpu_budget");
		json_object_set_new(o, "copies", copies ? copies : json_array());
		json_object_set_new(o, "copies_note", note ? json_incref(note) : json_null());
		json_object_set_new(o, "cpu_budget", budget ? json_incref(budget) : json_null());
	} else {
		json_decref(copies);
	}
	pthread_mutex_unlock(&st->mu);
	return o;
}

static void answer(struct serve_status *st, int cfd)
{
	struct ucred cred;
	if (serve_client_allowed(cfd, st->allow_gid, &cred) != 0) /* whom the attach socket serves, no one else */
		return;
	json_t *o = status_json(st);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return;
	uint32_t len = (uint32_t)strlen(text);
	int64_t deadline = eht_now_ms() + STATUS_TIMEOUT_MS;
	if (eht_sock_send_all(cfd, &len, sizeof(len), NULL, 0, deadline) == 0)
		(void)!eht_sock_send_all(cfd, text, len, NULL, 0, deadline);
	free(text);
}

static void *status_thread(void *arg)
{
	struct serve_status *st = arg;
	eht_thread_name("eht-status");
	for (;;) {
		struct pollfd p[2] = {{.fd = st->wake[0], .events = POLLIN}, {.fd = st->lfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (p[1].revents & POLLIN) {
			int cfd = accept4(st->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (cfd >= 0) {
				answer(st, cfd);
				close(cfd);
			}
		}
	}
	return NULL;
}

int serve_status_start(const char *key, const char *path, int device, long allow_gid, struct serve_status **out)
{
	*out = NULL;
	struct sockaddr_un a;
	socklen_t alen = 0;
	int rc = status_addr(key, (unsigned)geteuid(), &a, &alen);
	if (rc)
		return rc;
	struct serve_status *st = calloc(1, sizeof(*st));
	if (!st)
		return eht_err(ENOMEM, "serve %s: status: out of memory", key);
	pthread_mutex_init(&st->mu, NULL);
	snprintf(st->key, sizeof(st->key), "%s", key);
	snprintf(st->path, sizeof(st->path), "%s", path);
	st->device = device;
	st->allow_gid = allow_gid;
	st->start_ms = eht_now_ms();
	st->wake[0] = st->wake[1] = -1;
	st->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (st->lfd < 0)
		rc = eht_err_sys(errno, "serve %s: status socket", key);
	else if (bind(st->lfd, (struct sockaddr *)&a, alen) != 0)
		rc = errno == EADDRINUSE ? serve_name_taken("status name of key", key, &a, alen)
					 : eht_err_sys(errno, "serve %s: status socket bind", key);
	else if (listen(st->lfd, 16) != 0)
		rc = eht_err_sys(errno, "serve %s: status socket listen", key);
	else if (pipe2(st->wake, O_CLOEXEC) != 0)
		rc = eht_err_sys(errno, "serve %s: status pipe", key);
	else if ((rc = pthread_create(&st->thread, NULL, status_thread, st)) != 0)
		rc = eht_err(rc, "serve %s: cannot start the status thread", key);
	if (rc) {
		if (st->lfd >= 0)
			close(st->lfd);
		for (int i = 0; i < 2; i++)
			if (st->wake[i] >= 0)
				close(st->wake[i]);
		pthread_mutex_destroy(&st->mu);
		free(st);
		return rc;
	}
	*out = st;
	return 0;
}

static void status_progress(void *arg, uint64_t done, uint64_t total, const char *table)
{
	struct serve_status *st = arg;
	pthread_mutex_lock(&st->mu);
	st->load_done = done;
	st->load_total = total;
	pthread_mutex_unlock(&st->mu);
	if (st->user_progress)
		st->user_progress(st->user_arg, done, total, table);
}

void serve_status_wrap_progress(struct serve_status *st, eht_serve_progress_fn *fn, void **arg)
{
	if (!st)
		return;
	st->user_progress = *fn;
	st->user_arg = *arg;
	*fn = status_progress;
	*arg = st;
}

void serve_status_ready(struct serve_status *st, const eht_server *s)
{
	if (!st)
		return;
	json_t *arr = json_array();
	uint64_t total = 0;
	for (size_t i = 0; i < eht_serve_table_count(s); i++) {
		struct eht_table_info info = {.size = sizeof(info)};
		if (eht_serve_table_info(s, i, &info) != 0)
			continue;
		uint64_t bytes = info.rows * info.row_bytes;
		total += info.host ? bytes : 0; /* loaded into memory, not read in place */
		json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:I, s:b}", "name", info.name, "tier",
						     eht_tier_name(info.tier), "rows", (json_int_t)info.rows, "row_bytes",
						     (json_int_t)info.row_bytes, "bytes", (json_int_t)bytes, "numa_node",
						     info.numa_node, "page_size", (json_int_t)info.page_size, "in_memory",
						     info.host != NULL));
		const struct served *sv = serve_table_at(s, i);
		json_t *tj = json_array_get(arr, json_array_size(arr) - 1);
		if (sv && sv->table) { /* the CPU page size the server maps the rows with (smaps) */
			char pt[64];
			json_object_set_new(tj, "cpu_page_size", json_integer((json_int_t)eht_table_page_size(sv->table)));
			json_object_set_new(tj, "cpu_pages", json_string(eht_table_page_text(sv->table, pt, sizeof(pt))));
		}
		if (sv && sv->hot) { /* what every worker receives at attach */
			json_object_set_new(tj, "hotset_rows", json_integer((json_int_t)sv->nhot));
			json_object_set_new(tj, "hotset", json_string(sv->hot_file));
		}
	}
	json_t *copies = serve_copies_json(s);
	size_t ncopies = json_array_size(json_object_get(copies, "copies"));
	pthread_mutex_lock(&st->mu);
	json_decref(st->tables);
	st->tables = arr;
	json_decref(st->copies);
	st->copies = copies;
	st->state = 1;
	st->bytes = total * (ncopies > 1 ? ncopies : 1); /* every copy is in memory */
	pthread_mutex_unlock(&st->mu);
}

void serve_status_attached(struct serve_status *st, int fd)
{
	if (!st)
		return;
	struct ucred cred = {.pid = 0};
	socklen_t clen = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0)
		cred.pid = 0;
	pthread_mutex_lock(&st->mu);
	struct worker *w = eht_grow(st->w, &st->cap, st->nw, sizeof(*w));
	if (!w) {
		pthread_mutex_unlock(&st->mu);
		return; /* status is informational: a worker left out of it is not an error */
	}
	st->w = w;
	st->w[st->nw++] = (struct worker){.fd = fd, .pid = cred.pid, .uid = cred.uid, .gid = cred.gid,
					  .since_ms = eht_now_ms(), .device = -1, .numa_node = -1, .copy = -1};
	pthread_mutex_unlock(&st->mu);
}

void serve_status_detached(struct serve_status *st, int fd)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->mu);
	for (size_t i = 0; i < st->nw; i++)
		if (st->w[i].fd == fd) {
			st->w[i] = st->w[--st->nw];
			break;
		}
	pthread_mutex_unlock(&st->mu);
}

void serve_status_placed(struct serve_status *st, int fd, int device, int numa_node, int copy, unsigned pool_threads)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->mu);
	for (size_t i = 0; i < st->nw; i++)
		if (st->w[i].fd == fd) {
			st->w[i].device = device;
			st->w[i].numa_node = numa_node;
			st->w[i].copy = copy;
			st->w[i].pool_threads = pool_threads;
		}
	pthread_mutex_unlock(&st->mu);
}

void serve_status_stop(struct serve_status *st)
{
	if (!st)
		return;
	char b = 'q';
	if (write(st->wake[1], &b, 1) != 1)
		eht_warn("serve %s: cannot wake the status thread", st->key);
	pthread_join(st->thread, NULL);
	close(st->lfd);
	close(st->wake[0]);
	close(st->wake[1]);
	json_decref(st->tables);
	json_decref(st->copies);
	free(st->w);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

/* ---- client ---- */

/* The whole of eht_serve_status (every server asked) within one deadline. */
#define STATUS_COMMAND_MS STATUS_TIMEOUT_MS

struct asked {
	char key[SERVE_KEY_MAX + 1];
	unsigned uid; /* whose name: ours, or root's (for a member of EHT_SERVE_ALLOW_GID's group) */
	int fd;
	int rc;
	char msg[384]; /* rc's message: each name's own, not the last one's */
	json_t *answer;
};

struct asks {
	struct asked *a;
	size_t n, cap;
};

static int ask_add(struct asks *q, const char *key, unsigned uid)
{
	for (size_t i = 0; i < q->n; i++)
		if (!strcmp(q->a[i].key, key))
			return 0; /* ours first: root's server of the same key is not asked */
	struct asked *a = eht_grow(q->a, &q->cap, q->n, sizeof(*a));
	if (!a)
		return eht_err(ENOMEM, "eht_serve_status: out of memory");
	q->a = a;
	struct asked *x = &q->a[q->n++];
	memset(x, 0, sizeof(*x));
	snprintf(x->key, sizeof(x->key), "%s", key);
	x->uid = uid;
	x->fd = -1;
	return 0;
}

/* A member of the EHT_SERVE_ALLOW_GID group also asks root's servers. */
static bool root_too(void) { return geteuid() != 0 && serve_allowed_gid() >= 0; }

/* Keys with a status name of uid, from /proc/net/unix ("@eht.status.<uid>.<key>"): only names; who
 * holds each is checked when it is asked. */
static int list_keys(struct asks *q, unsigned uid)
{
	FILE *f = fopen("/proc/net/unix", "re");
	if (!f)
		return eht_err_sys(errno, "eht_serve_status: /proc/net/unix");
	char line[512], prefix[64];
	snprintf(prefix, sizeof(prefix), "@eht.status.%u.", uid);
	int rc = 0;
	while (!rc && fgets(line, sizeof(line), f)) {
		char *at = strstr(line, prefix);
		if (!at)
			continue;
		char *k = at + strlen(prefix);
		k[strcspn(k, " \n")] = '\0';
		size_t n = strlen(k);
		if (n && n <= SERVE_KEY_MAX && strspn(k, KEY_CHARS) == n) /* no warning for names no key has */
			rc = ask_add(q, k, uid);
	}
	fclose(f);
	return rc;
}

/* Connects to x's status name and checks who holds it before anything is read: a name bound by
 * another uid costs no wait. x->rc: 0 (connected), -ENOENT (no listener) or an error with its
 * message. */
static void ask_connect(struct asked *x, int64_t deadline)
{
	struct sockaddr_un a;
	socklen_t alen = 0;
	int rc = status_addr(x->key, x->uid, &a, &alen); /* sets its own message */
	if (!rc && (rc = serve_connect(&a, alen, deadline, &x->fd)) != 0) {
		if (rc == -ECONNREFUSED)
			rc = -ENOENT;
		else if (rc == -ETIMEDOUT)
			rc = eht_err(ETIMEDOUT, "status of key '%s': the status socket's backlog stayed full", x->key);
		else
			rc = eht_err_sys(-rc, "status of key '%s': connect", x->key);
	}
	if (!rc && (rc = serve_peer_trusted(x->fd, "status of key", x->key)) != 0) {
		close(x->fd);
		x->fd = -1;
	}
	x->rc = rc;
	snprintf(x->msg, sizeof(x->msg), "%s", rc ? eht_last_error() : "");
}

/* Reads x's answer (the length, then the JSON) until the deadline; what the server sent at once
 * is read even once it passed. */
static void ask_read(struct asked *x, int64_t deadline)
{
	uint32_t len = 0;
	char *text = NULL;
	int rc = eht_sock_recv_all(x->fd, &len, sizeof(len), NULL, 0, NULL, deadline);
	if (rc)
		rc = eht_err(rc, "status of key '%s': %s", x->key,
			     rc == -ETIMEDOUT ? "no answer within the command's deadline"
					      : "the server closed the connection without an answer");
	if (!rc && (len == 0 || len > STATUS_MAX))
		rc = eht_err(EPROTO, "status of key '%s': the server sent a %u-byte status", x->key, len);
	if (!rc && !(text = malloc(len + 1)))
		rc = eht_err(ENOMEM, "eht_serve_status: out of memory");
	if (!rc && (rc = eht_sock_recv_all(x->fd, text, len, NULL, 0, NULL, deadline)) != 0)
		rc = eht_err(rc, "status of key '%s': %s", x->key,
			     rc == -ETIMEDOUT ? "the answer did not arrive within the command's deadline"
					      : "the connection was lost during the answer");
	if (!rc) {
		text[len] = '\0';
		json_error_t je;
		x->answer = json_loads(text, 0, &je);
		if (!x->answer)
			rc = eht_err(EPROTO, "status of key '%s': the server sent bad JSON: %s", x->key, je.text);
	}
	free(text);
	close(x->fd);
	x->fd = -1;
	x->rc = rc;
	snprintf(x->msg, sizeof(x->msg), "%s", rc ? eht_last_error() : "");
}

int eht_serve_status(const char *key, char **json)
{
	if (!json)
		return eht_err(EINVAL, "eht_serve_status: NULL json");
	*json = NULL;
	eht_err_clear(); /* every message below is about this call, never an earlier one */
	int64_t deadline = eht_now_ms() + STATUS_COMMAND_MS;
	struct asks q = {0};
	json_t *result = NULL;
	int rc = 0;
	if (key) {
		/* Ours first; for a member of EHT_SERVE_ALLOW_GID's group, root's when ours is not bound. */
		rc = ask_add(&q, key, (unsigned)geteuid());
		if (!rc) {
			ask_connect(&q.a[0], deadline);
			if (q.a[0].rc == -ENOENT && root_too()) {
				q.a[0].uid = 0;
				ask_connect(&q.a[0], deadline);
			}
			if (!q.a[0].rc)
				ask_read(&q.a[0], deadline);
			rc = q.a[0].rc;
			if (rc == -ENOENT)
				rc = eht_err(ENOENT, "no server holds key '%s' on this node (for this user)", key);
			if (!rc) {
				result = q.a[0].answer;
				q.a[0].answer = NULL;
			}
		}
	} else {
		rc = list_keys(&q, (unsigned)geteuid());
		if (!rc && root_too())
			rc = list_keys(&q, 0);
		result = rc ? NULL : json_array();
		if (!rc && !result)
			rc = eht_err(ENOMEM, "eht_serve_status: out of memory");
		/* Every connection (and its peer check) first, then every answer: one deadline for the
		 * whole listing, not one per name. */
		for (size_t i = 0; !rc && i < q.n; i++)
			ask_connect(&q.a[i], deadline);
		for (size_t i = 0; !rc && i < q.n; i++) {
			struct asked *x = &q.a[i];
			if (!x->rc)
				ask_read(x, deadline);
			if (!x->rc) {
				json_array_append_new(result, x->answer);
				x->answer = NULL;
			} else if (x->rc != -ENOENT) { /* a server that exited meanwhile is simply not listed */
				eht_warn("%s", x->msg);
			}
		}
		eht_err_clear(); /* the warnings said it: the listing itself succeeded */
	}
	if (!rc) {
		*json = json_dumps(result, JSON_COMPACT);
		if (!*json)
			rc = eht_err(ENOMEM, "eht_serve_status: out of memory");
	}
	for (size_t i = 0; i < q.n; i++) {
		if (q.a[i].fd >= 0)
			close(q.a[i].fd);
		json_decref(q.a[i].answer);
	}
	free(q.a);
	json_decref(result);
	return rc;
}
