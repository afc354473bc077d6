/* SPDX-License-Identifier: Apache-2.0 */
/* serve_addr.c: the socket name a key is served under, and a connect to it bounded by a deadline. */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "os/sock_io.h"
#include "serve/serve_proto.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/name.h"

int serve_addr_of(const char *key, unsigned uid, struct sockaddr_un *a, socklen_t *len)
{
	int rc = eht_name_check("serve key", key, SERVE_KEY_MAX, false);
	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* Abstract namespace: nothing in the file system to leak; the name dies with the server. */
	int m = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "eht.serve.%u.%s", uid, key);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)m);
	return 0;
}

int serve_addr(const char *key, struct sockaddr_un *a, socklen_t *len)
{
	return serve_addr_of(key, (unsigned)geteuid(), a, len);
}

int serve_connect(const struct sockaddr_un *addr, socklen_t len, int64_t deadline, int *fd_out)
{
	*fd_out = -1;
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		int rc = connect(fd, (const struct sockaddr *)addr, len) == 0 ? 0 : -errno;
		if (rc == -EINPROGRESS) { /* not for AF_UNIX today; handled all the same */
			rc = eht_sock_wait(fd, POLLOUT, deadline);
			int e = 0;
			socklen_t el = sizeof(e);
			if (!rc && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
				e = errno;
			rc = rc ? rc : -e;
		}
		if (!rc) {
			*fd_out = fd;
			return 0;
		}
		close(fd);
		if (rc == -ENOENT || rc == -ECONNREFUSED)
			return -ECONNREFUSED;
		/* A full backlog (a loading server, or someone filling it): a blocking connect would
		 * wait for room past any deadline; retry until ours instead. */
		if (rc != -EAGAIN && rc != -EINTR)
			return rc;
		int64_t left = deadline - eht_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct timespec ts = {0, (left < 10 ? left : 10) * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}
