/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_lookup_graph.c: the engine path. Every strategy (DIRECT, SORTED where the GPU reads the
 * table, HOST, AUTO) on the memory, host-NUMA, pinned region and disk tiers, raw and bf16, with ids in
 * GPU memory: eager, then captured once in a CUDA graph and replayed with new ids written into the same
 * id buffer (dead ids included): bit-identical to the CPU reference, dead ids counted on the device
 * (eht_lookup_last_dead_count after the stream passed). Also host ids read by a replay. Exit 77
 * without a GPU. */
#include <string.h>

#include "disk_ref.h"
#include "gpu_lookup_ref.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define NMAX 20000

/* The table as the CPU reference sees it (set by main). */
static struct t_lookup_ref g_lref;

static void check_engine(const char *tier, eht_lookup *lk, int strategy, int fmt, CUstream s, uint64_t *rs)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	int64_t *ids = malloc(NMAX * sizeof(int64_t));
	int64_t *hids = NULL;
	CUdeviceptr d_ids = 0, d_out = 0;
	if (t_cu(EHT_CU_CHECK(cuMemAlloc(&d_ids, NMAX * 8))) || t_cu(EHT_CU_CHECK(cuMemAlloc(&d_out, NMAX * ob))) ||
	    t_cu(EHT_CU_CHECK(cuMemHostAlloc((void **)&hids, NMAX * 8, 0))))
		goto out;
	/* Eager, ids in GPU memory. */
	t_lookup_eager_gpu_ids(&g_lref, tier, lk, strategy, fmt, s, ids, d_ids, d_out, NMAX, rs);
	/* Captured once, replayed with new ids in the same buffers: GPU ids, then host ids (pinned). */
	for (int host_ids = 0; host_ids < 2; host_ids++) {
		if (host_ids && (strategy == EHT_LOOKUP_DIRECT || strategy == EHT_LOOKUP_SORTED))
			break; /* GPU strategies read ids on the GPU only */
		const size_t n = 5000;
		CUgraph g = NULL;
		CUgraphExec ge = NULL;
		t_lookup_ids(&g_lref, ids, n, rs);
		t_cu(EHT_CU_CHECK(cuMemcpyHtoD(d_ids, ids, n * 8)));
		t_cu(EHT_CU_CHECK(cuCtxSynchronize()));
		const void *pid = host_ids ? (const void *)hids : (const void *)(uintptr_t)d_ids;
		if (t_cu(EHT_CU_CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL))))
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
		if (t_cu(EHT_CU_CHECK(cuGraphInstantiateWithFlags(&ge, g, 0)))) {
			eht_cu.cuGraphDestroy(g);
			continue;
		}
		for (int replay = 0; replay < 4; replay++) {
			t_lookup_ids(&g_lref, ids, n, rs); /* new ids every replay, written into the captured buffer */
			if (host_ids)
				memcpy(hids, ids, n * 8);
			else
				t_cu(EHT_CU_CHECK(cuMemcpyHtoD(d_ids, ids, n * 8)));
			t_cu(EHT_CU_CHECK(cuMemsetD8(d_out, 0xab, n * ob)));
			t_cu(EHT_CU_CHECK(cuCtxSynchronize()));
			if (t_cu(EHT_CU_CHECK(cuGraphLaunch(ge, s))) || t_cu(EHT_CU_CHECK(cuStreamSynchronize(s))))
				break;
			uint64_t dead = 0;
			size_t bad = t_lookup_compare(&g_lref, d_out, ids, n, fmt, &dead);
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
		if (!t_cu(EHT_CU_CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)))) {
			CHECK(eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, 10, (void *)(uintptr_t)d_out, s,
					     EHT_LOOKUP_RUN_STRATEGY(strategy), &dead) == -EOPNOTSUPP);
			t_cu(EHT_CU_CHECK(cuStreamEndCapture(s, &g)));
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
	g_lref.nrows = 60000;
	uint8_t *ref = malloc(g_lref.nrows * RB);
	for (size_t i = 0; i < g_lref.nrows * RB; i++)
		ref[i] = (uint8_t)t_rand(&rs);
	g_lref.rows = ref;
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(ref, g_lref.nrows, RB, 0, "graph-mem", &t), 0);
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
		int rc = eht_table_share(g_lref.nrows * RB, grp, &so, &t);
		if (rc) {
			fprintf(stderr, "tier %s not available here (%s): skipped\n", names[k], eht_last_error());
			continue;
		}
		struct eht_table_info ti = {.size = sizeof(ti)};
		CHECK_RC(eht_table_get_info(t, &ti), 0);
		memcpy(ti.host, ref, g_lref.nrows * RB);
		check_table(names[k], t, s, &rs);
		eht_table_close(t);
	}
	eht_group_destroy(grp);
	free(ref);

	/* Disk tier (the fixture checkpoint). */
	char path[1024], wn[128], sn[128];
	snprintf(path, sizeof(path), "%s/safetensors/engram_single.safetensors", t_fixtures());
	uint64_t rb = 0;
	uint8_t *dref = ref_table(path, 1, &g_lref.nrows, &rb);
	if (dref && rb == RB) {
		g_lref.rows = dref;
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
