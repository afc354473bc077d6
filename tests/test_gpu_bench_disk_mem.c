/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_bench_disk_mem.c: `eht bench disk --mem-limit` with a GPU gathers into GPU memory (HOST
 * strategy) and, with --hotset K on the text workload, gives the engine a GPU hot set of K rows that
 * serves part of every step. Uses a stand-in cgroup hierarchy (EHT_BENCH_CGROUP_ROOT). Exit 77
 * without a GPU. */
#include <sys/stat.h>
#include <unistd.h>

#include "bench_disk_mem_run.h"
#include "testutil.h"

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	if (!t_have_gpu())
		t_skip("no GPU");
	char tmp[1024], cg[1100], args[4096], err[16384], wl[1200], p[1200];
	snprintf(wl, sizeof(wl), "%s/../workloads/text_500k.compressed.u32", t_fixtures());
	if (access(wl, R_OK))
		t_skip("no text workload");
	snprintf(tmp, sizeof(tmp), "%s", t_tmpdir("gpu-bench-disk-mem"));
	snprintf(cg, sizeof(cg), "%s/cg", tmp);
	CHECK(mkdir(cg, 0755) == 0);
	snprintf(p, sizeof(p), "%s/cgroup.controllers", cg);
	CHECK(t_write_file(p, "memory\n", 7) == 0);
	setenv("EHT_BENCH_CGROUP_ROOT", cg, 1);
	json_t *r = NULL;
	snprintf(args, sizeof(args),
		 "bench disk --file-gib 0.05 --steps 10 --ids 2048 --json --dir %s/b --mem-limit 0.5 --hotset 2000 "
		 "--workload text:%s", tmp, wl);
	CHECK_RC(bench_run(args, &r, err, sizeof(err)), 0);
	CHECK(r != NULL);
	CHECK(!strcmp(rs(r, "output"), "gpu"));
	CHECK(rn(r, "hotset_rows") == 2000);
	CHECK(rn(r, "rows_per_step") == 2048);
	/* The tier sees each step's distinct misses only: fewer than its ids, less the hot ones. */
	CHECK(rn(r, "tier_rows_per_step") > 0 && rn(r, "tier_rows_per_step") <= 2048 - rn(r, "gpu_hot_ids_per_step"));
	/* Real text repeats its frequent ids: the hot set serves some of every step. */
	CHECK(rn(r, "gpu_hot_ids_per_step") > 0 && rn(r, "gpu_hot_ids_per_step") < 2048);
	CHECK(rn(r, "hit_rate") > 0);
	CHECK(strstr(err, "GPU hot set: 2000 rows") != NULL);
	json_decref(r);
	t_rmtree(tmp);
	return t_done();
}
