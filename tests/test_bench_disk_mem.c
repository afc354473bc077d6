/* SPDX-License-Identifier: Apache-2.0 */
/* test_bench_disk_mem.c: `eht bench disk --mem-limit` on a stand-in cgroup v2 hierarchy
 * (EHT_BENCH_CGROUP_ROOT): the child gets memory.max and the process, the controller is enabled and
 * then disabled in the parent, the process comes back; without the memory controller the run says
 * why and falls back to a file larger than free memory (EHT_BENCH_MEM_AVAILABLE) or to none; bad
 * --hotset arguments. On the CPU (--cpu). */
#include <glob.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_disk_mem_run.h"
#include "testutil.h"

static void put(const char *dir, const char *name, const char *s)
{
	char p[1200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	CHECK(t_write_file(p, s, strlen(s)) == 0);
}

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
}

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	char tmp[1024], cg[1100], args[4096], err[16384], wl[1200], buf[256], pat[1200];
	snprintf(tmp, sizeof(tmp), "%s", t_tmpdir("bench-disk-mem"));
	snprintf(cg, sizeof(cg), "%s/cg", tmp);
	snprintf(wl, sizeof(wl), "%s/../workloads/text_500k.compressed.u32", t_fixtures());
	CHECK(mkdir(cg, 0755) == 0);
	put(cg, "cgroup.controllers", "cpu io memory pids\n");
	put(cg, "cgroup.subtree_control", "");
	put(cg, "cgroup.procs", "");
	const char *common = "bench disk --cpu --file-gib 0.01 --steps 5 --ids 512 --json";
	json_t *r = NULL;

	/* cgroup v2: a child of the process's own cgroup, limit 0.5 GiB. */
	setenv("EHT_BENCH_CGROUP_ROOT", cg, 1);
	snprintf(args, sizeof(args), "%s --dir %s/b --mem-limit 0.5", common, tmp);
	CHECK_RC(bench_run(args, &r, err, sizeof(err)), 0);
	CHECK(r != NULL);
	CHECK(!strcmp(rs(r, "limit_mechanism"), "cgroup-v2"));
	CHECK(rn(r, "limit_applied_gib") == 0.5);
	CHECK(!strcmp(rs(r, "output"), "host"));
	CHECK(rn(r, "rows_per_step") == 512);
	json_decref(r);
	snprintf(pat, sizeof(pat), "%s/eht-bench-disk-*", cg);
	glob_t g;
	CHECK(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc == 1);
	if (g.gl_pathc == 1) {
		char p[1400], pid[64];
		snprintf(p, sizeof(p), "%s/memory.max", g.gl_pathv[0]);
		slurp(p, buf, sizeof(buf));
		CHECK(!strcmp(buf, "536870912"));
		snprintf(p, sizeof(p), "%s/memory.swap.max", g.gl_pathv[0]);
		slurp(p, buf, sizeof(buf));
		CHECK(!strcmp(buf, "0"));
		snprintf(p, sizeof(p), "%s/cgroup.procs", g.gl_pathv[0]);
		slurp(p, pid, sizeof(pid));
		CHECK(atoi(pid) > 0 && !strcmp(strrchr(g.gl_pathv[0], '-') + 1, pid));
		snprintf(p, sizeof(p), "%s/cgroup.procs", cg); /* moved back */
		slurp(p, buf, sizeof(buf));
		CHECK(!strcmp(buf, pid));
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", cg); /* enabled, then disabled again */
		slurp(p, buf, sizeof(buf));
		CHECK(!strcmp(buf, "-memory"));
	}
	globfree(&g);

	/* No memory controller: the reason, then the fallbacks. */
	put(cg, "cgroup.controllers", "cpu pids\n");
	CHECK_RC(bench_run(args, &r, err, sizeof(err)), 0);
	CHECK(r && !strcmp(rs(r, "limit_mechanism"), "none"));
	CHECK(strstr(err, "NOT APPLIED") && strstr(err, "memory controller is not available"));
	json_decref(r);
	setenv("EHT_BENCH_MEM_AVAILABLE", "1000000", 1); /* 1 MB free: the 10 MiB table is larger */
	CHECK_RC(bench_run(args, &r, err, sizeof(err)), 0);
	CHECK(r && !strcmp(rs(r, "limit_mechanism"), "file-larger-than-memory"));
	CHECK(r && fabs(rn(r, "limit_applied_gib") * (1 << 30) - 1e6) < 1);
	CHECK(strstr(err, "larger than the") != NULL);
	json_decref(r);
	unsetenv("EHT_BENCH_MEM_AVAILABLE");

	/* --hotset: a count, learned from a text; without a GPU, said and not used. */
	snprintf(args, sizeof(args), "%s --dir %s/b --mem-limit 0.5 --hotset 0", common, tmp);
	CHECK_RC(bench_run(args, &r, err, sizeof(err)), 2);
	json_decref(r);
	snprintf(args, sizeof(args), "%s --dir %s/b --mem-limit 0.5 --hotset 100", common, tmp);
	CHECK_RC(bench_run(args, &r, err, sizeof(err)), 1);
	CHECK(strstr(err, "--hotset needs --workload text") != NULL);
	json_decref(r);
	if (access(wl, R_OK) == 0) {
		snprintf(args, sizeof(args), "%s --dir %s/b --mem-limit 0.5 --hotset 100 --workload text:%s", common, tmp, wl);
		CHECK_RC(bench_run(args, &r, err, sizeof(err)), 0);
		CHECK(r && rn(r, "hotset_rows") == 0 && !strcmp(rs(r, "output"), "host"));
		CHECK(strstr(err, "no GPU hot set") != NULL);
		json_decref(r);
	}
	t_rmtree(tmp);
	return t_done();
}
