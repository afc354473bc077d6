/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_lookup_dequant.c: eht_lookup_dequant, the deferred bf16 dequant of raw lookups. Raw rows
 * looked up with ids in GPU memory (default mode and background mode), dequantized on the stream,
 * bit-identical to the CPU reference (dead ids: zero rows) at several sizes; the lookup and the
 * dequant captured together in one CUDA graph and replayed with new ids; and the refusals (host
 * memory, a misaligned out). Exit 77 without a GPU. */
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
