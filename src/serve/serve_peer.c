/* SPDX-License-Identifier: Apache-2.0 */
/* serve_peer.c: who holds the other end of a serve socket (attach or status), whom a server serves
 * and whom a worker trusts. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve/serve_proto.h"
#include "util/err.h"
#include "util/settings.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13 */
#endif

int serve_peer(int fd, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) != 0)
		return -errno;
	return 0;
}

long serve_allowed_gid(void)
{
	/* 0..UINT32_MAX - 1: the table's bounds */
	return eht_setting_is_set(EHT_SET_SERVE_ALLOW_GID) ? (long)eht_setting_u64(EHT_SET_SERVE_ALLOW_GID) : -1;
}

/* Whether gid g is among the peer's supplementary groups (SO_PEERGROUPS: what the kernel recorded
 * at connect; a process cannot add itself to a group it is not in). */
static bool peer_in_group(int fd, gid_t g)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool in = false;
	int r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	if (r != 0 && errno == ERANGE && (groups = malloc(len)) != NULL)
		r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	for (size_t i = 0; r == 0 && i < len / sizeof(gid_t); i++)
		in |= groups[i] == g;
	if (groups != small)
		free(groups);
	return in;
}

int serve_client_allowed(int fd, long g, struct ucred *cred)
{
	int rc = serve_peer(fd, cred);
	if (rc)
		return rc;
	if (cred->uid == geteuid() || cred->uid == 0)
		return 0;
	if (g >= 0 && (cred->gid == (gid_t)g || peer_in_group(fd, (gid_t)g)))
		return 0;
	return -EACCES;
}

int serve_peer_trusted(int fd, const char *what, const char *key)
{
	struct ucred c;
	int rc = serve_peer(fd, &c);
	if (rc)
		return eht_err(-rc, "%s %s: cannot learn who holds the key's socket (SO_PEERCRED)", what, key);
	/* Never a group: anyone of it could bind the name first and hand out their own tables. */
	if (c.uid == geteuid() || c.uid == 0)
		return 0;
	return eht_err(EPERM,
		       "%s %s: the socket is held by uid %u (pid %d, gid %u), not by this user (uid %u) or root; "
		       "refusing it",
		       what, key, (unsigned)c.uid, (int)c.pid, (unsigned)c.gid, (unsigned)geteuid());
}
