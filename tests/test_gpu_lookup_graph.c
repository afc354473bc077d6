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


static void check_table(const char *tier, eht_table *t, eht_stream s, uint64_t *rs)
{
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_table_get_info(t, &ti), 0);
	for (int fmt = 0; fmt < 2; fmt++)
		for (int strategy = EHT_LOOKUP_AUTO; strategy < eht_lookup_strategy_count(); strategy++) {
			if ((strategy == EHT_LOOKUP_DIRECT || strategy == EHT_LOOKUP_SORTED) && !ti.device_ptr)
				continue;
			struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strategy, .format = fmt, .device = 0,
						    .numa_node = -1, .threads = 4, .max_batch = 8192};
			eht_lookup *lk = NULL;
			CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
			if (!lk)
				continue;
			t_lookup_check_engine(&g_lref, tier, lk, strategy, fmt, s, NMAX, false, rs);
			eht_lookup_destroy(lk);
		}
	fprintf(stderr, "tier %s done\n", tier);
}

int main(void)
{
	eht_stream s = t_gpu_test_stream();
	uint64_t rs = 3;

	/* Memory, host-NUMA and pinned-region tables with the same random rows. */
	g_lref.nrows = 60000;
	uint8_t *ref = t_rand_rows(g_lref.nrows, RB, &rs);
	g_lref.rows = ref;
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(ref, g_lref.nrows, RB, 0, "graph-mem", &t), 0);
	if (t)
		check_table("memory", t, s, &rs);
	eht_table_close(t);

	t_lookup_shared_tiers(&g_lref, "eht-test-graph", s, &rs, check_table);
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
	eht_dev_stream_destroy(s);
	return t_done();
}
