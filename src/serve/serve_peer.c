/* SPDX-License-Identifier: Apache-2.0 */
/* serve_peer.c: who holds the other end of a serve socket, and whether a worker may trust it. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve/serve_proto.h"
#include "util/err.h"

int serve_peer(int fd, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) != 0)
		return -errno;
	return 0;
}

/* The group EHT_SERVE_ALLOW_GID names, or -1 (unset or not a number). */
static long allowed_gid(void)
{
	const char *s = getenv("EHT_SERVE_ALLOW_GID");
	char *end;
	if (!s || !*s)
		return -1;
	errno = 0;
	long g = strtol(s, &end, 10);
	return errno || *end || g < 0 ? -1 : g;
}

int serve_peer_trusted(int fd, const char *key)
{
	struct ucred c;
	int rc = serve_peer(fd, &c);
	if (rc)
		return eht_err(-rc, "attach %s: cannot learn who serves the key (SO_PEERCRED)", key);
	long g = allowed_gid();
	if (c.uid == geteuid() || c.uid == 0 || (g >= 0 && c.gid == (gid_t)g))
		return 0;
	/* Another user bound the name first: attaching would read (and trust) their tables. */
	return eht_err(EPERM,
		       "attach %s: the socket is held by uid %u (pid %d, gid %u), not by this user (uid %u) or root; "
		       "refusing its tables (EHT_SERVE_ALLOW_GID=GID trusts a server of that group)",
		       key, (unsigned)c.uid, (int)c.pid, (unsigned)c.gid, (unsigned)geteuid());
}
