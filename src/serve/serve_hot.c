/* SPDX-License-Identifier: Apache-2.0 */
/* serve_hot.c: served hot sets: the server reads each hot-set file once, checks it against its
 * table and keeps it in a sealed memfd; every worker receives a duplicate of that descriptor and
 * checks it again before trusting a row of it. */
#include "serve/serve_hot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "table/hotset.h"
#include "util/err.h"

/* ------------------------------------------------------------------- checks (both sides) */
/* Checks rows[0..n): each inside [0, table_rows), none twice. what names them in the message ("hot
 * set FILE for table NAME"). Returns 0, -EINVAL (names the entry, the row and the range, or both
 * entries of a repeated row) or -ENOMEM. */
static int serve_hot_check(const int64_t *rows, uint64_t n, uint64_t table_rows, const char *what)
{
	return eht_hotset_check(rows, n, 0, (int64_t)table_rows, what);
}

/* ------------------------------------------------------------------- server */
/* The rows in the hot-set format in a memfd that nobody can change any more: the server's own
 * descriptor is as read-only as the workers' once sealed. */
static int make_memfd(const struct served *t, int *out)
{
	*out = -1;
	char name[64];
	snprintf(name, sizeof(name), "eht.hotset.%.40s", t->name);
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return eht_err_sys(errno, "hot set %s for table %s: memfd_create", t->hot_file, t->name);
	size_t len = (size_t)eht_hotset_bytes(t->nhot);
	unsigned char *buf = malloc(len);
	int rc = 0;
	if (!buf) {
		rc = eht_err(ENOMEM, "hot set %s: out of memory", t->hot_file);
		goto out;
	}
	eht_hotset_encode(t->hot, t->nhot, buf);
	for (size_t at = 0; at < len;) {
		ssize_t w = write(fd, buf + at, len - at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = eht_err_sys(w < 0 ? errno : EIO, "hot set %s for table %s: writing its memfd", t->hot_file,
					 t->name);
			goto out;
		}
		at += (size_t)w;
	}
	if (fcntl(fd, F_ADD_SEALS, SERVE_HOT_SEALS) != 0)
		rc = eht_err_sys(errno, "hot set %s for table %s: sealing its memfd", t->hot_file, t->name);
out:
	free(buf);
	if (rc)
		close(fd);
	else
		*out = fd;
	return rc;
}

/* "served: a, b, c" for messages. */
static void served_names(const struct served *tables, size_t n, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && at + 1 < len; i++) {
		int k = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", tables[i].name);
		if (k < 0)
			break;
		at += (size_t)k;
	}
	if (at >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

static int load_one(struct served *tables, size_t ntables, const char *spec, size_t index, const char *key)
{
	if (!spec || !*spec)
		return eht_err(EINVAL, "serve %s: hot set %zu is %s", key, index, spec ? "empty" : "NULL");
	/* NAME=FILE when the '=' comes before any '/': table names hold no '/', paths may hold '='. */
	const char *eq = strchr(spec, '='), *slash = strchr(spec, '/');
	const char *file = spec;
	size_t nlen = 0;
	if (eq && (!slash || slash > eq)) {
		file = eq + 1;
		nlen = (size_t)(eq - spec);
		if (!nlen || !*file)
			return eht_err(EINVAL, "serve %s: hot set '%s': want NAME=FILE or FILE", key, spec);
	}
	char names[1024];
	served_names(tables, ntables, names, sizeof(names));
	struct served *t = NULL;
	for (size_t i = 0; nlen && i < ntables; i++)
		if (strlen(tables[i].name) == nlen && !strncmp(tables[i].name, spec, nlen))
			t = &tables[i];
	if (nlen && !t)
		return eht_err(ENOENT, "serve %s: hot set '%s': no served table is named '%.*s' (served: %s)", key, spec,
			       (int)nlen, spec, names);
	if (!nlen && ntables != 1)
		return eht_err(EINVAL,
			       "serve %s: hot set %s: %zu tables are served (%s); say which one it is for: --hotset NAME=%s",
			       key, file, ntables, names, file);
	if (!t)
		t = &tables[0];
	if (t->hot)
		return eht_err(EINVAL, "serve %s: table %s has two hot sets: %s and %s", key, t->name, t->hot_file, file);
	/* Sized from its header against the table first: a hot set holds distinct rows of it. */
	int rc = eht_hotset_read_max(file, t->rows, &t->hot, &t->nhot);
	if (rc)
		return eht_err_prefix(rc, "serve %s: table %s", key, t->name);
	snprintf(t->hot_file, sizeof(t->hot_file), "%s", file);
	char what[1024];
	snprintf(what, sizeof(what), "serve %s: hot set %s for table %s", key, file, t->name);
	rc = serve_hot_check(t->hot, t->nhot, t->rows, what);
	if (!rc)
		rc = make_memfd(t, &t->hot_fd);
	if (rc) {
		free(t->hot);
		t->hot = NULL;
		t->nhot = 0;
	}
	return rc;
}

int serve_hot_load(struct served *tables, size_t ntables, const char *const *specs, size_t nspecs, const char *key)
{
	for (size_t i = 0; i < ntables; i++) {
		tables[i].hot = NULL;
		tables[i].nhot = 0;
		tables[i].hot_fd = -1;
		tables[i].hot_file[0] = '\0';
	}
	if (nspecs && !specs)
		return eht_err(EINVAL, "eht_serve_start: %zu hot sets but hotsets is NULL", nspecs);
	int rc = 0;
	for (size_t i = 0; !rc && i < nspecs; i++)
		rc = load_one(tables, ntables, specs[i], i, key);
	if (rc)
		serve_hot_free(tables, ntables);
	return rc;
}

void serve_hot_free(struct served *tables, size_t ntables)
{
	for (size_t i = 0; tables && i < ntables; i++) {
		if (tables[i].hot && tables[i].hot_fd >= 0)
			close(tables[i].hot_fd);
		free(tables[i].hot);
		tables[i].hot = NULL;
		tables[i].nhot = 0;
		tables[i].hot_fd = -1;
	}
}

/* ------------------------------------------------------------------- worker */
int serve_hot_receive(int fd, uint64_t n, uint64_t table_rows, const char *key, const char *table, int64_t **rows)
{
	*rows = NULL;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return eht_err_sys(errno, "attach %s: table %s: the hot set's descriptor", key, table);
	/* n distinct rows of a table_rows-row table: more is a lie, whatever the descriptor holds. */
	if (n == 0 || n > table_rows || n > (UINT64_MAX - EHT_HOTSET_HDR) / 8)
		return eht_err(EPROTO, "attach %s: table %s: a hot set of %llu rows for a table of %llu rows", key, table,
			       (unsigned long long)n, (unsigned long long)table_rows);
	uint64_t want = eht_hotset_bytes(n);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != want)
		return eht_err(EPROTO, "attach %s: table %s: the hot set's descriptor is %s of %lld bytes, want %llu "
				       "(16 + 8 x %llu rows)",
			       key, table, S_ISREG(st.st_mode) ? "a file" : "not a regular file", (long long)st.st_size,
			       (unsigned long long)want, (unsigned long long)n);
	/* Sealed: the server (or anyone holding it) can no longer change what was checked. */
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & SERVE_HOT_SEALS) != SERVE_HOT_SEALS)
		return eht_err(EPROTO, "attach %s: table %s: the hot set's descriptor is not a sealed memfd (seals 0x%x)",
			       key, table, seals < 0 ? 0 : (unsigned)seals);
	unsigned char *buf = malloc((size_t)want);
	int64_t *r = malloc((size_t)n * sizeof(*r));
	int rc = 0;
	if (!buf || !r) {
		rc = eht_err(ENOMEM, "attach %s: table %s: out of memory for a hot set of %llu rows", key, table,
			     (unsigned long long)n);
		goto out;
	}
	for (uint64_t at = 0; at < want;) {
		ssize_t k = pread(fd, buf + at, (size_t)(want - at), (off_t)at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			rc = k < 0 ? eht_err_sys(errno, "attach %s: table %s: reading the hot set", key, table)
				   : eht_err(EPROTO, "attach %s: table %s: the hot set ends at byte %llu of %llu", key, table,
					     (unsigned long long)at, (unsigned long long)want);
			goto out;
		}
		at += (uint64_t)k;
	}
	int drc = eht_hotset_decode(buf, n, r);
	if (drc) {
		rc = eht_err(EPROTO, "attach %s: table %s: the hot set's descriptor %s", key, table,
			     drc == -EBADMSG ? "is not in the hot-set format" : "holds another row count");
		goto out;
	}
	char what[512];
	snprintf(what, sizeof(what), "attach %s: the served hot set of table %s", key, table);
	rc = serve_hot_check(r, n, table_rows, what);
	if (rc == -EINVAL)
		rc = -EPROTO; /* the server checked them: rows that fail here were not what it sent */
out:
	free(buf);
	if (rc)
		free(r);
	else
		*rows = r;
	return rc;
}
