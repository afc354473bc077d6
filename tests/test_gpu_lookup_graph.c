/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_lookup_graph.c: the engine path. Every strategy (DIRECT, SORTED where the GPU reads the
 * table, HOST, AUTO) on the memory, host-NUMA, pinned region and disk tiers, raw and bf16, with ids in
 * GPU memory: eager, then captured once in a CUDA graph and replayed with new ids written into the same
 * id buffer (dead ids included): bit-identical to the CPU reference, dead ids counted on the device
 * (eht_lookup_last_dead_count after the stream passed). Also host ids read by a replay. Exit 77
 * without a GPU. */
#include <string.h>

#include "cuda/cu_driver.h"
#include "disk_ref.h"
#include "testutil.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define NMAX 20000

static const uint8_t *g_ref;
static uint64_t g_rows;

static int cu(int rc)
{
	if (rc) {
		fprintf(stderr, "driver call failed: %s\n", eht_last_error());
		t_failures++;
	}
	return rc;
}

static void make_ids(int64_t *ids, size_t n, uint64_t *rs)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = t_rand(rs);
		if (x % 13 == 0)
			ids[i] = -1 - (int64_t)(x % 3);
		else if (x % 17 == 0)
			ids[i] = (int64_t)g_rows + (int64_t)(x % 9);
		else if (x % 5 == 0 && i)
			ids[i] = ids[i - 1];
		else
			ids[i] = (int64_t)(x % g_rows);
	}
}

/* Compares out (GPU) with the reference for ids; returns mismatching rows; *dead gets the dead ids. */
static size_t compare(CUdeviceptr d_out, const int64_t *ids, size_t n, int fmt, uint64_t *dead)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB, bad = 0;
	uint8_t *got = malloc(n * ob), want[512];
	*dead = 0;
	if (cu(EHT_CU_CHECK(cuMemcpyDtoH(got, d_out, n * ob)))) {
		free(got);
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t r = ids[i];
		if (r < 0 || (uint64_t)r >= g_rows) {
			memset(want, 0, ob);
			(*dead)++;
		} else if (fmt == EHT_LOOKUP_BF16) {
			eht_engram_dequant_row(g_ref + (uint64_t)r * RB, (uint16_t *)(void *)want);
		} else {
			memcpy(want, g_ref + (uint64_t)r * RB, RB);
		}
		bad += memcmp(got + i * ob, want, ob) != 0;
	}
	free(got);
	return bad;
}

static void check_engine(const char *tier, eht_lookup *lk, int strategy, int fmt, CUstream s, uint64_t *rs)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	int64_t *ids = malloc(NMAX * sizeof(int64_t));
	int64_t *hids = NULL;
	CUdeviceptr d_ids = 0, d_out = 0;
	if (cu(EHT_CU_CHECK(cuMemAlloc(&d_ids, NMAX * 8))) || cu(EHT_CU_CHECK(cuMemAlloc(&d_out, NMAX * ob))) ||
	    cu(EHT_CU_CHECK(cuMemHostAlloc((void **)&hids, NMAX * 8, 0))))
		goto out;
	/* Eager, ids in GPU memory. */
	static const size_t ns[] = {1, 777, 6144, NMAX};
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		size_t n = ns[k];
		make_ids(ids, n, rs);
		cu(EHT_CU_CHECK(cuMemcpyHtoD(d_ids, ids, n * 8)));
		cu(EHT_CU_CHECK(cuMemsetD8(d_out, 0xab, n * ob)));
		cu(EHT_CU_CHECK(cuCtxSynchronize()));
		int rc = eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_out, s,
					EHT_LOOKUP_RUN_STRATEGY(strategy), NULL);
		if (rc) {
			fprintf(stderr, "%s %s fmt %d eager n %zu: %s\n", tier, eht_lookup_strategy_name(strategy), fmt, n,
				eht_last_error());
			t_failures++;
			continue;
		}
		/* The ids may change once the stream passed the call; the output must not. */
		cu(EHT_CU_CHECK(cuStreamSynchronize(s)));
		cu(EHT_CU_CHECK(cuMemsetD8(d_ids, 0, n * 8)));
		uint64_t dead = 0;
		size_t bad = compare(d_out, ids, n, fmt, &dead);
		if (bad || dead != eht_lookup_last_dead_count(lk))
			fprintf(stderr, "%s %s fmt %d eager n %zu: %zu rows differ, dead %llu want %llu\n", tier,
				eht_lookup_strategy_name(strategy), fmt, n, bad,
				(unsigned long long)eht_lookup_last_dead_count(lk), (unsigned long long)dead);
		CHECK(bad == 0);
		CHECK(dead == eht_lookup_last_dead_count(lk));
	}
	/* Captured once, replayed with new ids in the same buffers: GPU ids, then host ids (pinned). */
	for (int host_ids = 0; host_ids < 2; host_ids++) {
		if (host_ids && (strategy == EHT_LOOKUP_DIRECT || strategy == EHT_LOOKUP_SORTED))
			break; /* GPU strategies read ids on the GPU only */
		const size_t n = 5000;
		CUgraph g = NULL;
		CUgraphExec ge = NULL;
		make_ids(ids, n, rs);
		cu(EHT_CU_CHECK(cuMemcpyHtoD(d_ids, ids, n * 8)));
		cu(EHT_CU_CHECK(cuCtxSynchronize()));
		const void *pid = host_ids ? (const void *)hids : (const void *)(uintptr_t)d_ids;
		if (cu(EHT_CU_CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL))))
			break;
		int rc = eht_lookup_run(lk, pid, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_out, s,
					EHT_LOOKUP_RUN_STRATEGY(strategy) |
						(host_ids ? EHT_LOOKUP_RUN_IDS_HOST : EHT_LOOKUP_RUN_IDS_DEVICE),
					NULL);
		int erc = EHT_CU_CHECK(cuStreamEndCapture(s, &g));
		if (rc || erc) {
			fprintf(stderr, "%s %s fmt %d capture (host ids %d): %s\n", tier, eht_lookup_strategy_name(strategy),
				fmt, host_ids, eht_last_error());
			t_failures++;
			if (g)
				eht_cu.cuGraphDestroy(g);
			continue;
		}
		if (cu(EHT_CU_CHECK(cuGraphInstantiateWithFlags(&ge, g, 0)))) {
			eht_cu.cuGraphDestroy(g);
			continue;
		}
		for (int replay = 0; replay < 4; replay++) {
			make_ids(ids, n, rs); /* new ids every replay, written into the captured buffer */
			if (host_ids)
				memcpy(hids, ids, n * 8);
			else
				cu(EHT_CU_CHECK(cuMemcpyHtoD(d_ids, ids, n * 8)));
			cu(EHT_CU_CHECK(cuMemsetD8(d_out, 0xab, n * ob)));
			cu(EHT_CU_CHECK(cuCtxSynchronize()));
			if (cu(EHT_CU_CHECK(cuGraphLaunch(ge, s))) || cu(EHT_CU_CHECK(cuStreamSynchronize(s))))
				break;
			uint64_t dead = 0;
			size_t bad = compare(d_out, ids, n, fmt, &dead);
			if (bad || dead != eht_lookup_last_dead_count(lk))
				fprintf(stderr, "%s %s fmt %d replay %d (host ids %d): %zu rows differ, dead %llu want %llu\n",
					tier, eht_lookup_strategy_name(strategy), fmt, replay, host_ids, bad,
					(unsigned long long)eht_lookup_last_dead_count(lk), (unsigned long long)dead);
			CHECK(bad == 0);
			CHECK(dead == eht_lookup_last_dead_count(lk));
		}
		eht_cu.cuGraphExecDestroy(ge);
		eht_cu.cuGraphDestroy(g);
	}
	/* A dead-count pointer cannot be captured: a clear error, and the capture is still usable. */
	{
		uint64_t dead = 0;
		CUgraph g = NULL;
		if (!cu(EHT_CU_CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)))) {
			CHECK(eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, 10, (void *)(uintptr_t)d_out, s,
					     EHT_LOOKUP_RUN_STRATEGY(strategy), &dead) == -EOPNOTSUPP);
			cu(EHT_CU_CHECK(cuStreamEndCapture(s, &g)));
			if (g)
				eht_cu.cuGraphDestroy(g);
		}
	}
out:
	if (hids)
		eht_cu.cuMemFreeHost(hids);
	if (d_ids)
		eht_cu.cuMemFree(d_ids);
	if (d_out)
		eht_cu.cuMemFree(d_out);
	free(ids);
}

static void check_table(const char *tier, eht_table *t, CUstream s, uint64_t *rs)
{
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_table_get_info(t, &ti), 0);
	for (int fmt = 0; fmt < 2; fmt++)
		for (int strategy = EHT_LOOKUP_AUTO; strategy <= EHT_LOOKUP_HOST; strategy++) {
			if ((strategy == EHT_LOOKUP_DIRECT || strategy == EHT_LOOKUP_SORTED) && !ti.device_ptr)
				continue;
			struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strategy, .format = fmt, .device = 0,
						    .numa_node = -1, .threads = 4, .max_batch = 8192};
			eht_lookup *lk = NULL;
			CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
			if (!lk)
				continue;
			check_engine(tier, lk, strategy, fmt, s, rs);
			eht_lookup_destroy(lk);
		}
	fprintf(stderr, "tier %s done\n", tier);
}

int main(void)
{
	if (!t_have_gpu())
		t_skip("no GPU");
	if (eht_cu_use_device(0))
		t_skip("cannot use GPU 0");
	CUstream s = NULL;
	CHECK_RC(EHT_CU_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)), 0);
	uint64_t rs = 3;

	/* Memory, host-NUMA and pinned-region tables with the same random rows. */
	g_rows = 60000;
	uint8_t *ref = malloc(g_rows * RB);
	for (size_t i = 0; i < g_rows * RB; i++)
		ref[i] = (uint8_t)t_rand(&rs);
	g_ref = ref;
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(ref, g_rows, RB, 0, "graph-mem", &t), 0);
	if (t)
		check_table("memory", t, s, &rs);
	eht_table_close(t);

	eht_group *grp = NULL;
	CHECK_RC(eht_group_create_single(&grp), 0);
	static const int tiers[] = {EHT_TIER_HOST_NUMA, EHT_TIER_REGION_PINNED};
	static const char *names[] = {"host-numa", "region-pinned"};
	for (int k = 0; grp && k < 2; k++) {
		struct eht_share_opts so = {.size = sizeof(so), .tier = tiers[k], .device = 0, .row_bytes = RB,
					    .name = "eht-test-graph", .flags = EHT_SHARE_NO_RESERVE};
		t = NULL;
		int rc = eht_table_share(g_rows * RB, grp, &so, &t);
		if (rc) {
			fprintf(stderr, "tier %s not available here (%s): skipped\n", names[k], eht_last_error());
			continue;
		}
		struct eht_table_info ti = {.size = sizeof(ti)};
		CHECK_RC(eht_table_get_info(t, &ti), 0);
		memcpy(ti.host, ref, g_rows * RB);
		check_table(names[k], t, s, &rs);
		eht_table_close(t);
	}
	eht_group_destroy(grp);
	free(ref);

	/* Disk tier (the fixture checkpoint). */
	char path[1024], wn[128], sn[128];
	snprintf(path, sizeof(path), "%s/safetensors/engram_single.safetensors", t_fixtures());
	uint64_t rb = 0;
	uint8_t *dref = ref_table(path, 1, &g_rows, &rb);
	if (dref && rb == RB) {
		g_ref = dref;
		struct eht_disk_opts o = {.size = sizeof(o), .weight = W_NAME(1, wn), .scale = S_NAME(1, sn)};
		t = NULL;
		CHECK_RC(eht_disk_open(path, &o, &t), 0);
		if (t)
			check_table("disk", t, s, &rs);
		eht_table_close(t);
	}
	free(dref);
	eht_cu.cuStreamDestroy(s);
	return t_done();
}
