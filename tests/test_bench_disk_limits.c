/* SPDX-License-Identifier: Apache-2.0 */
/* test_bench_disk_limits.c: `eht bench disk --mem-limit` refuses limits that cannot work (below the
 * bench's working set, not finite, absurd) with exit 2 before making anything, and removes what it
 * made (the test file, its folder, the cgroup's changes) when SIGTERM ends it during the file's write
 * or during the steps. On the CPU, on a stand-in cgroup v2 hierarchy (EHT_BENCH_CGROUP_ROOT);
 * test_bench_disk_cgroup.c does the same on the machine's own cgroups. */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_disk_mem_run.h"
#include "testutil.h"

static void put(const char *dir, const char *name, const char *s)
{
	char p[1200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	CHECK(t_write_file(p, s, strlen(s)) == 0);
}

static void slurp(const char *dir, const char *name, char *buf, size_t len)
{
	char p[1200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
}

static int exists(const char *p) { return access(p, F_OK) == 0; }

/* Cgroups the runs made under cg. */
static size_t made_cgroups(const char *cg) { return t_glob_count(cg, "eht-bench-disk-*"); }

/* SIGTERM once errpath holds text (or the file `path` exists, text NULL); then the run must die of
 * it with its test file, the .tmp and the folder gone, and the stand-in cgroup undone. */
static void term_during(const char *tmp, const char *cg, const char *args, const char *path, const char *text)
{
	char err[1200], b[1100], f[1200], ft[1300], buf[256], pid_s[32];
	snprintf(err, sizeof(err), "%s/err.txt", tmp);
	snprintf(b, sizeof(b), "%s/b", tmp);
	snprintf(f, sizeof(f), "%s/eht-bench-disk.safetensors", b);
	snprintf(ft, sizeof(ft), "%s.tmp", f);
	put(cg, "cgroup.procs", "");
	put(cg, "cgroup.subtree_control", "");
	pid_t pid = bench_spawn(args, err);
	CHECK(pid > 0);
	int seen = text ? bench_wait_for(err, text, 120, NULL, 0) : bench_wait_for(path, NULL, 120, NULL, 0);
	CHECK(seen);
	CHECK(kill(pid, SIGTERM) == 0);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM); /* dies of the signal, as before */
	CHECK(!exists(f) && !exists(ft) && !exists(b));
	if (text) { /* inside the limit when killed: the process went back, the controller off again */
		snprintf(pid_s, sizeof(pid_s), "%d", (int)pid);
		slurp(cg, "cgroup.procs", buf, sizeof(buf));
		CHECK(!strcmp(buf, pid_s));
		slurp(cg, "cgroup.subtree_control", buf, sizeof(buf));
		CHECK(!strcmp(buf, "-memory"));
	}
	if (!seen)
		kill(pid, SIGKILL);
}

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	char tmp[1024], cg[1100], b[1100], args[4096], err[16384];
	snprintf(tmp, sizeof(tmp), "%s", t_tmpdir("bench-disk-limits"));
	snprintf(cg, sizeof(cg), "%s/cg", tmp);
	snprintf(b, sizeof(b), "%s/b", tmp);
	CHECK(mkdir(cg, 0755) == 0);
	put(cg, "cgroup.controllers", "cpu io memory pids\n");
	put(cg, "cgroup.subtree_control", "");
	put(cg, "cgroup.procs", "");
	setenv("EHT_BENCH_CGROUP_ROOT", cg, 1);
	json_t *r = NULL;

	/* Limits that cannot work: refused with 2 before the folder, the file or a cgroup exists. */
	static const struct {
		const char *limit, *says;
	} bad[] = {{"0.01", "below this bench's own working set"},
		   {"0.05 --hotset 100000", "a hot set of 100000 rows"},
		   {"inf", "finite"},
		   {"1e30", "above 2^30 GiB"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(args, sizeof(args), "bench disk --cpu --file-gib 0.01 --steps 5 --ids 512 --json --dir %s "
			 "--mem-limit %s", b, bad[i].limit);
		CHECK_RC(bench_run(args, &r, err, sizeof(err)), 2);
		json_decref(r);
		if (!strstr(err, bad[i].says))
			fprintf(stderr, "--mem-limit %s: no '%s' in: %s\n", bad[i].limit, bad[i].says, err);
		CHECK(strstr(err, bad[i].says) != NULL);
		CHECK(!exists(b));
		CHECK(made_cgroups(cg) == 0);
	}
	/* Just above the working set: runs. */
	snprintf(args, sizeof(args), "bench disk --cpu --file-gib 0.01 --steps 5 --ids 512 --json --dir %s "
		 "--mem-limit 0.07", b);
	CHECK_RC(bench_run(args, &r, err, sizeof(err)), 0);
	CHECK(r && !strcmp(rs(r, "limit_mechanism"), "cgroup-v2"));
	json_decref(r);
	CHECK(!exists(b));

	/* SIGTERM inside the limit, during the steps. */
	snprintf(args, sizeof(args), "bench disk --cpu --file-gib 0.01 --steps 100000 --ids 512 --json --dir %s "
		 "--mem-limit 0.5", b);
	term_during(tmp, cg, args, NULL, "memory limit: cgroup");
	/* SIGTERM while the test file is written (before any limit). */
	char ft[1300];
	snprintf(ft, sizeof(ft), "%s/eht-bench-disk.safetensors.tmp", b);
	snprintf(args, sizeof(args), "bench disk --cpu --file-gib 0.25 --steps 100000 --ids 512 --json --dir %s "
		 "--mem-limit 0.5", b);
	term_during(tmp, cg, args, ft, NULL);
	t_rmtree(tmp);
	return t_done();
}
