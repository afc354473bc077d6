/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_lookup_strategies.c: every strategy (DIRECT, SORTED, HOST, AUTO) on the GPU, raw and bf16,
 * ids in host and GPU memory, both id types, offsets, dead ids, 0/1/small/multi-tile/split batches,
 * against the CPU reference, into outputs poisoned with 0xAB (host ids scribbled over as soon as the
 * call returns); CUDA-graph capture of every strategy. Exit 77 without a GPU. */
#include <string.h>

#include "gpu/dev.h"
#include "testutil.h"

#define RB EHT_ENGRAM_ROW_BYTES

static uint8_t *g_table;
static uint64_t g_rows;

static void ref_row(int64_t r, int fmt, uint8_t *dst)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	if (r < 0 || (uint64_t)r >= g_rows)
		memset(dst, 0, ob);
	else if (fmt == EHT_LOOKUP_RAW)
		memcpy(dst, g_table + (size_t)r * RB, RB);
	else
		eht_engram_dequant_row(g_table + (size_t)r * RB, (uint16_t *)(void *)dst);
}

static int cu(int rc)
{
	if (rc)
		fprintf(stderr, "driver call failed: %s\n", eht_last_error());
	return rc;
}

static void check_run(eht_lookup *lk, int strategy, int fmt, size_t n, int id64, int64_t off, int ids_on_gpu,
		      uint64_t *rs, eht_stream s)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB, isz = id64 ? 8 : 4;
	void *ids = malloc(n * 8 + 8), *kept = malloc(n * 8 + 8);
	uint8_t *out = malloc(n * ob + 64), *want = malloc(ob);
	uint64_t want_dead = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t x = t_rand(rs);
		int64_t id;
		if (x % 11 == 0)
			id = -1 - (int64_t)(x % 5) - off;
		else if (x % 19 == 0)
			id = (int64_t)g_rows + (int64_t)(x % 1000) - off;
		else if (x % 4 == 0 && i)
			id = id64 ? ((int64_t *)ids)[i - 1] : ((int32_t *)ids)[i - 1];
		else if (x % 7 == 0)
			id = (int64_t)(x % 64) - off; /* hot rows: many duplicates */
		else
			id = (int64_t)(x % g_rows) - off;
		if (id64)
			((int64_t *)ids)[i] = id;
		else
			((int32_t *)ids)[i] = (int32_t)id;
		want_dead += id + off < 0 || (uint64_t)(id + off) >= g_rows;
	}
	eht_dptr d_out = 0, d_ids = 0;
	if (cu(eht_dev_alloc(&d_out, n * ob + 64)) || cu(eht_dev_alloc(&d_ids, n * isz + 8))) {
		t_failures++;
		goto out;
	}
	cu(eht_dev_memset8(d_out, 0xab, n * ob + 64));
	if (ids_on_gpu && n)
		cu(eht_dev_h2d(d_ids, ids, n * isz));
	/* Both may still be in flight on the legacy stream (a memset always, a copy from pageable memory
	 * can return before its DMA lands), and s does not wait for it (non-blocking). */
	cu(eht_dev_sync());
	uint64_t dead = 777;
	const void *pid = ids_on_gpu ? (const void *)(uintptr_t)d_ids : ids;
	int rc = eht_lookup_run(lk, pid, id64 ? EHT_ID_INT64 : EHT_ID_INT32, off, n, (void *)(uintptr_t)d_out, s,
				EHT_LOOKUP_RUN_STRATEGY(strategy), off ? NULL : &dead);
	if (rc) {
		fprintf(stderr, "run %s n %zu: %s\n", eht_lookup_strategy_name(strategy), n, eht_last_error());
		t_failures++;
		goto out;
	}
	if (ids_on_gpu) { /* ids changed after the call must not matter once the stream passed it */
		cu(eht_dev_stream_sync(s));
	} else if (n) { /* host ids are the caller's again once the call returns: scribbled before the sync */
		memcpy(kept, ids, n * isz);
		memset(ids, 0x5a, n * isz);
		void *tmp = ids; /* the reference reads the ids as they were */
		ids = kept;
		kept = tmp;
	}
	cu(eht_dev_stream_sync(s));
	cu(eht_dev_d2h(out, d_out, n * ob + 64));
	if (off) /* no dead count asked for: the call need not wait for the stream (read now instead) */
		dead = eht_lookup_last_dead_count(lk);
	if (dead != want_dead || eht_lookup_last_dead_count(lk) != want_dead)
		fprintf(stderr, "%s fmt %d n %zu id64 %d gpu-ids %d off %lld: dead %llu (last %llu), want %llu\n",
			eht_lookup_strategy_name(strategy), fmt, n, id64, ids_on_gpu, (long long)off,
			(unsigned long long)dead, (unsigned long long)eht_lookup_last_dead_count(lk),
			(unsigned long long)want_dead);
	CHECK(dead == want_dead);
	CHECK(eht_lookup_last_dead_count(lk) == want_dead);
	int bad = 0;
	size_t nbad = 0, first_bad = 0, last_bad = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t r = (id64 ? ((int64_t *)ids)[i] : ((int32_t *)ids)[i]) + off;
		ref_row(r, fmt, want);
		if (memcmp(out + i * ob, want, ob)) {
			if (!nbad++)
				first_bad = i;
			last_bad = i;
		}
	}
	if (nbad)
		fprintf(stderr, "%s fmt %d n %zu: %zu rows differ, first %zu, last %zu\n", eht_lookup_strategy_name(strategy),
			fmt, n, nbad, first_bad, last_bad);
	for (size_t i = 0; i < n && bad < 3; i++) {
		int64_t r = (id64 ? ((int64_t *)ids)[i] : ((int32_t *)ids)[i]) + off;
		ref_row(r, fmt, want);
		if (memcmp(out + i * ob, want, ob)) {
			fprintf(stderr, "%s fmt %d n %zu id64 %d gpu-ids %d: row %zu (table row %lld) differs\n",
				eht_lookup_strategy_name(strategy), fmt, n, id64, ids_on_gpu, i, (long long)r);
			bad++;
		}
	}
	CHECK(bad == 0);
	bad = 0; /* nothing past the output may be written */
	for (size_t i = 0; i < 64; i++)
		bad += out[n * ob + i] != 0xab;
	CHECK(bad == 0);
out:
	if (d_out)
		eht_dev_free(d_out);
	if (d_ids)
		eht_dev_free(d_ids);
	free(ids);
	free(kept);
	free(out);
	free(want);
}

static void check_capture(eht_lookup *lk, eht_stream s)
{
	enum { N = 3000 };
	static int32_t ids[N];
	uint64_t rs = 7;
	for (int i = 0; i < N; i++)
		ids[i] = (int32_t)(t_rand(&rs) % (g_rows + 100)) - 50;
	eht_dptr d_ids = 0, d_out = 0;
	if (cu(eht_dev_alloc(&d_ids, sizeof(ids))) || cu(eht_dev_alloc(&d_out, N * RB))) {
		t_failures++;
		return;
	}
	cu(eht_dev_h2d(d_ids, ids, sizeof(ids)));
	cu(eht_dev_sync()); /* the copy's DMA may still be in flight; s does not wait */
	for (int strategy = EHT_LOOKUP_DIRECT; strategy < eht_lookup_strategy_count(); strategy++) {
		eht_graph g = NULL;
		eht_graph_exec ge = NULL;
		CHECK_RC(eht_dev_capture_begin(s, EHT_CAPTURE_THREAD_LOCAL), 0);
		int rc = eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT32, 0, N, (void *)(uintptr_t)d_out, s,
					EHT_LOOKUP_RUN_STRATEGY(strategy), NULL);
		int erc = eht_dev_capture_end(s, &g);
		{ /* every strategy is capturable (HOST: the stream triggers the CPU gather) */
			CHECK_RC(rc, 0);
			CHECK_RC(erc, 0);
			cu(eht_dev_memset8(d_out, 0xab, N * RB));
			cu(eht_dev_sync()); /* s is non-blocking: the poison first */
			if (g && !cu(eht_dev_graph_instantiate(&ge, g))) {
				CHECK_RC(eht_dev_graph_launch(ge, s), 0);
				CHECK_RC(eht_dev_stream_sync(s), 0);
				uint8_t *out = malloc(N * RB), want[RB];
				cu(eht_dev_d2h(out, d_out, N * RB));
				int bad = 0;
				for (int i = 0; i < N; i++) {
					ref_row(ids[i], EHT_LOOKUP_RAW, want);
					bad += memcmp(out + (size_t)i * RB, want, RB) != 0;
				}
				CHECK(bad == 0);
				free(out);
				eht_dev_graph_exec_destroy(ge);
			}
		}
		if (g)
			eht_dev_graph_destroy(g);
	}
	eht_dev_free(d_ids);
	eht_dev_free(d_out);
}

int main(void)
{
	if (!t_have_gpu())
		t_skip("no GPU");
	uint64_t rs = 99;
	g_rows = 100000;
	g_table = t_rand_rows(g_rows, RB, &rs);
	for (size_t r = 0; r < g_rows; r += 97) { /* NaN weights, NaN / overflowing / tiny scales */
		g_table[r * RB + 3] = 0x7f;
		g_table[r * RB + 256] = 0xff;
		g_table[r * RB + 257] = 250;
		g_table[r * RB + 258] = 0;
	}
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(g_table, g_rows, RB, 0, "gpu-test", &t), 0);
	struct eht_table_info ti = {.size = sizeof(ti)};
	if (!t || eht_table_get_info(t, &ti) || !ti.device_ptr) {
		fprintf(stderr, "cannot pin the test table: %s\n", eht_last_error());
		return 1;
	}
	eht_stream s = NULL;
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), 0);
	static const size_t ns[] = {0, 1, 7, 100, 6144, 8192, 8193, 20000, 50001};
	for (int fmt = 0; fmt < 2; fmt++) {
		/* max_batch 20000 splits the largest batch; staging of 3000 rows forces several halves. */
		struct eht_lookup_opts o = {.size = sizeof(o), .format = fmt, .device = 0, .numa_node = -1,
					    .threads = 4, .max_batch = 20000, .staging_bytes = 3000 * RB};
		eht_lookup *lk = NULL;
		CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
		if (!lk)
			break;
		for (int strategy = EHT_LOOKUP_AUTO; strategy < eht_lookup_strategy_count(); strategy++)
			for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
				for (int v = 0; v < 4; v++) {
					int id64 = v & 1, gpu_ids = v >> 1;
					check_run(lk, strategy, fmt, ns[k], id64, 0, gpu_ids, &rs, s);
					check_run(lk, strategy, fmt, ns[k], id64, 1000, gpu_ids, &rs, v & 1 ? s : NULL);
				}
		if (fmt == EHT_LOOKUP_RAW)
			check_capture(lk, s);
		eht_lookup_destroy(lk);
	}
	/* HOST with the sorted CPU path (what the disk tier uses) into GPU memory. */
	{
		struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_HOST_SORT, .strategy = EHT_LOOKUP_HOST,
					    .format = EHT_LOOKUP_BF16, .device = 0, .numa_node = -1, .threads = 3,
					    .max_batch = 5000, .staging_bytes = 1000 * RB};
		eht_lookup *lk = NULL;
		CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
		for (size_t k = 0; lk && k < sizeof(ns) / sizeof(ns[0]); k++)
			check_run(lk, EHT_LOOKUP_HOST, EHT_LOOKUP_BF16, ns[k], 1, -5, 0, &rs, s);
		eht_lookup_destroy(lk);
	}
	eht_dev_stream_destroy(s);
	eht_table_close(t);
	free(g_table);
	return t_done();
}
