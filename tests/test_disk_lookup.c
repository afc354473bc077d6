/* SPDX-License-Identifier: Apache-2.0 */
/* test_disk_lookup.c: the disk tier served by eht_lookup (CPU path, host output) is bit-exact against
 * the in-memory table built from the same checkpoint, at TP 1, 2, 4 and 8, for the single-file and the
 * sharded fixture: duplicate ids, dead ids, other ranks' ids, batches larger than the buffers, mapped
 * and pread gathers, cache on and off, bf16 output, prefetch tickets; open's argument errors. */
#include <stdbool.h>
#include <string.h>

#include "disk_ref.h"
#include "testutil.h"

#define N_IDS 3001 /* over max_batch (500) and the staging (128 rows): split, never reallocated */

static bool all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static eht_lookup *engine(eht_table *t, int fmt)
{
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				    .format = fmt, .device = -1, .threads = 2, .max_batch = 500,
				    .staging_bytes = 128 * EHT_ENGRAM_ROW_BYTES, .numa_node = -1, .spin_us = 20};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	return lk;
}

/* All ranks of an nranks split: each rank's output matches the reference on its rows and is zero
 * elsewhere; the ranks' outputs OR together to the full lookup. */
static void check_tp(const char *path, unsigned layer, const uint8_t *ref, uint64_t rows, uint64_t rb,
		     uint32_t nranks, unsigned flags, uint64_t cache, const int64_t *ids, size_t n)
{
	char wn[128], sn[128];
	uint8_t *sum = calloc(n, rb), *out = malloc(n * rb + 1);
	uint64_t dead_total = 0, live = 0;
	for (size_t i = 0; i < n; i++)
		live += ids[i] >= 0 && (uint64_t)ids[i] < rows;
	for (uint32_t r = 0; r < nranks; r++) {
		struct eht_disk_opts o = {.size = sizeof(o), .flags = flags, .weight = W_NAME(layer, wn),
					  .scale = S_NAME(layer, sn), .rank = r, .nranks = nranks, .cache_bytes = cache};
		eht_table *t = NULL;
		CHECK_RC(eht_disk_open(path, &o, &t), 0);
		if (!t)
			continue;
		struct eht_table_info ti = {.size = sizeof(ti)};
		uint64_t first, count;
		CHECK_RC(eht_rows_split(rows, r, nranks, &first, &count), 0);
		CHECK_RC(eht_table_get_info(t, &ti), 0);
		CHECK(ti.tier == EHT_TIER_DISK && ti.host == NULL && ti.rows == rows && ti.row_bytes == rb);
		CHECK(ti.first_row == first && ti.local_rows == count);
		eht_lookup *lk = engine(t, EHT_LOOKUP_RAW);
		for (int pass = 0; lk && pass < 2; pass++) { /* the second pass meets the hot-row cache */
			uint64_t dead = 0, want_dead = 0;
			memset(out, 0xab, n * rb + 1);
			CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, n, out, NULL, EHT_LOOKUP_RUN_OUT_HOST, &dead), 0);
			int bad = 0;
			for (size_t i = 0; i < n; i++) {
				int64_t id = ids[i];
				bool mine = id >= (int64_t)first && id < (int64_t)(first + count);
				want_dead += !mine;
				if (mine ? memcmp(out + i * rb, ref + (uint64_t)id * rb, rb) != 0 : !all_zero(out + i * rb, rb))
					bad++;
				if (pass == 0)
					for (uint64_t k = 0; k < rb; k++)
						sum[i * rb + k] |= out[i * rb + k];
			}
			if (bad)
				fprintf(stderr, "%s layer %u rank %u/%u flags %u cache %llu pass %d: %d rows differ\n", path,
					layer, r, nranks, flags, (unsigned long long)cache, pass, bad);
			CHECK(bad == 0);
			CHECK(out[n * rb] == 0xab);
			CHECK(dead == want_dead);
			if (pass == 0)
				dead_total += dead;
		}
		struct eht_disk_stats st = {.size = sizeof(st)};
		CHECK_RC(eht_disk_stats(t, &st), 0);
		if (cache == EHT_DISK_NO_CACHE)
			CHECK(st.cache_hits == 0 && st.cache_slots == 0);
		else if (count > 0)
			CHECK(st.cache_hits > 0);
		eht_lookup_destroy(lk);
		CHECK_RC(eht_table_close(t), 0);
	}
	/* The ranks' outputs together are the full lookup; every live id dead on nranks - 1 ranks. */
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		bool live_id = ids[i] >= 0 && (uint64_t)ids[i] < rows;
		for (uint64_t k = 0; k < rb; k++)
			bad += sum[i * rb + k] != (live_id ? ref[(uint64_t)ids[i] * rb + k] : 0);
	}
	CHECK(bad == 0);
	CHECK(dead_total == (uint64_t)n * nranks - live);
	free(sum);
	free(out);
}

/* bf16 output and int32 ids with an offset, through the sorted HOST path's CPU expand. */
static void check_bf16(const char *path, unsigned layer, const uint8_t *ref, uint64_t rows, uint64_t *rs)
{
	char wn[128], sn[128];
	struct eht_disk_opts o = {.size = sizeof(o), .weight = W_NAME(layer, wn), .scale = S_NAME(layer, sn),
				  .rank = 1, .nranks = 2};
	eht_table *t = NULL;
	CHECK_RC(eht_disk_open(path, &o, &t), 0);
	eht_lookup *lk = t ? engine(t, EHT_LOOKUP_BF16) : NULL;
	if (!lk) {
		eht_table_close(t);
		return;
	}
	enum { N = 1500 };
	static int32_t ids[N];
	static uint16_t out[N * 256], want[256];
	const int64_t off = 100;
	for (size_t i = 0; i < N; i++)
		ids[i] = (int32_t)((int64_t)(t_rand(rs) % (rows + 6)) - 3 - off);
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, off, N, out, NULL, EHT_LOOKUP_RUN_OUT_HOST, NULL), 0);
	uint64_t first, count;
	CHECK_RC(eht_rows_split(rows, 1, 2, &first, &count), 0);
	int bad = 0;
	for (size_t i = 0; i < N; i++) {
		int64_t r = ids[i] + off;
		if (r >= (int64_t)first && r < (int64_t)(first + count))
			eht_engram_dequant_row(ref + (uint64_t)r * EHT_ENGRAM_ROW_BYTES, want);
		else
			memset(want, 0, sizeof(want));
		bad += memcmp(out + i * 256, want, sizeof(want)) != 0;
	}
	CHECK(bad == 0);
	eht_lookup_destroy(lk);
	eht_table_close(t);
}

/* Prefetch tickets: results unchanged, rows served from the ticket, FIFO double buffering, -EBUSY. */
static void check_prefetch(const char *path, unsigned layer, const uint8_t *ref, uint64_t rows, uint64_t *rs)
{
	char wn[128], sn[128];
	struct eht_disk_opts o = {.size = sizeof(o), .weight = W_NAME(layer, wn), .scale = S_NAME(layer, sn),
				  .rank = 0, .nranks = 1, .cache_bytes = EHT_DISK_NO_CACHE, .io_threads = 4,
				  .prefetch_rows = 1000};
	eht_table *t = NULL;
	CHECK_RC(eht_disk_open(path, &o, &t), 0);
	eht_lookup *lk = t ? engine(t, EHT_LOOKUP_RAW) : NULL;
	if (!lk) {
		eht_table_close(t);
		return;
	}
	enum { N = 1200 };
	const uint64_t rb = EHT_ENGRAM_ROW_BYTES;
	int64_t *a = malloc(N * 8), *b = malloc(N * 8);
	uint8_t *out = malloc(N * rb);
	ref_ids(a, N, rows, rs);
	ref_ids(b, N, rows, rs);
	eht_disk_ticket *ta = NULL, *tb = NULL, *tc = NULL;
	CHECK_RC(eht_disk_prefetch(t, a, EHT_ID_INT64, 0, N, 0, &ta), 0);
	CHECK_RC(eht_disk_prefetch(t, b, EHT_ID_INT64, 0, N, 0, &tb), 0);
	CHECK_RC(eht_disk_prefetch(t, b, EHT_ID_INT64, 0, N, 0, &tc), -EBUSY);
	CHECK(tc == NULL);
	const int64_t *sets[2] = {a, b};
	eht_disk_ticket *tks[2] = {ta, tb};
	for (int k = 0; k < 2; k++) {
		struct eht_disk_stats s0 = {.size = sizeof(s0)}, s1 = {.size = sizeof(s1)};
		CHECK_RC(eht_disk_stats(t, &s0), 0);
		CHECK_RC(eht_lookup_run(lk, sets[k], EHT_ID_INT64, 0, N, out, NULL, EHT_LOOKUP_RUN_OUT_HOST, NULL), 0);
		CHECK_RC(eht_disk_stats(t, &s1), 0);
		int bad = 0;
		for (size_t i = 0; i < N; i++) {
			int64_t id = sets[k][i];
			bool live = id >= 0 && (uint64_t)id < rows;
			for (uint64_t j = 0; j < rb; j++)
				bad += out[i * rb + j] != (live ? ref[(uint64_t)id * rb + j] : 0);
		}
		CHECK(bad == 0);
		CHECK_RC(eht_disk_wait(tks[k]), 0);
		uint64_t staged = eht_disk_ticket_rows(tks[k]);
		CHECK(staged > 0 && staged <= 1000);
		/* Every staged row was served (once per piece of the batch that needs it); the ids past the
		 * first 1000 were read by the lookup itself. */
		CHECK(s1.prefetch_hits - s0.prefetch_hits >= staged);
		CHECK(s1.rows_read > s0.rows_read);
		CHECK_RC(eht_disk_release(tks[k]), 0);
	}
	CHECK_RC(eht_disk_release(ta), -EINVAL); /* released twice */
	CHECK_RC(eht_disk_prefetch(t, a, EHT_ID_INT64, 0, N, 1, &tc), -EINVAL);
	CHECK_RC(eht_disk_prefetch(t, a, 7, 0, N, 0, &tc), -EINVAL);
	CHECK_RC(eht_disk_prefetch(NULL, a, EHT_ID_INT64, 0, N, 0, &tc), -EINVAL);
	/* A ticket still out at close outlives it: it fails from then on and its release frees it
	 * (test_disk_ticket_close checks every case). */
	CHECK_RC(eht_disk_prefetch(t, a, EHT_ID_INT64, 0, 10, 0, &tc), 0);
	CHECK_RC(eht_disk_check(t), 0);
	eht_lookup_destroy(lk);
	CHECK_RC(eht_table_close(t), 0);
	CHECK_RC(eht_disk_release(tc), -EBADF);
	free(a);
	free(b);
	free(out);
}

static void check_open_errors(const char *path)
{
	eht_table *t = (eht_table *)1;
	struct eht_disk_opts o = {.size = sizeof(o), .weight = "model.layers.1.engram.embedding.weight",
				  .scale = "model.layers.1.engram.embedding.scale"};
	CHECK_RC(eht_disk_open(path, NULL, &t), -EINVAL);
	CHECK(t == NULL);
	struct eht_disk_opts b = o;
	b.weight = "no.such.tensor";
	CHECK_RC(eht_disk_open(path, &b, &t), -ENOENT);
	b = o;
	b.scale = "model.layers.14.engram.embedding.scale"; /* 4116 rows against 4099 */
	CHECK_RC(eht_disk_open(path, &b, &t), -EINVAL);
	CHECK(strstr(eht_last_error(), "rows") != NULL);
	b = o;
	b.rank = 4;
	b.nranks = 4;
	CHECK_RC(eht_disk_open(path, &b, &t), -EINVAL);
	b = o;
	b.flags = 0x80;
	CHECK_RC(eht_disk_open(path, &b, &t), -EINVAL);
	b = o;
	b.size = 4;
	CHECK_RC(eht_disk_open(path, &b, &t), -EINVAL);
	b = o;
	b.weight = "model.layers.1.attn.dummy"; /* 2-D, 128-byte rows, 64 rows: mismatched with the scale */
	CHECK_RC(eht_disk_open(path, &b, &t), -EINVAL);
	CHECK_RC(eht_disk_open("/nonexistent/eht/ckpt", &o, &t), -ENOENT);
	/* Not a disk table. */
	uint8_t mem[EHT_ENGRAM_ROW_BYTES * 2] = {0};
	eht_table *m = NULL;
	CHECK_RC(eht_table_wrap(mem, 2, EHT_ENGRAM_ROW_BYTES, -1, "m", &m), 0);
	CHECK_RC(eht_disk_check(m), -EINVAL);
	CHECK_RC(eht_disk_drop_cache(m), -EINVAL);
	eht_table_close(m);
	/* A weight without a scale: rows of the weight alone. */
	b = o;
	b.scale = NULL;
	CHECK_RC(eht_disk_open(path, &b, &t), 0);
	struct eht_table_info ti = {.size = sizeof(ti)};
	if (t) {
		CHECK_RC(eht_table_get_info(t, &ti), 0);
		CHECK(ti.row_bytes == 256 && ti.rows == 4099);
		CHECK_RC(eht_disk_drop_cache(t), 0);
		eht_table_close(t);
	}
}

int main(void)
{
	const char *fx = t_fixtures();
	char single[1024], sharded[1024];
	snprintf(single, sizeof(single), "%s/safetensors/engram_single.safetensors", fx);
	snprintf(sharded, sizeof(sharded), "%s/safetensors/engram_sharded", fx);
	const char *paths[2] = {single, sharded};
	uint64_t rs = 6;
	check_open_errors(single);
	check_open_errors(sharded);
	for (int p = 0; p < 2; p++) {
		for (unsigned li = 0; li < 2; li++) {
			unsigned layer = li ? 14 : 1;
			uint64_t rows = 0, rb = 0;
			uint8_t *ref = ref_table(paths[p], layer, &rows, &rb);
			if (!ref)
				continue;
			CHECK(rows == (layer == 1 ? 4099u : 4116u) && rb == EHT_ENGRAM_ROW_BYTES);
			int64_t *ids = malloc(N_IDS * sizeof(int64_t));
			ref_ids(ids, N_IDS, rows, &rs);
			static const uint32_t tps[] = {1, 2, 4, 8};
			for (size_t k = 0; k < 4; k++) {
				check_tp(paths[p], layer, ref, rows, rb, tps[k], 0, 0, ids, N_IDS);
				if (li == 0) {
					check_tp(paths[p], layer, ref, rows, rb, tps[k], EHT_DISK_PREAD, 0, ids, N_IDS);
					if (t_uring_works())
						check_tp(paths[p], layer, ref, rows, rb, tps[k], EHT_DISK_URING, EHT_DISK_NO_CACHE,
							 ids, N_IDS);
					check_tp(paths[p], layer, ref, rows, rb, tps[k], 0, EHT_DISK_NO_CACHE, ids, N_IDS);
				}
			}
			if (li == 0) {
				check_bf16(paths[p], layer, ref, rows, &rs);
				check_prefetch(paths[p], layer, ref, rows, &rs);
			}
			free(ids);
			free(ref);
		}
	}
	return t_done();
}
