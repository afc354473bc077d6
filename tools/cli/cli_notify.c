/* SPDX-License-Identifier: Apache-2.0 */
/* cli_notify.c: readiness for service managers: the sd_notify datagram (written by hand: no
 * libsystemd), and a ready file written atomically (util/file.c). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "util/file.h"

int cli_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return 0; /* not run by systemd with Type=notify */
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(a.sun_path)) {
		fprintf(stderr, "eht: NOTIFY_SOCKET '%s' is not a socket path or @abstract name\n", path);
		return -EINVAL;
	}
	memcpy(a.sun_path, path, n);
	if (path[0] == '@')
		a.sun_path[0] = '\0'; /* abstract namespace */
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ssize_t w = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&a,
			   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
	int rc = w < 0 ? -errno : 0;
	close(fd);
	if (rc)
		fprintf(stderr, "eht: cannot notify the service manager at %s: %s\n", path, strerror(-rc));
	return rc;
}

int cli_write_file_atomic(const char *path, const char *text)
{
	/* A ready file often lies in a shared folder: the temporary is mkstemp's (util/file.c), never a
	 * predictable name that a planted symlink could redirect. */
	return eht_file_write_atomic(path, text, strlen(text), 0644);
}
