/* SPDX-License-Identifier: Apache-2.0 */
/* hotset.c: a table's hot set: its file format (eht hotset build, eht serve --hotset, the memfd a
 * served table's hot set travels in), the checks every holder applies (range, no repeats), and the
 * open-addressing index of local rows the lookup engine's GPU cache and its refresh use. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eht.h"
#include "table/hotset.h"
#include "table/table_impl.h"
#include "util/err.h"
#include "util/file.h"

/* ------------------------------------------------------------------- index (host) */
int eht_hot_index_build(const uint64_t *loc, size_t n, struct eht_hot_index *ix)
{
	memset(ix, 0, sizeof(*ix));
	if (n >= (1ull << 31))
		return eht_err(EINVAL, "hot set: %zu rows (at most 2^31 - 1)", n);
	uint32_t bits = 1;
	while ((1ull << bits) < 2 * (uint64_t)n)
		bits++;
	ix->bits = bits;
	ix->cap = 1ull << bits;
	ix->keys = malloc(ix->cap * sizeof(*ix->keys));
	ix->vals = malloc(ix->cap * sizeof(*ix->vals));
	if (!ix->keys || !ix->vals) {
		eht_hot_index_free(ix);
		return eht_err(ENOMEM, "hot set: out of memory for an index of %zu rows", n);
	}
	memset(ix->keys, 0xff, ix->cap * sizeof(*ix->keys));
	memset(ix->vals, 0xff, ix->cap * sizeof(*ix->vals));
	for (size_t i = 0; i < n; i++) {
		uint32_t old;
		if (eht_hot_insert(ix->keys, ix->vals, bits, loc[i], (uint32_t)i, &old)) {
			int rc = eht_err(EINVAL, "hot set: local row %llu appears twice (entries %u and %zu)",
					 (unsigned long long)loc[i], old, i);
			eht_hot_index_free(ix);
			return rc;
		}
	}
	return 0;
}

void eht_hot_index_free(struct eht_hot_index *ix)
{
	free(ix->keys);
	free(ix->vals);
	memset(ix, 0, sizeof(*ix));
}

int eht_hot_rows_local(const int64_t *rows, size_t n, int64_t lo, int64_t hi, uint64_t *loc)
{
	for (size_t i = 0; i < n; i++) {
		if (rows[i] < lo || rows[i] >= hi)
			return eht_err(EINVAL, "hot set: row %lld (entry %zu) is dead here: outside the rows [%lld, %lld)",
				       (long long)rows[i], i, (long long)lo, (long long)hi);
		loc[i] = (uint64_t)(rows[i] - lo);
	}
	return 0;
}

/* ------------------------------------------------------------------- hot-set file */
static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The count a hot-set file's header gives, checked against max_rows before a byte of its rows is
 * read or anything is allocated for them: a file (sparse, or a lie) cannot size the reader's memory. */
static int count_check(const char *path, uint64_t count, uint64_t max_rows)
{
	if (count <= max_rows)
		return 0;
	if (max_rows == EHT_HOTSET_MAX_ROWS)
		return eht_err(EINVAL, "hot set %s: %llu entries, over the limit of %llu rows a hot set holds", path,
			       (unsigned long long)count, (unsigned long long)max_rows);
	return eht_err(EINVAL, "hot set %s: %llu entries for a table of %llu rows (the limit: a hot set holds "
			       "distinct rows of its table); refused before reading them",
		       path, (unsigned long long)count, (unsigned long long)max_rows);
}

/* The first format, "EHTHOT1\n", uint64 count, count int64 rows (little-endian): still read. */
static int read_ehthot1(const char *path, FILE *f, uint64_t max_rows, int64_t **rows, uint64_t *n)
{
	int rc = 0;
	int64_t *r = NULL;
	uint8_t hdr[16], b[8];
	if (fseek(f, 0, SEEK_END) || ftell(f) < 0) {
		rc = eht_err_sys(errno ? errno : EIO, "hot set %s: seek", path);
		goto out;
	}
	uint64_t len = (uint64_t)ftell(f);
	rewind(f);
	if (len < 16 || fread(hdr, 1, 16, f) != 16 || memcmp(hdr, EHT_HOTSET_MAGIC, 8)) {
		rc = eht_err(EINVAL, "hot set %s: not a hot-set file (no %.7s header)", path, EHT_HOTSET_MAGIC);
		goto out;
	}
	uint64_t cnt = get_le64(hdr + 8);
	if ((rc = count_check(path, cnt, max_rows)))
		goto out;
	if (cnt == 0 || cnt > (len - 16) / 8 || len != 16 + cnt * 8) {
		rc = eht_err(EINVAL, "hot set %s: header says %llu rows, the file has %llu bytes (want 16 + 8 x rows)",
			     path, (unsigned long long)cnt, (unsigned long long)len);
		goto out;
	}
	if (!(r = malloc(cnt * sizeof(*r)))) {
		rc = eht_err(ENOMEM, "hot set %s: out of memory for %llu rows", path, (unsigned long long)cnt);
		goto out;
	}
	for (uint64_t i = 0; i < cnt; i++) {
		if (fread(b, 1, 8, f) != 8) {
			rc = eht_err(EIO, "hot set %s: short read at row %llu", path, (unsigned long long)i);
			goto out;
		}
		r[i] = (int64_t)get_le64(b);
		if (r[i] < 0) {
			rc = eht_err(EINVAL, "hot set %s: entry %llu is the negative row %lld", path,
				     (unsigned long long)i, (long long)r[i]);
			goto out;
		}
	}
	*rows = r;
	*n = cnt;
	r = NULL;
out:
	free(r);
	return rc;
}

/* A safetensors file whose one tensor is I64 [count] (eht_hotset_write's). */
static int read_safetensors(const char *path, uint64_t max_rows, int64_t **rows, uint64_t *n)
{
	eht_st_file *f = NULL;
	int rc = eht_st_open(path, 0, &f);
	if (rc) /* the cause (it names the file) after ours, whole: never formatted from itself */
		return eht_err_prefix(-EINVAL, "hot set %s: not a hot-set file", path);
	struct eht_st_tensor_info ti = {.size = sizeof(ti)};
	if (eht_st_count(f) != 1 || eht_st_tensor(f, 0, &ti) || ti.dtype != EHT_DTYPE_I64 || ti.ndim != 1 ||
	    ti.elements == 0) {
		rc = eht_err(EINVAL, "hot set %s: not a hot-set file (want one non-empty I64 tensor of row ids, found %zu "
				     "tensor(s))", path, eht_st_count(f));
		goto out;
	}
	if ((rc = count_check(path, ti.elements, max_rows)))
		goto out;
	int64_t *r = malloc(ti.nbytes);
	if (!r) {
		rc = eht_err(ENOMEM, "hot set %s: out of memory for %llu rows", path, (unsigned long long)ti.elements);
		goto out;
	}
	for (uint64_t k = 0; k < ti.elements; k++) {
		r[k] = (int64_t)get_le64((const uint8_t *)ti.data + 8 * k); /* safetensors is little-endian */
		if (r[k] < 0) {
			rc = eht_err(EINVAL, "hot set %s: entry %llu is the negative row %lld", path, (unsigned long long)k,
				     (long long)r[k]);
			free(r);
			goto out;
		}
	}
	*rows = r;
	*n = ti.elements;
out:
	eht_st_close(f);
	return rc;
}

int eht_hotset_read(const char *path, int64_t **rows, uint64_t *n)
{
	return eht_hotset_read_max(path, EHT_HOTSET_MAX_ROWS, rows, n);
}

int eht_hotset_read_max(const char *path, uint64_t max_rows, int64_t **rows, uint64_t *n)
{
	if (max_rows > EHT_HOTSET_MAX_ROWS)
		max_rows = EHT_HOTSET_MAX_ROWS;
	*rows = NULL;
	*n = 0;
	/* The file rule (util/file.h): a FIFO named as a hot set fails here instead of blocking. */
	int fd = eht_file_open_read(path, "hot set", NULL);
	if (fd < 0)
		return fd;
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		return eht_err_sys(errno, "hot set %s: fdopen", path);
	}
	char magic[8] = {0};
	int legacy = fread(magic, 1, 8, f) == 8 && !memcmp(magic, EHT_HOTSET_MAGIC, 8);
	int rc = legacy ? read_ehthot1(path, f, max_rows, rows, n) : 0;
	fclose(f);
	return legacy ? rc : read_safetensors(path, max_rows, rows, n);
}

int eht_hotset_write(const char *path, const int64_t *rows, uint64_t n)
{
	if (n == 0)
		return eht_err(EINVAL, "hot set %s: no rows", path);
	int64_t *le = malloc(n * sizeof(*le));
	if (!le)
		return eht_err(ENOMEM, "hot set %s: out of memory", path);
	for (uint64_t i = 0; i < n; i++)
		put_le64((uint8_t *)&le[i], (uint64_t)rows[i]);
	const uint64_t shape[1] = {n};
	const struct eht_st_write_tensor t = {"hotset", EHT_DTYPE_I64, 1, shape, le, NULL, NULL};
	const char *meta[] = {"format", "eht-hotset-1", NULL};
	int rc = eht_st_write(path, &t, 1, meta, 0);
	free(le);
	return rc ? eht_err_prefix(rc, "hot set %s", path) : 0;
}


void eht_hotset_free(int64_t *rows) { free(rows); }

/* ------------------------------------------------------------------- checks, memory form */
int eht_hotset_check(const int64_t *rows, uint64_t n, int64_t lo, int64_t hi, const char *what)
{
	/* The lookup engine's own checks: range, then repeats through the index it would build. */
	uint64_t *loc = malloc((n ? n : 1) * sizeof(*loc));
	if (!loc)
		return eht_err(ENOMEM, "%s: out of memory checking %llu rows", what, (unsigned long long)n);
	struct eht_hot_index ix;
	int rc = eht_hot_rows_local(rows, n, lo, hi, loc);
	if (!rc && !(rc = eht_hot_index_build(loc, n, &ix)))
		eht_hot_index_free(&ix);
	free(loc);
	return rc ? eht_err_prefix(rc, "%s", what) : 0;
}

void eht_hotset_encode(const int64_t *rows, uint64_t n, uint8_t *buf)
{
	memcpy(buf, EHT_HOTSET_MAGIC, 8);
	put_le64(buf + 8, n);
	for (uint64_t i = 0; i < n; i++)
		put_le64(buf + EHT_HOTSET_HDR + 8 * i, (uint64_t)rows[i]);
}

int eht_hotset_decode(const uint8_t *buf, uint64_t n, int64_t *rows)
{
	if (memcmp(buf, EHT_HOTSET_MAGIC, 8))
		return -EBADMSG;
	if (get_le64(buf + 8) != n)
		return -ERANGE;
	for (uint64_t i = 0; i < n; i++)
		rows[i] = (int64_t)get_le64(buf + EHT_HOTSET_HDR + 8 * i);
	return 0;
}

/* ------------------------------------------------------------------- the table's */
void eht_table_set_hotset(eht_table *t, int64_t *rows, uint64_t n)
{
	free(t->hot_rows);
	t->hot_rows = rows;
	t->hot_n = rows ? n : 0;
}

int eht_table_hotset(const eht_table *t, const int64_t **rows, uint64_t *n)
{
	if (!t || !rows || !n)
		return eht_err(EINVAL, "eht_table_hotset: NULL %s", !t ? "table" : !rows ? "rows" : "n");
	*rows = NULL;
	*n = 0;
	if (!t->hot_rows)
		return eht_err(ENOENT, "table %s has no hot set (its server was started without one for it: "
				       "eht serve --hotset %s=FILE)", t->name, t->name);
	*rows = t->hot_rows;
	*n = t->hot_n;
	return 0;
}
