/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_lookup.c: loading the lookup kernels and launching them through the driver API. */
#include "cuda/gpu_lookup.h"

#include <stddef.h>
#include <string.h>

#include "cuda/fatbin.h"
#include "util/err.h"

int eht_gpu_lookup_load(int device, struct eht_gpu_lookup *g)
{
	memset(g, 0, sizeof(*g));
	const struct eht_fatbin *fb = eht_fatbin_find("lookup");
	if (!fb)
		return eht_err(ENOTSUP, "lookup: this build of libeht has no GPU kernels (nvcc was not found)");
	int rc = eht_cu_use_device(device);
	if (rc)
		return rc;
	CUdevice dev;
	rc = EHT_CU_CHECK(cuDeviceGet(&dev, device));
	if (!rc)
		rc = EHT_CU_CHECK(cuDeviceGetAttribute(&g->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	if (!rc)
		rc = EHT_CU_CHECK(cuModuleLoadData(&g->mod, fb->begin));
	if (rc)
		return eht_err_prefix(rc, "loading the lookup kernels on GPU %d", device);
	static const struct {
		const char *name;
		size_t off;
	} fns[] = {
		{"eht_lk_direct", offsetof(struct eht_gpu_lookup, direct)},
		{"eht_lk_expand", offsetof(struct eht_gpu_lookup, expand)},
		{"eht_lk_gather_uniq", offsetof(struct eht_gpu_lookup, gather_uniq)},
		{"eht_lk_sort_small", offsetof(struct eht_gpu_lookup, sort_small)},
		{"eht_lk_keys", offsetof(struct eht_gpu_lookup, keys)},
		{"eht_lk_hist", offsetof(struct eht_gpu_lookup, hist)},
		{"eht_lk_scan", offsetof(struct eht_gpu_lookup, scan)},
		{"eht_lk_scatter", offsetof(struct eht_gpu_lookup, scatter)},
		{"eht_lk_dedup_count", offsetof(struct eht_gpu_lookup, dedup_count)},
		{"eht_lk_dedup_assign", offsetof(struct eht_gpu_lookup, dedup_assign)},
		{"eht_lk_stage_in", offsetof(struct eht_gpu_lookup, stage_in)},
		{"eht_lk_dedup_mark", offsetof(struct eht_gpu_lookup, dedup_mark)},
		{"eht_lk_expand_codes", offsetof(struct eht_gpu_lookup, expand_codes)},
	};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		CUfunction *f = (CUfunction *)((char *)g + fns[i].off);
		rc = EHT_CU_CHECK(cuModuleGetFunction(f, g->mod, fns[i].name));
		if (rc) {
			eht_err_prefix(rc, "kernel %s", fns[i].name);
			eht_gpu_lookup_unload(g);
			return rc;
		}
	}
	return 0;
}

void eht_gpu_lookup_unload(struct eht_gpu_lookup *g)
{
	if (g->mod)
		eht_cu.cuModuleUnload(g->mod);
	memset(g, 0, sizeof(*g));
}

int eht_gpu_vec(uint32_t rb, uint64_t a, uint64_t b)
{
	static const int v[] = {16, 8, 4};
	for (int i = 0; i < 3; i++)
		if (rb % v[i] == 0 && a % v[i] == 0 && b % v[i] == 0)
			return v[i];
	return 1;
}

#define THREADS 256u
#define RPW 4u /* rows per warp in flight (lookup.cu) */

/* Enough warps for n rows at RPW per warp, at most 8 blocks per SM (grid-stride beyond). */
static unsigned row_blocks(const struct eht_gpu_lookup *g, uint64_t n)
{
	uint64_t warps = (n + RPW - 1) / RPW, blocks = (warps + THREADS / 32 - 1) / (THREADS / 32);
	uint64_t cap = (uint64_t)(g->sms > 0 ? g->sms : 1) * 8;
	if (blocks > cap)
		blocks = cap;
	return blocks ? (unsigned)blocks : 1;
}

static int launch(CUfunction f, unsigned grid, unsigned block, CUstream s, void **args, const char *name)
{
	int rc = eht_cu_result(eht_cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, NULL), "cuLaunchKernel");
	return rc ? eht_err_prefix(rc, "launching %s (%u blocks)", name, grid) : 0;
}

int eht_gpu_direct(const struct eht_gpu_lookup *g, CUstream s, const struct eht_gpu_ids *ids, uint64_t n,
		   CUdeviceptr table, uint32_t rb, CUdeviceptr out, int fmt, CUdeviceptr counters)
{
	if (!n)
		return 0;
	int vec = eht_gpu_vec(rb, table, out);
	unsigned long long nn = n;
	long long off = ids->off, lo = ids->lo, hi = ids->hi;
	int id64 = ids->id64;
	void *args[] = {(void *)&ids->ids, &id64, &off, &nn, &lo, &hi, &table, &rb, &out, &fmt, &vec, &counters};
	return launch(g->direct, row_blocks(g, n), THREADS, s, args, "eht_lk_direct");
}

static int expand(const struct eht_gpu_lookup *g, CUstream s, CUdeviceptr slot, uint64_t n, CUdeviceptr compact,
		  uint32_t rb, CUdeviceptr out, int fmt, CUdeviceptr dslot)
{
	if (!n)
		return 0;
	int vec = eht_gpu_vec(rb, compact, out);
	unsigned long long nn = n;
	void *args[] = {&slot, &nn, &compact, &rb, &out, &fmt, &vec, &dslot};
	return launch(g->expand, row_blocks(g, n), THREADS, s, args, "eht_lk_expand");
}

int eht_gpu_expand(const struct eht_gpu_lookup *g, CUstream s, CUdeviceptr slot, uint64_t n,
		   CUdeviceptr compact, uint32_t rb, CUdeviceptr out, int fmt)
{
	return expand(g, s, slot, n, compact, rb, out, fmt, 0);
}

int eht_gpu_scatter_rows(const struct eht_gpu_lookup *g, CUstream s, CUdeviceptr dslot, uint64_t n, CUdeviceptr src,
			 uint32_t rb, CUdeviceptr rows)
{
	return expand(g, s, 0, n, src, rb, rows, 0, dslot);
}

int eht_gpu_gather_uniq(const struct eht_gpu_lookup *g, CUstream s, CUdeviceptr uniq, CUdeviceptr counters,
			float share, uint64_t max_n, CUdeviceptr table, uint32_t rb, CUdeviceptr compact)
{
	if (!max_n)
		return 0;
	int vec = eht_gpu_vec(rb, table, compact);
	void *args[] = {&uniq, &counters, &share, &table, &rb, &compact, &vec};
	return launch(g->gather_uniq, row_blocks(g, max_n), THREADS, s, args, "eht_lk_gather_uniq");
}

static uint64_t tiles_of(uint64_t n) { return (n + EHT_GPU_TILE - 1) / EHT_GPU_TILE; }

void eht_gpu_sort_sizes(uint64_t max_n, uint64_t *keys_bytes, uint64_t *hist_bytes, uint64_t *heads_bytes)
{
	uint64_t t = tiles_of(max_n) ? tiles_of(max_n) : 1;
	*keys_bytes = (max_n ? max_n : 1) * 4;
	*hist_bytes = t * EHT_GPU_RADIX * 4;
	*heads_bytes = (t + 1) * 4;
}

static int bit_length(uint32_t x)
{
	int b = 0;
	while (x) {
		b++;
		x >>= 1;
	}
	return b ? b : 1;
}

int eht_gpu_sort_dedup(const struct eht_gpu_lookup *g, CUstream s, const struct eht_gpu_ids *ids, uint32_t n,
		       const struct eht_gpu_sort_bufs *b, CUdeviceptr uniq, CUdeviceptr slot,
		       CUdeviceptr counters)
{
	if (!n)
		return 0;
	long long off = ids->off, lo = ids->lo, hi = ids->hi;
	int id64 = ids->id64;
	uint32_t dead_key = (uint32_t)(ids->hi - ids->lo);
	int nbits = bit_length(dead_key);
	if (n <= EHT_GPU_SMALL_TILE) {
		void *args[] = {(void *)&ids->ids, &id64, &off, &n, &lo, &hi, &dead_key, &nbits, &uniq, &slot, &counters};
		return launch(g->sort_small, 1, 256, s, args, "eht_lk_sort_small");
	}
	unsigned tiles = (unsigned)tiles_of(n);
	unsigned kb = n < 65536 * 4 ? (n + 255) / 256 : 1024;
	{
		void *args[] = {(void *)&ids->ids, &id64, &off, &n, &lo, &hi, &dead_key, (void *)&b->keys[0],
				(void *)&b->vals[0]};
		int rc = launch(g->keys, kb, 256, s, args, "eht_lk_keys");
		if (rc)
			return rc;
	}
	int cur = 0;
	CUdeviceptr null_total = 0;
	for (int shift = 0; shift < nbits; shift += 8) {
		unsigned len = tiles * EHT_GPU_RADIX;
		void *ha[] = {(void *)&b->keys[cur], &n, &shift, (void *)&b->hist};
		void *sa[] = {(void *)&b->hist, &len, &null_total};
		void *xa[] = {(void *)&b->keys[cur], (void *)&b->vals[cur], &n, &shift, (void *)&b->hist,
			      (void *)&b->keys[cur ^ 1], (void *)&b->vals[cur ^ 1]};
		int rc = launch(g->hist, tiles, 256, s, ha, "eht_lk_hist");
		if (!rc)
			rc = launch(g->scan, 1, 1024, s, sa, "eht_lk_scan");
		if (!rc)
			rc = launch(g->scatter, tiles, 256, s, xa, "eht_lk_scatter");
		if (rc)
			return rc;
		cur ^= 1;
	}
	CUdeviceptr total = b->heads + (CUdeviceptr)tiles * 4;
	void *ca[] = {(void *)&b->keys[cur], &n, &dead_key, (void *)&b->heads};
	void *sa[] = {(void *)&b->heads, &tiles, &total};
	void *aa[] = {(void *)&b->keys[cur], (void *)&b->vals[cur], &n, &dead_key, (void *)&b->heads, &total,
		      &uniq, &slot, &counters};
	int rc = launch(g->dedup_count, tiles, 256, s, ca, "eht_lk_dedup_count");
	if (!rc)
		rc = launch(g->scan, 1, 1024, s, sa, "eht_lk_scan");
	if (!rc)
		rc = launch(g->dedup_assign, tiles, 256, s, aa, "eht_lk_dedup_assign");
	return rc;
}

int eht_gpu_stage_in(const struct eht_gpu_lookup *g, CUstream s, const struct eht_gpu_stage_in *a, uint64_t n,
		     uint32_t rb, CUdeviceptr out, int fmt, CUdeviceptr counters)
{
	if (!n)
		return 0;
	uint64_t nchunks = (n + a->chunk - 1) / a->chunk;
	/* At most one block per SM: every block waits on the CPU, so all must be resident at once with
	 * room left for other kernels (the in-place gather of an AUTO split runs beside it). */
	unsigned grid = (unsigned)(nchunks < (uint64_t)(g->sms > 0 ? g->sms : 1) ? nchunks : (uint64_t)g->sms);
	int vec = eht_gpu_vec(rb, a->staging + (uint64_t)a->chunk * rb, out);
	unsigned long long nn = n, words = a->ids ? a->id_bytes / 4 : 0;
	unsigned chunk = a->chunk, nslots = a->nslots, tag = a->tag;
	void *args[] = {(void *)&a->ids, &words, (void *)&a->h_ids, (void *)&a->staging, (void *)&a->ready, &tag,
			(void *)&a->chunk_dead, &chunk, &nslots, &nn, &rb, &out, &fmt, &vec, &counters,
			(void *)&a->h_dead, (void *)&a->bell, (void *)&a->sync, (void *)&a->trace, (void *)&a->ucount,
			(void *)&a->share, (void *)&a->h_count};
	return launch(g->stage_in, grid ? grid : 1, THREADS, s, args, "eht_lk_stage_in");
}

int eht_gpu_dedup_mark(const struct eht_gpu_lookup *g, CUstream s, const struct eht_gpu_ids *ids, uint64_t n,
		       const struct eht_gpu_hot *h, CUdeviceptr counters)
{
	if (!n)
		return 0;
	unsigned long long nn = n;
	long long off = ids->off, lo = ids->lo, hi = ids->hi;
	int id64 = ids->id64, hshift = h->keys ? 64 - (int)h->bits : 0, dshift = 64 - (int)h->dbits;
	unsigned long long hmask = h->keys ? (1ull << h->bits) - 1 : 0, dmask = (1ull << h->dbits) - 1;
	uint64_t blocks = (n + THREADS - 1) / THREADS, cap = (uint64_t)(g->sms > 0 ? g->sms : 1) * 16;
	void *args[] = {(void *)&ids->ids, &id64, &off, &nn, &lo, &hi, (void *)&h->keys, (void *)&h->vals, &hmask,
			&hshift, (void *)&h->dkeys, (void *)&h->dvals, &dmask, &dshift, (void *)&h->uniq,
			(void *)&h->code, &counters, (void *)&h->hits, (void *)&h->ring, (void *)&h->ring_head,
			(void *)&h->ring_mask};
	return launch(g->dedup_mark, (unsigned)(blocks < cap ? blocks : cap), THREADS, s, args, "eht_lk_dedup_mark");
}

int eht_gpu_expand_codes(const struct eht_gpu_lookup *g, CUstream s, const struct eht_gpu_hot *h, uint64_t n,
			 CUdeviceptr compact, uint32_t rb, CUdeviceptr out, int fmt)
{
	if (!n)
		return 0;
	/* One vector width for both sources: the hot rows and the compact rows. */
	int vec = eht_gpu_vec(rb, compact, out), vh = h->rows ? eht_gpu_vec(rb, h->rows, out) : vec;
	vec = vh < vec ? vh : vec;
	unsigned long long nn = n;
	void *args[] = {(void *)&h->code, &nn, (void *)&h->rows, (void *)&h->dkeys, (void *)&h->dvals, &compact, &rb,
			&out, &fmt, &vec};
	return launch(g->expand_codes, row_blocks(g, n), THREADS, s, args, "eht_lk_expand_codes");
}
