/* SPDX-License-Identifier: Apache-2.0 */
/* serve_addr.c: the socket name a key is served under. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "serve/serve_proto.h"
#include "util/err.h"
#include "util/name.h"

int serve_addr(const char *key, struct sockaddr_un *a, socklen_t *len)
{
	int rc = eht_name_check("serve key", key, SERVE_KEY_MAX, false);
	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* Abstract namespace: nothing in the file system to leak; the name dies with the server. */
	int m = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "eht.serve.%u.%s", (unsigned)geteuid(), key);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)m);
	return 0;
}
