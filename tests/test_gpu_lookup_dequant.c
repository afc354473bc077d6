/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_lookup_dequant.c: eht_lookup_dequant, the deferred bf16 dequant of raw lookups. Raw rows
 * looked up with ids in GPU memory (default mode and background mode), dequantized on the stream,
 * bit-identical to the CPU reference (dead ids: zero rows) at several sizes; the lookup and the
 * dequant captured together in one CUDA graph and replayed with new ids; every (weight byte, scale
 * byte) pair through eht_lookup_dequant and through each strategy's bf16 lookup (the kernels' e4m3
 * conversion, NaN, subnormal and overflow included); and the refusals (host memory, a misaligned
 * out). Exit 77 without a GPU. */
#include <string.h>

#include "gpu_lookup_ref.h"
#include "testutil.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define NMAX 20000

static struct t_lookup_ref g_lref;

/* Looks n ids up raw into d_raw and dequantizes them into d_out on s (no sync). */
static int raw_then_dequant(eht_lookup *lk, eht_dptr d_ids, size_t n, eht_dptr d_raw, eht_dptr d_out, eht_stream s)
{
	int rc = eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_raw, s,
				EHT_LOOKUP_RUN_IDS_DEVICE | EHT_LOOKUP_RUN_OUT_DEVICE, NULL);
	return rc ? rc : eht_lookup_dequant(lk, (void *)(uintptr_t)d_raw, n, (void *)(uintptr_t)d_out, s);
}

static void check_engine(eht_lookup *lk, const char *what, eht_stream s, eht_dptr d_ids, eht_dptr d_raw,
			 eht_dptr d_out, int64_t *ids, uint64_t *rs)
{
	static const size_t ns[] = {1, 777, 6144, NMAX};
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		size_t n = ns[k];
		t_lookup_ids(&g_lref, ids, n, rs);
		t_cu(eht_dev_h2d(d_ids, ids, n * 8));
		t_cu(eht_dev_memset8(d_out, 0xab, n * 512));
		t_cu(eht_dev_memset8(d_raw, 0xcd, n * RB));
		/* (the memsets run on the legacy stream, which s does not wait for) */
		t_cu(eht_dev_sync());
		CHECK_RC(raw_then_dequant(lk, d_ids, n, d_raw, d_out, s), 0);
		t_cu(eht_dev_stream_sync(s));
		uint64_t dead = 0;
		size_t bad = t_lookup_compare(&g_lref, d_out, ids, n, EHT_LOOKUP_BF16, &dead);
		if (bad) /* which half broke: the raw lookup or its dequant */
			fprintf(stderr, "%s: %zu of %zu rows differ (raw rows: %zu differ)\n", what, bad, n,
				t_lookup_compare(&g_lref, d_raw, ids, n, EHT_LOOKUP_RAW, &dead));
		CHECK(bad == 0);
	}
	/* Lookup and dequant in one graph, replayed with new ids written into its id buffer. */
	const size_t n = 6144;
	t_lookup_ids(&g_lref, ids, n, rs);
	t_cu(eht_dev_h2d(d_ids, ids, n * 8));
	t_cu(eht_dev_sync());
	eht_graph g = NULL;
	eht_graph_exec ge = NULL;
	if (t_cu(eht_dev_capture_begin(s, EHT_CAPTURE_GLOBAL)))
		return;
	int rc = raw_then_dequant(lk, d_ids, n, d_raw, d_out, s);
	int erc = eht_dev_capture_end(s, &g);
	CHECK_RC(rc, 0);
	CHECK_RC(erc, 0);
	if (rc || erc || t_cu(eht_dev_graph_instantiate(&ge, g))) {
		if (g)
			eht_dev_graph_destroy(g);
		return;
	}
	for (int replay = 0; replay < 3; replay++) {
		t_lookup_ids(&g_lref, ids, n, rs);
		t_cu(eht_dev_h2d(d_ids, ids, n * 8));
		t_cu(eht_dev_memset8(d_out, 0xab, n * 512));
		t_cu(eht_dev_sync());
		if (t_cu(eht_dev_graph_launch(ge, s)) || t_cu(eht_dev_stream_sync(s)))
			break;
		uint64_t dead = 0;
		size_t bad = t_lookup_compare(&g_lref, d_out, ids, n, EHT_LOOKUP_BF16, &dead);
		if (bad)
			fprintf(stderr, "%s: replay %d: %zu rows differ\n", what, replay, bad);
		CHECK(bad == 0);
	}
	eht_dev_graph_exec_destroy(ge);
	eht_dev_graph_destroy(g);
}

/* 256 rows, row k: weight bytes 0..255 with scale byte k for all eight groups, so that the rows
 * hold every (weight, scale) pair the dequant can meet. Each is dequantized from GPU memory by
 * eht_lookup_dequant, then looked up as bf16 from a table of them by each strategy (ids in GPU
 * memory, every row four times in a shuffled order); all compared with the CPU reference. */
static void check_every_pair(eht_stream s, eht_dptr d_ids, eht_dptr d_raw, eht_dptr d_out, uint64_t *rs)
{
	enum { K = 256, N = 4 * K };
	static _Alignas(4096) uint8_t rows[K * RB];
	static int64_t ids[N];
	for (int k = 0; k < K; k++) {
		for (int b = 0; b < 256; b++)
			rows[k * RB + b] = (uint8_t)b;
		memset(rows + k * RB + 256, k, RB - 256);
	}
	for (int i = 0; i < N; i++)
		ids[i] = i % K;
	for (int i = N - 1; i > 0; i--) {
		int j = (int)(t_rand(rs) % (uint64_t)(i + 1));
		int64_t x = ids[i];
		ids[i] = ids[j];
		ids[j] = x;
	}
	struct t_lookup_ref ref = {.rows = rows, .nrows = K};
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(rows, K, RB, 0, "dequant-pairs", &t), 0);
	static const int strategies[] = {EHT_LOOKUP_AUTO, EHT_LOOKUP_DIRECT, EHT_LOOKUP_SORTED, EHT_LOOKUP_HOST};
	for (size_t k = 0; t && k < sizeof(strategies) / sizeof(strategies[0]); k++) {
		struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strategies[k], .format = EHT_LOOKUP_BF16,
					    .device = 0, .numa_node = -1, .threads = 2, .max_batch = N};
		eht_lookup *lk = NULL;
		CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
		if (!lk)
			continue;
		const char *name = eht_lookup_strategy_name(strategies[k]);
		uint64_t dead = 0;
		size_t bad;
		if (k == 0) { /* the dequant kernel alone: row i of d_raw is row i */
			int64_t seq[K];
			for (int i = 0; i < K; i++)
				seq[i] = i;
			t_cu(eht_dev_h2d(d_raw, rows, sizeof(rows)));
			t_cu(eht_dev_memset8(d_out, 0xab, K * 512));
			t_cu(eht_dev_sync());
			CHECK_RC(eht_lookup_dequant(lk, (void *)(uintptr_t)d_raw, K, (void *)(uintptr_t)d_out, s), 0);
			t_cu(eht_dev_stream_sync(s));
			bad = t_lookup_compare(&ref, d_out, seq, K, EHT_LOOKUP_BF16, &dead);
			if (bad)
				fprintf(stderr, "every pair, eht_lookup_dequant: %zu of %d rows differ\n", bad, K);
			CHECK(bad == 0);
		}
		t_cu(eht_dev_h2d(d_ids, ids, sizeof(ids)));
		t_cu(eht_dev_memset8(d_out, 0xab, N * 512));
		t_cu(eht_dev_sync());
		CHECK_RC(eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, N, (void *)(uintptr_t)d_out, s,
					EHT_LOOKUP_RUN_IDS_DEVICE | EHT_LOOKUP_RUN_OUT_DEVICE, NULL),
			 0);
		t_cu(eht_dev_stream_sync(s));
		bad = t_lookup_compare(&ref, d_out, ids, N, EHT_LOOKUP_BF16, &dead);
		if (bad)
			fprintf(stderr, "every pair, %s bf16 lookup: %zu of %d rows differ\n", name, bad, N);
		CHECK(bad == 0);
		eht_lookup_destroy(lk);
	}
	eht_table_close(t);
}

int main(void)
{
	eht_stream s = t_gpu_test_stream();
	uint64_t rs = 11;
	eht_table *t = t_lookup_ref_table(&g_lref, 50000, &rs, "dequant-mem");
	int64_t *ids = malloc(NMAX * sizeof(int64_t));
	eht_dptr d_ids = 0, d_raw = 0, d_out = 0;
	if (!ids || t_cu(eht_dev_alloc(&d_ids, NMAX * 8)) || t_cu(eht_dev_alloc(&d_raw, NMAX * RB)) ||
	    t_cu(eht_dev_alloc(&d_out, NMAX * 512 + 16)))
		goto out;
	for (int bg = 0; t && bg < 2; bg++) {
		if (bg && !eht_dev_has(EHT_DEV_FEAT_MEM_OPS))
			break; /* (the background mode needs stream memory operations) */
		struct eht_lookup_opts o = {.size = sizeof(o), .flags = bg ? EHT_LOOKUP_BACKGROUND : 0,
					    .strategy = bg ? EHT_LOOKUP_HOST : EHT_LOOKUP_AUTO, .format = EHT_LOOKUP_RAW,
					    .device = 0, .numa_node = -1, .threads = 4, .max_batch = NMAX};
		eht_lookup *lk = NULL;
		CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
		if (!lk)
			continue;
		CHECK(eht_lookup_background(lk) == bg);
		check_engine(lk, bg ? "background HOST raw" : "default AUTO raw", s, d_ids, d_raw, d_out, ids, &rs);
		/* Refusals: host memory, a misaligned out, NULLs; no rows is no work. */
		uint8_t host_rows[2 * RB];
		CHECK_RC(eht_lookup_dequant(lk, host_rows, 2, (void *)(uintptr_t)d_out, s), -EINVAL);
		CHECK(strstr(eht_last_error(), "raw is not GPU memory") != NULL);
		CHECK_RC(eht_lookup_dequant(lk, (void *)(uintptr_t)d_raw, 2, (void *)(uintptr_t)(d_out + 2), s), -EINVAL);
		CHECK_RC(eht_lookup_dequant(lk, NULL, 2, (void *)(uintptr_t)d_out, s), -EINVAL);
		CHECK_RC(eht_lookup_dequant(lk, NULL, 0, NULL, s), 0);
		eht_lookup_destroy(lk);
	}
	check_every_pair(s, d_ids, d_raw, d_out, &rs);
out:
	eht_dev_free(d_ids);
	eht_dev_free(d_raw);
	eht_dev_free(d_out);
	eht_table_close(t);
	eht_dev_stream_destroy(s);
	free(ids);
	free((void *)g_lref.rows);
	return t_done();
}
