/* SPDX-License-Identifier: Apache-2.0 */
/* lk_hot.c: the GPU hot-row cache: eht_lookup_set_hotset copies a fixed set of rows into GPU memory
 * with an open-addressing index, and each GPU piece of a run is wrapped: a mark kernel looks every id
 * up (hits become dead ids in a private int64 copy, so the strategy neither reads nor sends them), the
 * strategy runs unchanged on that copy (zero rows where the hits are), then a fill kernel writes the
 * hit rows over those zeros. The dead count stays right: the mark kernel subtracts the hits it turned
 * dead from counters[0] before the strategy adds them back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/lk_hot.h"
#include "lookup/lookup_impl.h"
#include "util/err.h"

struct lk_hot {
	uint64_t n;
	struct eht_hot_index ix;
	CUdeviceptr d_keys, d_vals, d_rows, d_ids, d_slot;
};

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
	const uint64_t mask = ix->cap - 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t h = (loc[i] * EHT_HOT_MUL) >> (64 - bits);
		for (;; h = (h + 1) & mask) {
			if (ix->keys[h] == EHT_HOT_EMPTY)
				break;
			if (ix->keys[h] == loc[i]) {
				int rc = eht_err(EINVAL, "hot set: local row %llu appears twice (entries %u and %zu)",
						 (unsigned long long)loc[i], ix->vals[h], i);
				eht_hot_index_free(ix);
				return rc;
			}
		}
		ix->keys[h] = loc[i];
		ix->vals[h] = (uint32_t)i;
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

int eht_hotset_read(const char *path, int64_t **rows, uint64_t *n)
{
	*rows = NULL;
	*n = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return eht_err_sys(errno, "hot set %s: open", path);
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
	fclose(f);
	return rc;
}

int eht_hotset_write(const char *path, const int64_t *rows, uint64_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return eht_err_sys(errno, "hot set %s: create", path);
	uint8_t hdr[16], b[8];
	memcpy(hdr, EHT_HOTSET_MAGIC, 8);
	put_le64(hdr + 8, n);
	int ok = fwrite(hdr, 1, 16, f) == 16;
	for (uint64_t i = 0; i < n && ok; i++) {
		put_le64(b, (uint64_t)rows[i]);
		ok = fwrite(b, 1, 8, f) == 8;
	}
	int e = errno;
	if (fclose(f) || !ok)
		return eht_err_sys(e ? e : EIO, "hot set %s: write", path);
	return 0;
}

/* ------------------------------------------------------------------- the engine's cache */
void eht_lk_hot_free(eht_lookup *lk)
{
	struct lk_hot *h = lk->hot;
	if (!h)
		return;
	CUdeviceptr ds[] = {h->d_keys, h->d_vals, h->d_rows, h->d_ids, h->d_slot};
	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
		if (ds[i])
			eht_cu.cuMemFree(ds[i]);
	eht_hot_index_free(&h->ix);
	free(h);
	lk->hot = NULL;
}

static int dalloc(CUdeviceptr *d, size_t bytes, int rc)
{
	if (rc)
		return rc;
	rc = EHT_CU_CHECK(cuMemAlloc(d, bytes ? bytes : 8));
	return rc ? eht_err_prefix(rc, "hot set: %zu bytes of GPU memory", bytes) : 0;
}

/* Copies the hot rows into d_rows through the pinned staging (the table's host pointer or read_rows). */
static int fill_rows(eht_lookup *lk, struct lk_hot *h, const int64_t *rows)
{
	size_t step = lk->staging_rows;
	for (uint64_t b = 0; b < h->n; b += step) {
		size_t m = h->n - b < step ? (size_t)(h->n - b) : step;
		uint64_t dead = 0;
		int rc = eht_lk_gather_ids(lk, rows + b, 1, 0, 0, m, lk->staging, lk->rb, EHT_LOOKUP_RAW, &dead);
		if (!rc && dead)
			rc = eht_err(EINVAL, "hot set: %llu rows of entries %llu.. are dead", (unsigned long long)dead,
				     (unsigned long long)b);
		if (!rc)
			rc = EHT_CU_CHECK(cuMemcpyHtoD(h->d_rows + b * lk->rb, lk->staging, m * lk->rb));
		if (rc)
			return rc;
	}
	return 0;
}

int eht_lookup_set_hotset(eht_lookup *lk, const int64_t *rows, uint64_t n)
{
	if (!lk)
		return eht_err(EINVAL, "eht_lookup_set_hotset: NULL engine");
	if (!rows && n)
		return eht_err(EINVAL, "eht_lookup_set_hotset: NULL rows");
	if (lk->hot || lk->ran)
		return eht_err(EBUSY, "eht_lookup_set_hotset: table %s: the hot set is set once, before the first run",
			       lk->ti.name);
	if (!lk->gpu || !lk->kernels)
		return eht_err(EINVAL, "eht_lookup_set_hotset: table %s: a hot set needs a GPU engine with the kernels",
			       lk->ti.name);
	if (n == 0)
		return 0;
	if (n > UINT32_MAX / 2)
		return eht_err(EINVAL, "eht_lookup_set_hotset: %llu rows (at most 2^31 - 1)", (unsigned long long)n);
	uint64_t *loc = malloc(n * sizeof(*loc));
	struct lk_hot *h = calloc(1, sizeof(*h));
	int rc = 0;
	if (!loc || !h) {
		rc = eht_err(ENOMEM, "eht_lookup_set_hotset: out of memory for %llu rows", (unsigned long long)n);
		goto fail;
	}
	lk->hot = h;
	h->n = n;
	if ((rc = eht_hot_rows_local(rows, n, lk->lo, lk->hi, loc)) || (rc = eht_hot_index_build(loc, n, &h->ix)))
		goto fail;
	if ((rc = eht_cu_use_device(lk->device)))
		goto fail;
	rc = dalloc(&h->d_keys, h->ix.cap * 8, rc);
	rc = dalloc(&h->d_vals, h->ix.cap * 4, rc);
	rc = dalloc(&h->d_rows, n * lk->rb, rc);
	rc = dalloc(&h->d_ids, lk->max_batch * 8, rc);
	rc = dalloc(&h->d_slot, lk->max_batch * 4, rc);
	if (!rc)
		rc = EHT_CU_CHECK(cuMemcpyHtoD(h->d_keys, h->ix.keys, h->ix.cap * 8));
	if (!rc)
		rc = EHT_CU_CHECK(cuMemcpyHtoD(h->d_vals, h->ix.vals, h->ix.cap * 4));
	if (!rc)
		rc = fill_rows(lk, h, rows);
	if (rc)
		goto fail;
	free(loc);
	return 0;
fail:
	free(loc);
	if (lk->hot)
		eht_lk_hot_free(lk);
	else
		free(h);
	return rc;
}

uint64_t eht_lookup_hotset_rows(const eht_lookup *lk) { return lk && lk->hot ? lk->hot->n : 0; }

int eht_lk_hot_piece(eht_lookup *lk, const struct lk_strategy *st, struct lk_piece *p)
{
	struct lk_hot *h = lk->hot;
	CUdeviceptr d;
	int rc = eht_lk_piece_ids_dev(lk, p->ids, p->ids_dev, p->id64 ? 8 : 4, p->n, p->s, &d);
	if (rc)
		return rc;
	struct eht_gpu_ids gi = {.ids = d, .id64 = p->id64, .off = p->off, .lo = lk->lo, .hi = lk->hi};
	struct eht_gpu_hot gh = {.keys = h->d_keys, .vals = h->d_vals, .bits = h->ix.bits, .rows = h->d_rows,
				 .ids = h->d_ids, .slot = h->d_slot,
				 /* id + off == -1 (mod 2^64): below lo (>= 0), dead for every strategy */
				 .dead_id = (int64_t)(UINT64_MAX - (uint64_t)p->off)};
	if ((rc = eht_gpu_hot_mark(&lk->g, p->s, &gi, p->n, &gh, lk->d_counters)))
		return rc;
	struct lk_piece q = *p;
	q.ids = (const void *)(uintptr_t)h->d_ids;
	q.ids_dev = true;
	q.id64 = 1;
	lk->hot_skip = h->d_slot;
	lk->hot_skip_ids = h->d_ids;
	rc = st->gpu_piece(lk, &q);
	lk->hot_skip = lk->hot_skip_ids = 0;
	p->dead_published = q.dead_published;
	if (!rc)
		rc = eht_gpu_hot_fill(&lk->g, p->s, &gh, p->n, lk->rb, (CUdeviceptr)(uintptr_t)p->out, lk->fmt);
	return rc;
}
