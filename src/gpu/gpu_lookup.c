/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_lookup.c: loading the lookup kernels and launching them through the device layer. */
#include "gpu/gpu_lookup.h"

#include <stddef.h>
#include <string.h>

#include "eht.h"
#include "gpu/fatbin.h"
#include "util/err.h"

_Static_assert(EHT_LK_FMT_RAW == EHT_LOOKUP_RAW && EHT_LK_FMT_BF16 == EHT_LOOKUP_BF16,
	       "kernel output formats are enum eht_lookup_format");

int eht_gpu_lookup_load(int device, struct eht_gpu_lookup *g)
{
	memset(g, 0, sizeof(*g));
	if (!eht_fatbin_find("lookup"))
		return eht_err(ENOTSUP, "lookup: this build of libeht has no GPU kernels (nvcc was not found)");
	int rc = eht_dev_use(device);
	if (rc)
		return rc;
	rc = eht_dev_attr(device, EHT_DEV_ATTR_SM_COUNT, &g->sms);
	if (!rc)
		rc = eht_dev_module_load(&g->mod, "lookup");
	if (rc)
		return eht_err_prefix(rc, "loading the lookup kernels on GPU %d", device);
	static const struct {
		const char *name;
		size_t off;
	} fns[] = {
		{"eht_lk_direct", offsetof(struct eht_gpu_lookup, direct)},
		{"eht_lk_direct_split", offsetof(struct eht_gpu_lookup, direct_split)},
		{"eht_lk_expand", offsetof(struct eht_gpu_lookup, expand)},
		{"eht_lk_gather_uniq", offsetof(struct eht_gpu_lookup, gather_uniq)},
		{"eht_lk_gather_uniq_split", offsetof(struct eht_gpu_lookup, gather_uniq_split)},
		{"eht_lk_sort_small", offsetof(struct eht_gpu_lookup, sort_small)},
		{"eht_lk_keys", offsetof(struct eht_gpu_lookup, keys)},
		{"eht_lk_hist", offsetof(struct eht_gpu_lookup, hist)},
		{"eht_lk_scan", offsetof(struct eht_gpu_lookup, scan)},
		{"eht_lk_scatter", offsetof(struct eht_gpu_lookup, scatter)},
		{"eht_lk_dedup_count", offsetof(struct eht_gpu_lookup, dedup_count)},
		{"eht_lk_dedup_assign", offsetof(struct eht_gpu_lookup, dedup_assign)},
		{"eht_lk_stage_in", offsetof(struct eht_gpu_lookup, stage_in)},
		{"eht_lk_ring", offsetof(struct eht_gpu_lookup, ring)},
		{"eht_lk_dedup_mark", offsetof(struct eht_gpu_lookup, dedup_mark)},
		{"eht_lk_expand_codes", offsetof(struct eht_gpu_lookup, expand_codes)},
		{"eht_lk_expand_wide", offsetof(struct eht_gpu_lookup, expand_wide)},
		{"eht_lk_expand_after", offsetof(struct eht_gpu_lookup, expand_after)},
	};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		eht_kernel *f = (eht_kernel *)((char *)g + fns[i].off);
		rc = eht_dev_kernel(f, g->mod, fns[i].name);
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
	eht_dev_module_unload(g->mod);
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

#define THREADS ((unsigned)EHT_LK_THREADS)
#define RPW ((unsigned)EHT_LK_RPW)
#define WARPS_PER_BLOCK (THREADS / EHT_LK_WARP)

/* Most blocks a launch may have: per_sm per SM, or the engine's SM cap (one block per SM it may use:
 * a block never spans SMs, so a grid of sm_cap blocks leaves the other SMs to the model). */
static uint64_t all_sms(const struct eht_gpu_lookup *g, uint64_t per_sm)
{
	return (uint64_t)(g->sms > 0 ? g->sms : 1) * per_sm;
}

static uint64_t grid_cap(const struct eht_gpu_lookup *g, uint64_t per_sm)
{
	uint64_t cap = all_sms(g, per_sm);
	return g->sm_cap && g->sm_cap < cap ? g->sm_cap : cap;
}

/* Enough warps for n rows at RPW per warp, at most cap blocks (grid-stride beyond). */
static unsigned row_blocks_upto(uint64_t n, uint64_t cap)
{
	uint64_t warps = (n + RPW - 1) / RPW, blocks = (warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
	if (blocks > cap)
		blocks = cap;
	return blocks ? (unsigned)blocks : 1;
}

/* The same with at most 8 blocks per SM, within the engine's SM cap. */
static unsigned row_blocks(const struct eht_gpu_lookup *g, uint64_t n)
{
	return row_blocks_upto(n, grid_cap(g, 8));
}

static int launch_shmem(const struct eht_gpu_lookup *g, eht_kernel f, unsigned grid, unsigned block, unsigned shmem,
			eht_stream s, void **args, const char *name)
{
	int rc = eht_dev_launch(f, grid, block, shmem, s, args, g->urgent ? EHT_LAUNCH_URGENT : 0);
	return rc ? eht_err_prefix(rc, "launching %s (%u blocks)", name, grid) : 0;
}

static int launch(const struct eht_gpu_lookup *g, eht_kernel f, unsigned grid, unsigned block, eht_stream s,
		  void **args, const char *name)
{
	return launch_shmem(g, f, grid, block, 0, s, args, name);
}

/* The split layout's arguments: the arrays, the bytes of each part of a row, and the widest load
 * that divides both parts and every address (bf16 reads 8-byte words: -EINVAL where it cannot). */
struct split_args {
	eht_dptr w, s;
	uint32_t wb, sb;
	int vec;
};

static int split_args(const struct eht_gpu_table *t, eht_dptr out, int fmt, struct split_args *a)
{
	*a = (struct split_args){.w = t->base, .s = t->scales, .wb = t->wb, .sb = t->rb - t->wb};
	int v1 = eht_gpu_vec(a->wb, a->w, out), v2 = eht_gpu_vec(a->sb, a->s, out);
	a->vec = v1 < v2 ? v1 : v2;
	if (fmt == EHT_LK_FMT_BF16 && !eht_gpu_table_bf16_ok(t))
		return eht_err(EINVAL, "lookup: bf16 in place from split rows needs 256 weight and 8 scale bytes, "
				       "8-byte aligned (rows of %u + %u bytes)", a->wb, a->sb);
	return 0;
}

int eht_gpu_direct(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_ids *ids, uint64_t n,
		   const struct eht_gpu_table *t, eht_dptr out, int fmt, eht_dptr counters,
		   const struct eht_lk_idview *view, eht_dptr h_dead)
{
	if (!n)
		return 0;
	unsigned long long nn = n;
	long long off = ids->off, lo = ids->lo, hi = ids->hi;
	int id64 = ids->id64;
	struct eht_lk_idview v = {0};
	if (view)
		v = *view;
	if (t->scales) {
		struct split_args a;
		int rc = split_args(t, out, fmt, &a);
		void *args[] = {(void *)&ids->ids, &id64, &off, &nn, &lo, &hi, &a.w, &a.s, &a.wb, &a.sb, &out, &fmt, &a.vec,
				&counters, &v, &h_dead};
		return rc ? rc : launch(g, g->direct_split, row_blocks(g, n), THREADS, s, args, "eht_lk_direct_split");
	}
	eht_dptr table = t->base;
	uint32_t rb = t->rb;
	int vec = eht_gpu_vec(rb, table, out);
	void *args[] = {(void *)&ids->ids, &id64, &off, &nn, &lo, &hi, &table, &rb, &out, &fmt, &vec, &counters, &v, &h_dead};
	return launch(g, g->direct, row_blocks(g, n), THREADS, s, args, "eht_lk_direct");
}

static int expand(const struct eht_gpu_lookup *g, eht_stream s, eht_dptr slot, uint64_t n, eht_dptr compact,
		  uint32_t rb, eht_dptr out, int fmt, eht_dptr dslot)
{
	if (!n)
		return 0;
	int vec = eht_gpu_vec(rb, compact, out);
	unsigned long long nn = n;
	void *args[] = {&slot, &nn, &compact, &rb, &out, &fmt, &vec, &dslot};
	/* Capped below what the rows could use (the background mode beside the model): as many SMs,
	 * four times the warps on each, so the expand is over sooner and takes SMs from the model's
	 * kernels for less time. */
	uint64_t warps = (n + RPW - 1) / RPW;
	if (g->sm_cap && warps > (uint64_t)g->sm_cap * WARPS_PER_BLOCK) {
		const uint64_t wide_warps = EHT_LK_WIDE_THREADS / EHT_LK_WARP, need = (warps + wide_warps - 1) / wide_warps;
		unsigned blocks = need < g->sm_cap ? (unsigned)need : g->sm_cap;
		return launch(g, g->expand_wide, blocks, EHT_LK_WIDE_THREADS, s, args, "eht_lk_expand_wide");
	}
	return launch(g, g->expand, row_blocks(g, n), THREADS, s, args, "eht_lk_expand");
}

int eht_gpu_expand(const struct eht_gpu_lookup *g, eht_stream s, eht_dptr slot, uint64_t n,
		   eht_dptr compact, uint32_t rb, eht_dptr out, int fmt)
{
	return expand(g, s, slot, n, compact, rb, out, fmt, 0);
}

int eht_gpu_expand_after(const struct eht_gpu_lookup *g, eht_stream s, eht_dptr done, uint64_t n, eht_dptr compact,
			 uint32_t rb, eht_dptr out, int fmt)
{
	int vec = eht_gpu_vec(rb, compact, out);
	unsigned long long nn = n;
	void *args[] = {&done, &nn, &compact, &rb, &out, &fmt, &vec};
	/* At most half of each SM's threads (4 blocks), whatever the engine's SM cap. Not of its
	 * registers: at 72 a thread, three blocks fit an SM and leave 10,240, so no block of the capped
	 * dequant (eht_lk_expand_wide: 1,024 threads at 64) fits an SM that holds one. A decode batch's
	 * 192 blocks can reach every SM, so a dequant the CPU queued on the push stream before this request's
	 * done word (an earlier eager or prefill-sized call's, not yet run) would never start: the
	 * layer's API asks for that call's wait first (eht_engram_layer_wait). Only a captured split
	 * joins here (an eager one's rows are dequantized on the push stream and its join is the
	 * stream's wait), so the case is a replayed graph's split while an eager call of the same layer
	 * is not joined to its stream: untested (test_gpu_engram_layer's unjoined case is an eager
	 * split). A grid below the SM count was not faster in one round (docs/BENCHMARKS.md, round 51). */
	return launch(g, g->expand_after, row_blocks_upto(n, all_sms(g, 4)), THREADS, s, args, "eht_lk_expand_after");
}

int eht_gpu_scatter_rows(const struct eht_gpu_lookup *g, eht_stream s, eht_dptr dslot, uint64_t n, eht_dptr src,
			 uint32_t rb, eht_dptr rows)
{
	return expand(g, s, 0, n, src, rb, rows, 0, dslot);
}

int eht_gpu_gather_uniq(const struct eht_gpu_lookup *g, eht_stream s, eht_dptr uniq, eht_dptr counters,
			float share, uint64_t max_n, const struct eht_gpu_table *t, eht_dptr compact)
{
	if (!max_n)
		return 0;
	if (t->scales) {
		struct split_args a;
		int rc = split_args(t, compact, EHT_LK_FMT_RAW, &a);
		void *args[] = {&uniq, &counters, &share, &a.w, &a.s, &a.wb, &a.sb, &compact, &a.vec};
		return rc ? rc : launch(g, g->gather_uniq_split, row_blocks(g, max_n), THREADS, s, args, "eht_lk_gather_uniq_split");
	}
	eht_dptr table = t->base;
	uint32_t rb = t->rb;
	int vec = eht_gpu_vec(rb, table, compact);
	void *args[] = {&uniq, &counters, &share, &table, &rb, &compact, &vec};
	return launch(g, g->gather_uniq, row_blocks(g, max_n), THREADS, s, args, "eht_lk_gather_uniq");
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

int eht_gpu_sort_dedup(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_ids *ids, uint32_t n,
		       const struct eht_gpu_sort_bufs *b, eht_dptr uniq, eht_dptr slot,
		       eht_dptr counters)
{
	if (!n)
		return 0;
	long long off = ids->off, lo = ids->lo, hi = ids->hi;
	int id64 = ids->id64;
	uint32_t dead_key = (uint32_t)(ids->hi - ids->lo);
	int nbits = bit_length(dead_key);
	if (n <= EHT_GPU_SMALL_TILE) {
		void *args[] = {(void *)&ids->ids, &id64, &off, &n, &lo, &hi, &dead_key, &nbits, &uniq, &slot, &counters};
		return launch(g, g->sort_small, 1, EHT_LK_SMALL_THREADS, s, args, "eht_lk_sort_small");
	}
	unsigned tiles = (unsigned)tiles_of(n);
	unsigned kb = n < 65536 * 4 ? (n + 255) / 256 : 1024;
	{
		void *args[] = {(void *)&ids->ids, &id64, &off, &n, &lo, &hi, &dead_key, (void *)&b->keys[0],
				(void *)&b->vals[0]};
		int rc = launch(g, g->keys, kb, 256, s, args, "eht_lk_keys"); /* any block size: a grid-stride loop */
		if (rc)
			return rc;
	}
	int cur = 0;
	eht_dptr null_total = 0;
	for (int shift = 0; shift < nbits; shift += 8) {
		unsigned len = tiles * EHT_GPU_RADIX;
		void *ha[] = {(void *)&b->keys[cur], &n, &shift, (void *)&b->hist};
		void *sa[] = {(void *)&b->hist, &len, &null_total};
		void *xa[] = {(void *)&b->keys[cur], (void *)&b->vals[cur], &n, &shift, (void *)&b->hist,
			      (void *)&b->keys[cur ^ 1], (void *)&b->vals[cur ^ 1]};
		int rc = launch(g, g->hist, tiles, EHT_LK_TILE_THREADS, s, ha, "eht_lk_hist");
		if (!rc)
			rc = launch(g, g->scan, 1, EHT_LK_SCAN_THREADS, s, sa, "eht_lk_scan");
		if (!rc)
			rc = launch(g, g->scatter, tiles, EHT_LK_TILE_THREADS, s, xa, "eht_lk_scatter");
		if (rc)
			return rc;
		cur ^= 1;
	}
	eht_dptr total = b->heads + (eht_dptr)tiles * 4;
	void *ca[] = {(void *)&b->keys[cur], &n, &dead_key, (void *)&b->heads};
	void *sa[] = {(void *)&b->heads, &tiles, &total};
	void *aa[] = {(void *)&b->keys[cur], (void *)&b->vals[cur], &n, &dead_key, (void *)&b->heads, &total,
		      &uniq, &slot, &counters};
	int rc = launch(g, g->dedup_count, tiles, EHT_LK_TILE_THREADS, s, ca, "eht_lk_dedup_count");
	if (!rc)
		rc = launch(g, g->scan, 1, EHT_LK_SCAN_THREADS, s, sa, "eht_lk_scan");
	if (!rc)
		rc = launch(g, g->dedup_assign, tiles, EHT_LK_TILE_THREADS, s, aa, "eht_lk_dedup_assign");
	return rc;
}

int eht_gpu_stage_in(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_stage_in *a, uint64_t n,
		     uint32_t rb, eht_dptr out, eht_dptr counters)
{
	if (!n)
		return 0;
	if (a->fmt == EHT_LK_FMT_BF16 && (rb != EHT_ENGRAM_ROW_BYTES || !a->xout))
		return eht_err(EINVAL, "eht_lk_stage_in: bf16 output needs %d-byte rows (%u) and a bf16 buffer",
			       EHT_ENGRAM_ROW_BYTES, rb);
	uint64_t nchunks = (n + a->chunk - 1) / a->chunk;
	/* At most one block per SM: every block waits on the CPU, so all must be resident at once with
	 * room left for other kernels (the in-place gather of an AUTO split runs beside it). */
	uint64_t cap = grid_cap(g, 1);
	eht_dptr mirror = a->mirror && a->nslots <= EHT_LK_RELAY_SLOTS && cap >= 2 ? a->mirror : 0;
	if (mirror) /* the relay block is one of them */
		cap--;
	/* A chunk in parts of at most EHT_LK_STAGE_PART_BYTES (a block's loads in flight), each
	 * copied by its own block: a 256-row prefill chunk in 3. On the lent H200 (24 GiB, graph
	 * replays, alternated runs) the last chunk's copy took 11-12 us against 24-25 in one piece, and
	 * the kernel ended 31 us after it was ready against 51-60. */
	uint64_t np = ((uint64_t)a->chunk * rb + EHT_LK_STAGE_PART_BYTES - 1) / EHT_LK_STAGE_PART_BYTES;
	unsigned parts = (unsigned)(np < 1 ? 1 : np > EHT_LK_STAGE_PARTS_MAX ? EHT_LK_STAGE_PARTS_MAX : np);
	if (!a->parts_done)
		parts = 1;
	unsigned grid = (unsigned)(nchunks * parts < cap ? nchunks * parts : cap);
	grid = grid ? grid : 1;
	int vec = eht_gpu_vec(rb, a->staging + (uint64_t)a->chunk * rb, out);
	unsigned long long nn = n, words = a->ids || a->view.ids ? a->id_bytes / 4 : 0;
	unsigned chunk = a->chunk, nslots = a->nslots, tag = a->tag;
	int fmt = a->fmt;
	void *args[] = {(void *)&a->ids, &words, (void *)&a->h_ids, (void *)&a->staging, (void *)&a->ready, &tag,
			(void *)&a->chunk_dead, &chunk, &nslots, &nn, &rb, &out, &vec, (void *)&a->xout, &fmt, &counters,
			(void *)&a->h_dead, (void *)&a->bell, (void *)&a->sync, (void *)&a->trace, (void *)&a->ucount,
			(void *)&a->share, (void *)&a->h_count, (void *)&mirror, &parts, (void *)&a->parts_done,
			(void *)&a->view};
	unsigned blocks = grid + (mirror ? 1 : 0), shmem = mirror ? a->nslots * 4 : 0;
	return launch_shmem(g, g->stage_in, blocks, THREADS, shmem, s, args, "eht_lk_stage_in");
}

int eht_gpu_ring(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_ring *a)
{
	/* one id (or word) a thread: a decode batch's reads all in flight at once (at 8 a thread a
	 * thread's reads followed one another: the kernel is on the model's stream when split); a
	 * prefill's in 32 blocks */
	uint64_t words = a->ucount || a->view.ids ? a->n : a->id_words, blocks = (words + THREADS - 1) / THREADS,
		 cap = grid_cap(g, 1);
	if (cap > 32)
		cap = 32;
	unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
	grid = grid ? grid : 1;
	unsigned long long w = a->id_words, n = a->n;
	void *args[] = {(void *)&a->ids, &w, (void *)&a->h_ids, (void *)&a->ucount, &n, (void *)&a->h_count,
			(void *)&a->dead, (void *)&a->h_dead, (void *)&a->done, (void *)&a->bell, (void *)&a->sync,
			(void *)&a->view};
	return launch(g, g->ring, grid, THREADS, s, args, "eht_lk_ring");
}

int eht_gpu_dedup_mark(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_ids *ids, uint64_t n,
		       const struct eht_gpu_hot *h, eht_dptr counters)
{
	if (!n)
		return 0;
	unsigned long long nn = n;
	long long off = ids->off, lo = ids->lo, hi = ids->hi;
	int id64 = ids->id64, hshift = h->keys ? 64 - (int)h->bits : 0, dshift = 64 - (int)h->dbits;
	unsigned long long hmask = h->keys ? (1ull << h->bits) - 1 : 0, dmask = (1ull << h->dbits) - 1;
	uint64_t blocks = (n + THREADS - 1) / THREADS, cap = grid_cap(g, 16);
	void *args[] = {(void *)&ids->ids, &id64, &off, &nn, &lo, &hi, (void *)&h->keys, (void *)&h->vals, &hmask,
			&hshift, (void *)&h->dkeys, (void *)&h->dvals, &dmask, &dshift, (void *)&h->uniq,
			(void *)&h->code, &counters, (void *)&h->hits, (void *)&h->ring, (void *)&h->ring_head,
			(void *)&h->ring_mask};
	return launch(g, g->dedup_mark, (unsigned)(blocks < cap ? blocks : cap), THREADS, s, args, "eht_lk_dedup_mark");
}

int eht_gpu_expand_codes(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_hot *h, uint64_t n,
			 eht_dptr compact, uint32_t rb, eht_dptr out, int fmt)
{
	if (!n)
		return 0;
	/* One vector width for both sources: the hot rows and the compact rows. */
	int vec = eht_gpu_vec(rb, compact, out), vh = h->rows ? eht_gpu_vec(rb, h->rows, out) : vec;
	vec = vh < vec ? vh : vec;
	unsigned long long nn = n;
	void *args[] = {(void *)&h->code, &nn, (void *)&h->rows, (void *)&h->dkeys, (void *)&h->dvals, &compact, &rb,
			&out, &fmt, &vec};
	return launch(g, g->expand_codes, row_blocks(g, n), THREADS, s, args, "eht_lk_expand_codes");
}
