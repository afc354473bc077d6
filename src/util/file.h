/* SPDX-License-Identifier: Apache-2.0 */
/* file.h: the one rule for files eht reads (checkpoints, hot sets, configs, steps, workloads), and
 * the one way it writes a file others may read (the ready file). */
#ifndef EHT_UTIL_FILE_H
#define EHT_UTIL_FILE_H

#include <stddef.h>
#include <sys/stat.h>

/* Opens path for reading: O_NONBLOCK (a FIFO or device put in a file's place never blocks the open,
 * and no signal is then needed to get out), O_NOCTTY, O_CLOEXEC, then fstat on the descriptor: a
 * regular file only (whatever a symlink on the way pointed at, it is what was opened that counts:
 * checkpoints live behind symlinks in model caches), O_NONBLOCK cleared again. what names the file
 * in the message ("hot set", "steps"). Returns the descriptor (st filled when not NULL) or -errno
 * with a message naming what and path ("... is a FIFO, not a regular file"). */
int eht_file_open_read(const char *path, const char *what, struct stat *st);
/* The whole file, opened as above, at most max bytes (-EFBIG beyond): *buf malloc'ed and
 * NUL-terminated, *len bytes. Returns 0 or -errno with a message. */
int eht_file_read_all(const char *path, const char *what, size_t max, char **buf, size_t *len);
/* Replaces path with len bytes of data, atomically for readers: a fresh temporary made with mkstemp
 * (O_EXCL, a random name: a symlink or file planted under any name cannot be followed or reused) in
 * path's own folder, mode applied with fchmod, then rename over path (which replaces a link at path
 * itself, never what it points to). Returns 0 or -errno with a message. */
int eht_file_write_atomic(const char *path, const void *data, size_t len, mode_t mode);

#endif
