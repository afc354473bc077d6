/* SPDX-License-Identifier: Apache-2.0 */
/* test_bench_region_signal.c: `eht bench region` interrupted (SIGINT, SIGTERM) while it holds a
 * region dies of the signal and leaves no region file in its directory: before, each interrupt left
 * its region (GiBs of /dev/shm) until the next create or `eht regions gc` reclaimed it. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_disk_mem_run.h"
#include "testutil.h"

/* Region files in dir. (Not the temporary name a create holds for microseconds before it links the
 * file under its name: a signal then leaves it to the next create's reclaim, and the check here
 * would be a race.) */
static size_t region_files(const char *dir) { return t_glob_count(dir, "eht.*"); }

static void interrupt_with(const char *dir, int sig)
{
	char args[1400], err[1200], file[1300];
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	/* Many runs of a small size: the bench is still creating regions whenever the signal comes. */
	snprintf(args, sizeof(args), "bench region --sizes 0.0625 --runs 100000 --threads 1 --dir %s", dir);
	pid_t pid = bench_spawn(args, err);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	snprintf(file, sizeof(file), "%s/eht.eht-bench-%d", dir, (int)pid);
	int seen = bench_wait_for(file, NULL, 60, NULL, 0);
	CHECK(seen);
	CHECK(kill(pid, sig) == 0);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sig); /* dies of the signal, as without the handler */
	size_t left = region_files(dir);
	if (left)
		fprintf(stderr, "signal %d: %zu region file(s) left in %s\n", sig, left, dir);
	CHECK(left == 0);
}

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	t_setenv("EHT_NO_CUDA", "1");
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s", t_tmpdir("bench-region-signal"));
	interrupt_with(dir, SIGINT);
	interrupt_with(dir, SIGTERM);
	t_rmtree(dir);
	return t_done();
}
