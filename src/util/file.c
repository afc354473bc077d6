/* SPDX-License-Identifier: Apache-2.0 */
/* file.c: reading files by the checkpoint rule (regular files only, never blocking on a FIFO) and
 * writing files atomically through a temporary of mkstemp. */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"

static const char *kind_of(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
	       : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a directory" : "not a regular file";
}

int eht_file_open_read(const char *path, const char *what, struct stat *st_out)
{
	if (!path || !*path)
		return eht_err(EINVAL, "%s: no file name", what);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return eht_err_sys(errno, "%s %s: open", what, path);
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) != 0)
		rc = eht_err_sys(errno, "%s %s: fstat", what, path);
	else if (!S_ISREG(st.st_mode))
		rc = eht_err(EINVAL, "%s %s is %s, not a regular file", what, path, kind_of(st.st_mode));
	else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
		rc = eht_err_sys(errno, "%s %s: fcntl", what, path);
	if (rc) {
		close(fd);
		return rc;
	}
	if (st_out)
		*st_out = st;
	return fd;
}

int eht_file_read_all(const char *path, const char *what, size_t max, char **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	struct stat st;
	int fd = eht_file_open_read(path, what, &st);
	if (fd < 0)
		return fd;
	int rc = 0;
	char *b = NULL;
	if ((uint64_t)st.st_size > max) {
		rc = eht_err(EFBIG, "%s %s: %lld bytes, more than the %zu allowed", what, path, (long long)st.st_size, max);
		goto out;
	}
	if (!(b = malloc((size_t)st.st_size + 1))) {
		rc = eht_err(ENOMEM, "%s %s: out of memory", what, path);
		goto out;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = eht_err_sys(errno, "%s %s: read", what, path);
			goto out;
		}
		if (r == 0)
			break; /* shrank while reading: what is there */
		got += (size_t)r;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
	b = NULL;
out:
	free(b);
	close(fd);
	return rc;
}

int eht_file_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char tmp[4096];
	if (!path || !*path)
		return eht_err(EINVAL, "write: no file name");
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return eht_err(ENAMETOOLONG, "%s: name too long", path);
	/* mkstemp: O_CREAT | O_EXCL with a random name, so no planted name can be followed or reused. */
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return eht_err_sys(errno, "%s: creating a temporary beside it", path);
	int rc = 0;
	if (fchmod(fd, mode) != 0) {
		rc = eht_err_sys(errno, "%s: chmod %o", tmp, (unsigned)mode);
		goto fail;
	}
	for (size_t at = 0; at < len;) {
		ssize_t w = write(fd, (const char *)data + at, len - at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = eht_err_sys(w < 0 ? errno : EIO, "%s: write", tmp);
			goto fail;
		}
		at += (size_t)w;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = eht_err_sys(errno, "%s: close", tmp);
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = eht_err_sys(errno, "%s: renaming %s over it", path, tmp);
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}
