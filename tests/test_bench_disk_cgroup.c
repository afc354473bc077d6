/* SPDX-License-Identifier: Apache-2.0 */
/* test_bench_disk_cgroup.c: `eht bench disk --mem-limit` on this machine's own cgroups (v2, or v1's
 * memory hierarchy): a limit below the bench's working set is refused (exit 2) instead of the OOM
 * killer's SIGKILL, and SIGTERM inside a limit removes the cgroup, the test file and its folder. Skips
 * (77) where no cgroup can be made here (not root, no delegation). On the CPU. */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_disk_mem_run.h"
#include "testutil.h"

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	unsetenv("EHT_BENCH_CGROUP_ROOT");
	char tmp[1024], b[1100], f[1200], errp[1200], args[4096], err[16384];
	snprintf(tmp, sizeof(tmp), "%s", t_tmpdir("bench-disk-cgroup"));
	snprintf(b, sizeof(b), "%s/b", tmp);
	snprintf(f, sizeof(f), "%s/eht-bench-disk.safetensors", b);
	snprintf(errp, sizeof(errp), "%s/err.txt", tmp);

	/* Inside a real limit, then SIGTERM during the steps. */
	snprintf(args, sizeof(args), "bench disk --cpu --file-gib 0.01 --steps 100000 --ids 512 --json --dir %s "
		 "--mem-limit 0.5", b);
	pid_t pid = bench_spawn(args, errp);
	CHECK(pid > 0);
	int in = bench_wait_for(errp, "memory limit: ", 120, err, sizeof(err));
	char cg[4096] = "";
	const char *p = strstr(err, "memory limit: cgroup ");
	if (p) { /* "memory limit: cgroup DIR, memory.max = ..." */
		p += strlen("memory limit: cgroup ");
		snprintf(cg, sizeof(cg), "%.*s", (int)strcspn(p, ","), p);
	}
	if (!in || !cg[0] || access(cg, F_OK) != 0) {
		t_kill_child(pid);
		t_rmtree(tmp);
		t_skip("no cgroup can be made here (not root, or no memory controller delegated)");
	}
	CHECK(kill(pid, SIGTERM) == 0);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	if (access(cg, F_OK) == 0)
		fprintf(stderr, "cgroup %s left behind\n", cg);
	CHECK(access(cg, F_OK) != 0);
	CHECK(access(f, F_OK) != 0 && access(b, F_OK) != 0);

	/* 10 MiB: the OOM killer's SIGKILL inside the limit before; now refused, nothing made. */
	snprintf(args, sizeof(args), "bench disk --cpu --file-gib 0.01 --steps 5 --ids 512 --dir %s --mem-limit 0.01", b);
	CHECK_RC(t_cli_run(args, 120, NULL, 0, err, sizeof(err)), 2);
	CHECK(strstr(err, "working set") != NULL);
	CHECK(access(b, F_OK) != 0);
	t_rmtree(tmp);
	return t_done();
}
