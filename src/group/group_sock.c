/* SPDX-License-Identifier: Apache-2.0 */
/* group_sock.c: the built-in transport: abstract Unix sockets in a star around rank 0, every read
 * and write bounded by a deadline, file descriptors passed with SCM_RIGHTS. */
#include "group/group_impl.h"
#include "os/sock_io.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util/err.h"
#include "util/log.h"
#include "util/clock.h"

#define MSG_MAGIC 0x45485447u /* "EHTG" */

enum { OP_HELLO = 1, OP_WELCOME, OP_BCAST, OP_GATHER, OP_GATHERED, OP_FDS };

struct msg_hdr {
	uint32_t magic;
	uint32_t op;
	uint32_t seq;
	int32_t status;  /* OP_WELCOME: 0 or -errno (the peer was refused) */
	uint64_t len;    /* payload bytes that follow; OP_HELLO: the sender's size */
	uint32_t rank;   /* sender's rank (OP_HELLO) */
	uint32_t nfds;   /* descriptors attached to this header (OP_FDS) */
};

static int64_t deadline_of(const eht_group *g) { return eht_now_ms() + g->timeout_ms; }

static const char *rc_text(int rc)
{
	switch (rc) {
	case -ECONNRESET: return "connection reset: the peer exited or broke the group";
	case -ETIMEDOUT: return "timed out";
	case -EPROTO: return "protocol mismatch (ranks called different collectives or sizes)";
	case -EMFILE: return "this process has no room for more descriptors (its open-file limit, `ulimit -n`)";
	case -ETOOMANYREFS:
		return "the descriptors in flight to the other ranks stayed over this user's open-file limit until "
		       "the timeout (unread descriptors count against it): raise `ulimit -n`";
	default: return strerror(-rc);
	}
}

/* Marks the group broken and shuts every socket, so that peers blocked on us fail at once instead
 * of waiting for their deadline. Returns rc with a message naming the peer and the operation. */
static int fail(eht_group *g, int rc, int peer, const char *what)
{
	if (!g->broken)
		g->broken = rc;
	int n = g->rank == 0 ? g->size : 1;
	for (int i = 0; g->socks && i < n; i++)
		if (g->socks[i] >= 0)
			shutdown(g->socks[i], SHUT_RDWR);
	return eht_err(rc, "group '%s' rank %d: %s with rank %d failed: %s", g->key, g->rank, what, peer,
		       rc_text(rc));
}

static int check_broken(eht_group *g)
{
	if (g->broken)
		return eht_err(ECONNRESET, "group '%s' rank %d: the group broke earlier (%s)", g->key, g->rank,
			       rc_text(g->broken));
	return 0;
}

/* ---- set-up ---- */

static socklen_t make_addr(const eht_group *g, struct sockaddr_un *a, const char *key)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* Abstract namespace: no file to leak; the name vanishes with the listener. Ranks of several
	 * users meet under the shared group's name instead of their own uid. */
	int n = (g->flags & EHT_GROUP_ALLOW_GID)
			? snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "eht.g%u.%s", (unsigned)g->allowed_gid, key)
			: snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "eht.%u.%s", (unsigned)geteuid(), key);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Same user, or the allowed group when the caller asked for it. */
static int check_peer(const eht_group *g, int fd, pid_t *pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -errno;
	if (pid)
		*pid = cred.pid;
	if (cred.uid == geteuid())
		return 0;
	if ((g->flags & EHT_GROUP_ALLOW_GID) && cred.gid == g->allowed_gid)
		return 0;
	return -EACCES;
}

int eht_group_sock_listen(eht_group *g, const char *key, int *lfd)
{
	struct sockaddr_un a;
	socklen_t alen = make_addr(g, &a, key);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return eht_err_sys(errno, "group '%s': socket", key);
	if (bind(fd, (struct sockaddr *)&a, alen) != 0) {
		int e = errno;
		close(fd);
		if (e == EADDRINUSE)
			return eht_err(EADDRINUSE, "group '%s': the key is in use on this node (another rank 0 "
				       "is listening)", key);
		return eht_err_sys(e, "group '%s': bind", key);
	}
	if (listen(fd, g->size) != 0) {
		int e = errno;
		close(fd);
		return eht_err_sys(e, "group '%s': listen", key);
	}
	*lfd = fd;
	return 0;
}

static int send_welcome(int fd, int status, int64_t deadline)
{
	struct msg_hdr h = {.magic = MSG_MAGIC, .op = OP_WELCOME, .status = status};
	return eht_sock_send_all(fd, &h, sizeof(h), NULL, 0, deadline);
}

int eht_group_sock_accept(eht_group *g, int lfd)
{
	int64_t deadline = deadline_of(g);
	int joined = 0, rc = 0;
	while (joined < g->size - 1) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				rc = eht_err_sys(errno, "group '%s': accept", g->key);
				break;
			}
			rc = eht_sock_wait(lfd, POLLIN, deadline);
			if (rc) {
				rc = eht_err(rc, "group '%s': %d of %d ranks joined within %u ms", g->key,
					     joined + 1, g->size, g->timeout_ms);
				break;
			}
			continue;
		}
		pid_t pid = 0;
		int cr = check_peer(g, fd, &pid);
		if (cr) {
			/* A stranger is refused and told so; the group keeps waiting for its own ranks. */
			eht_warn("group '%s': refused a peer (pid %d) of another user%s", g->key, (int)pid,
				 (g->flags & EHT_GROUP_ALLOW_GID) ? " and group" : "");
			send_welcome(fd, cr, eht_now_ms() + 1000);
			close(fd);
			continue;
		}
		struct msg_hdr h;
		int hr = eht_sock_recv_all(fd, &h, sizeof(h), NULL, 0, NULL, deadline);
		if (hr) {
			/* A peer that connects and dies is not a member yet: skip it. */
			close(fd);
			if (hr == -ETIMEDOUT) {
				rc = eht_err(ETIMEDOUT, "group '%s': a peer (pid %d) connected but sent no hello "
					     "within %u ms", g->key, (int)pid, g->timeout_ms);
				break;
			}
			continue;
		}
		int r = (int)h.rank;
		if (h.magic != MSG_MAGIC || h.op != OP_HELLO || h.len != (uint64_t)g->size || r <= 0 ||
		    r >= g->size || g->socks[r] >= 0) {
			send_welcome(fd, -EPROTO, deadline);
			close(fd);
			rc = eht_err(EPROTO, "group '%s': a peer (pid %d) joined as rank %d of %llu, but this "
				     "group has %d ranks%s", g->key, (int)pid, r, (unsigned long long)h.len,
				     g->size, (r > 0 && r < g->size && g->socks[r] >= 0) ? " and that rank already joined" : "");
			break;
		}
		g->socks[r] = fd;
		joined++;
	}
	if (!rc) {
		for (int i = 1; i < g->size && !rc; i++) {
			rc = send_welcome(g->socks[i], 0, deadline);
			if (rc)
				rc = eht_err(rc, "group '%s': welcoming rank %d: %s", g->key, i, rc_text(rc));
		}
	}
	if (rc) {
		/* Tell the ranks that did join, then drop them. */
		for (int i = 1; i < g->size; i++)
			if (g->socks[i] >= 0) {
				send_welcome(g->socks[i], rc, eht_now_ms() + 100);
				close(g->socks[i]);
				g->socks[i] = -1;
			}
		return rc;
	}
	g->connected = true;
	return 0;
}

int eht_group_sock_join(eht_group *g, const char *key)
{
	struct sockaddr_un a;
	socklen_t alen = make_addr(g, &a, key);
	int64_t deadline = deadline_of(g);
	int fd = -1, rc;
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return eht_err_sys(errno, "group '%s': socket", key);
		if (connect(fd, (struct sockaddr *)&a, alen) == 0)
			break;
		int e = errno;
		close(fd);
		/* Not listening yet (ECONNREFUSED) or backlog full (EAGAIN): rank 0 may still come. */
		if (e != ECONNREFUSED && e != EAGAIN && e != ENOENT && e != EINTR)
			return eht_err_sys(e, "group '%s' rank %d: connect", key, g->rank);
		if (eht_now_ms() >= deadline)
			return eht_err(ETIMEDOUT, "group '%s' rank %d: rank 0 did not appear within %u ms", key,
				       g->rank, g->timeout_ms);
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	pid_t pid = 0;
	rc = check_peer(g, fd, &pid);
	if (rc) {
		close(fd);
		return eht_err(rc, "group '%s' rank %d: rank 0 (pid %d) belongs to another user", key, g->rank,
			       (int)pid);
	}
	struct msg_hdr h = {.magic = MSG_MAGIC, .op = OP_HELLO, .len = (uint64_t)g->size, .rank = (uint32_t)g->rank};
	rc = eht_sock_send_all(fd, &h, sizeof(h), NULL, 0, deadline);
	if (!rc)
		rc = eht_sock_recv_all(fd, &h, sizeof(h), NULL, 0, NULL, deadline);
	if (rc) {
		close(fd);
		return eht_err(rc, "group '%s' rank %d: joining: %s", key, g->rank,
			       rc == -ETIMEDOUT ? "the group was not complete in time" : rc_text(rc));
	}
	if (h.magic != MSG_MAGIC || h.op != OP_WELCOME || h.status != 0) {
		close(fd);
		int st = (h.magic == MSG_MAGIC && h.op == OP_WELCOME && h.status < 0) ? h.status : -EPROTO;
		return eht_err(st, "group '%s' rank %d: rank 0 refused us: %s", key, g->rank,
			       st == -EACCES ? "peer credentials not allowed" : rc_text(st));
	}
	g->socks[0] = fd;
	g->connected = true;
	return 0;
}

int eht_group_sock_connect(eht_group *g, const char *key)
{
	if (g->rank != 0)
		return eht_group_sock_join(g, key);
	int lfd = -1;
	int rc = eht_group_sock_listen(g, key, &lfd);
	if (rc)
		return rc;
	rc = eht_group_sock_accept(g, lfd);
	close(lfd); /* frees the name: a later group may reuse the key */
	return rc;
}

void eht_group_sock_close(eht_group *g)
{
	int n = g->rank == 0 ? g->size : 1;
	for (int i = 0; g->socks && i < n; i++)
		if (g->socks[i] >= 0) {
			close(g->socks[i]);
			g->socks[i] = -1;
		}
	g->connected = false;
}

/* ---- collectives ---- */

static int recv_hdr(eht_group *g, int fd, uint32_t op, uint64_t len, struct msg_hdr *h, int *fds,
		    size_t maxfds, size_t *nfds, int64_t deadline)
{
	int rc = eht_sock_recv_all(fd, h, sizeof(*h), fds, maxfds, nfds, deadline);
	if (rc)
		return rc;
	if (h->magic != MSG_MAGIC || h->op != op || h->seq != g->seq || h->len != len) {
		if (fds && nfds)
			eht_sock_close_fds(fds, *nfds);
		return -EPROTO;
	}
	return 0;
}

int eht_group_sock_broadcast(eht_group *g, void *buf, size_t len)
{
	int rc = check_broken(g);
	if (rc)
		return rc;
	int64_t deadline = deadline_of(g);
	g->seq++;
	struct msg_hdr h = {.magic = MSG_MAGIC, .op = OP_BCAST, .seq = g->seq, .len = len};
	if (g->rank == 0) {
		for (int i = 1; i < g->size; i++) {
			rc = eht_sock_send_all(g->socks[i], &h, sizeof(h), NULL, 0, deadline);
			if (!rc && len)
				rc = eht_sock_send_all(g->socks[i], buf, len, NULL, 0, deadline);
			if (rc)
				return fail(g, rc, i, "broadcast");
		}
		return 0;
	}
	rc = recv_hdr(g, g->socks[0], OP_BCAST, len, &h, NULL, 0, NULL, deadline);
	if (!rc && len)
		rc = eht_sock_recv_all(g->socks[0], buf, len, NULL, 0, NULL, deadline);
	return rc ? fail(g, rc, 0, "broadcast") : 0;
}

int eht_group_sock_allgather(eht_group *g, const void *in, size_t len, void *out)
{
	int rc = check_broken(g);
	if (rc)
		return rc;
	int64_t deadline = deadline_of(g);
	g->seq++;
	size_t total = len * (size_t)g->size;
	struct msg_hdr h = {.magic = MSG_MAGIC, .op = OP_GATHER, .seq = g->seq, .len = len};
	if (g->rank == 0) {
		if (len)
			memcpy(out, in, len);
		for (int i = 1; i < g->size; i++) {
			struct msg_hdr r;
			rc = recv_hdr(g, g->socks[i], OP_GATHER, len, &r, NULL, 0, NULL, deadline);
			if (!rc && len)
				rc = eht_sock_recv_all(g->socks[i], (char *)out + (size_t)i * len, len, NULL, 0, NULL, deadline);
			if (rc)
				return fail(g, rc, i, "all-gather");
		}
		h.op = OP_GATHERED;
		h.len = total;
		for (int i = 1; i < g->size; i++) {
			rc = eht_sock_send_all(g->socks[i], &h, sizeof(h), NULL, 0, deadline);
			if (!rc && total)
				rc = eht_sock_send_all(g->socks[i], out, total, NULL, 0, deadline);
			if (rc)
				return fail(g, rc, i, "all-gather");
		}
		return 0;
	}
	rc = eht_sock_send_all(g->socks[0], &h, sizeof(h), NULL, 0, deadline);
	if (!rc && len)
		rc = eht_sock_send_all(g->socks[0], in, len, NULL, 0, deadline);
	if (!rc)
		rc = recv_hdr(g, g->socks[0], OP_GATHERED, total, &h, NULL, 0, NULL, deadline);
	if (!rc && total)
		rc = eht_sock_recv_all(g->socks[0], out, total, NULL, 0, NULL, deadline);
	return rc ? fail(g, rc, 0, "all-gather") : 0;
}

int eht_group_sock_fds(eht_group *g, int *fds, size_t n)
{
	int rc = check_broken(g);
	if (rc)
		return rc;
	int64_t deadline = deadline_of(g);
	g->seq++;
	if (g->rank == 0) {
		for (int i = 1; i < g->size; i++) {
			for (size_t done = 0; done < n || (n == 0 && done == 0);) {
				size_t k = n - done < EHT_SOCK_FDS_PER_MSG ? n - done : EHT_SOCK_FDS_PER_MSG;
				struct msg_hdr h = {.magic = MSG_MAGIC, .op = OP_FDS, .seq = g->seq, .len = n,
						    .nfds = (uint32_t)k};
				rc = eht_sock_send_all(g->socks[i], &h, sizeof(h), fds + done, k, deadline);
				if (rc)
					return fail(g, rc, i, "passing descriptors");
				done += k;
				if (n == 0)
					break;
			}
		}
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	size_t done = 0;
	do {
		struct msg_hdr h;
		size_t got = 0;
		size_t want = n - done < EHT_SOCK_FDS_PER_MSG ? n - done : EHT_SOCK_FDS_PER_MSG;
		rc = recv_hdr(g, g->socks[0], OP_FDS, n, &h, fds + done, want, &got, deadline);
		if (!rc && (h.nfds != want || got != want)) {
			eht_sock_close_fds(fds + done, got);
			rc = -EPROTO;
		}
		if (rc) {
			eht_sock_close_fds(fds, done);
			return fail(g, rc, 0, "passing descriptors");
		}
		done += got;
	} while (done < n);
	return 0;
}
