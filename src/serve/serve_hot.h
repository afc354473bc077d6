/* SPDX-License-Identifier: Apache-2.0 */
/* serve_hot.h: served hot sets (serve_hot.c): read and checked once by the server, sent to every
 * worker as a sealed memfd, checked again by the worker (private to src/serve). */
#ifndef EHT_SERVE_SERVE_HOT_H
#define EHT_SERVE_SERVE_HOT_H

#include <stddef.h>
#include <stdint.h>

#include "serve/serve_impl.h"

/* The seals a hot-set memfd carries; a worker refuses one without them. */
#define SERVE_HOT_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

/* Reads specs[0..nspecs) ("FILE" or "NAME=FILE", see eht_serve_start) into tables[0..ntables): each
 * file read and checked once, then written to a sealed memfd (hot, nhot, hot_fd, hot_file). Every
 * table's hot is NULL first. On failure what was read is freed. Returns 0, -EINVAL, -ENOENT (a NAME
 * not served), -ENOMEM, or the errors of reading the file or making the memfd. */
int serve_hot_load(struct served *tables, size_t ntables, const char *const *specs, size_t nspecs,
		   const char *key);
/* Frees every table's hot set and closes its memfd. */
void serve_hot_free(struct served *tables, size_t ntables);

/* Worker side: reads the hot set of table_rows-row table `table` from descriptor fd, announced as
 * n rows: fd must be a regular file of exactly 16 + 8 n bytes carrying SERVE_HOT_SEALS, in the hot-set
 * format, its rows passing serve_hot_check. *rows malloc'ed. Returns 0, -EPROTO (names what is
 * wrong), -ENOMEM or -errno of reading it. */
int serve_hot_receive(int fd, uint64_t n, uint64_t table_rows, const char *key, const char *table, int64_t **rows);

#endif
