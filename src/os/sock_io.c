/* SPDX-License-Identifier: Apache-2.0 */
/* sock_io.c: whole-message send and receive on Unix stream sockets, with descriptors and deadlines. */
#include "os/sock_io.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

/* Waits for events on fd until the deadline. Returns 0, -ETIMEDOUT or -errno. */
int eht_sock_wait(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - eht_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
		if (r > 0)
			return 0; /* ready, or HUP/ERR: the next send/recv reports which */
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int conn_errno(int e)
{
	/* A peer that died shows as reset, broken pipe or EOF: one code for all of them. */
	return (e == EPIPE || e == ECONNRESET || e == ECONNABORTED || e == ENOTCONN) ? -ECONNRESET : -e;
}

/* Sends all of buf; fds (if any) ride on the first byte. MSG_NOSIGNAL: a dead peer is EPIPE, never
 * SIGPIPE. */
int eht_sock_send_all(int fd, const void *buf, size_t len, const int *fds, size_t nfds, int64_t deadline)
{
	const char *p = buf;
	union {
		char buf[CMSG_SPACE(sizeof(int) * EHT_SOCK_FDS_PER_MSG)];
		struct cmsghdr align;
	} ctl;
	while (len > 0) {
		struct iovec iov = {.iov_base = (void *)p, .iov_len = len};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
		if (nfds) {
			memset(&ctl, 0, sizeof(ctl));
			m.msg_control = ctl.buf;
			m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			nfds = 0; /* the descriptors went with the first bytes */
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = eht_sock_wait(fd, POLLOUT, deadline);
			if (rc)
				return rc;
			continue;
		}
		/* Descriptors sent and not yet received count against the sending user's open-file limit
		 * (RLIMIT_NOFILE; root is exempt): a broadcast to several peers, or several workers
		 * attaching at once, passes it while the peers have not read yet. Nothing was sent: wait
		 * for them to read and try again, until the deadline (then the caller names the limit). */
		if (n < 0 && errno == ETOOMANYREFS && nfds) {
			if (eht_now_ms() >= deadline)
				return -ETOOMANYREFS;
			struct timespec ts = {0, 1000 * 1000};
			nanosleep(&ts, NULL);
			continue;
		}
		return conn_errno(n < 0 ? errno : EPIPE);
	}
	return 0;
}

void eht_sock_close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/* Receives exactly len bytes. Descriptors arriving with them are stored in fds (up to maxfds;
 * *nfds counts them); with fds NULL any arriving descriptor is closed and the call fails. */
int eht_sock_recv_all(int fd, void *buf, size_t len, int *fds, size_t maxfds, size_t *nfds, int64_t deadline)
{
	char *p = buf;
	union {
		char buf[CMSG_SPACE(sizeof(int) * EHT_SOCK_FDS_PER_MSG)];
		struct cmsghdr align;
	} ctl;
	size_t got_fds = 0;
	int rc = 0;
	while (len > 0) {
		struct iovec iov = {.iov_base = p, .iov_len = len};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				   .msg_controllen = sizeof(ctl.buf)};
		ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			rc = eht_sock_wait(fd, POLLIN, deadline);
			if (rc)
				break;
			continue;
		}
		if (n <= 0) {
			rc = n == 0 ? -ECONNRESET : conn_errno(errno);
			break;
		}
		size_t arrived = 0;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			arrived += k;
			int tmp[EHT_SOCK_FDS_PER_MSG];
			memcpy(tmp, CMSG_DATA(c), k * sizeof(int));
			for (size_t i = 0; i < k; i++) {
				if (fds && got_fds < maxfds)
					fds[got_fds++] = tmp[i];
				else {
					close(tmp[i]);
					rc = -EPROTO;
				}
			}
		}
		/* Cut short with room left in the buffer: the kernel could not give this process more
		 * descriptors (its open-file limit); with the buffer full, the peer sent too many. */
		if (m.msg_flags & MSG_CTRUNC)
			rc = arrived < EHT_SOCK_FDS_PER_MSG ? -EMFILE : -EPROTO;
		p += n;
		len -= (size_t)n;
	}
	if (rc && fds)
		eht_sock_close_fds(fds, got_fds);
	if (nfds)
		*nfds = rc ? 0 : got_fds;
	return rc;
}

