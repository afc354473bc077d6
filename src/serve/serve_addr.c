/* SPDX-License-Identifier: Apache-2.0 */
/* serve_addr.c: the socket name a key is served under. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "serve/serve_proto.h"
#include "util/err.h"

int serve_addr(const char *key, struct sockaddr_un *a, socklen_t *len)
{
	size_t n = key ? strlen(key) : 0;
	if (n == 0 || n > SERVE_KEY_MAX || strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != n)
		return eht_err(EINVAL, "serve key '%s': use 1..%d of [A-Za-z0-9._-]", key ? key : "", SERVE_KEY_MAX);
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* Abstract namespace: nothing in the file system to leak; the name dies with the server. */
	int m = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "eht.serve.%u.%s", (unsigned)geteuid(), key);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)m);
	return 0;
}
