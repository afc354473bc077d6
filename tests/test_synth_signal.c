/* SPDX-License-Identifier: Apache-2.0 */
/* test_synth_signal.c: `eht synth` interrupted (SIGINT, SIGTERM) while it writes a sharded checkpoint
 * dies of the signal and leaves no shard, index or .tmp behind, and no directory it made: before, the
 * shards already written and the one being written (.tmp) stayed, a partial checkpoint that reads as
 * a broken one. A directory that existed keeps what else it holds. */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_disk_mem_run.h"
#include "testutil.h"

/* Interrupts a 3-shard synth into ckpt once its second shard is being written (the first is done). */
static void interrupt_with(const char *ckpt, const char *err, int sig)
{
	char args[1400], file[1400];
	/* 2 tables of 1 Mi rows: the second shard holds a 256 MiB weight, a write of a good fraction of a
	 * second, so the signal comes mid-write. */
	snprintf(args, sizeof(args), "synth %s --rows 1048576 --shards 3", ckpt);
	pid_t pid = bench_spawn(args, err);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	snprintf(file, sizeof(file), "%s/model-00002-of-00003.safetensors.tmp", ckpt);
	int seen = bench_wait_for(file, NULL, 120, NULL, 0);
	CHECK(seen);
	if (!seen)
		fprintf(stderr, "%s never appeared\n", file);
	CHECK(kill(pid, sig) == 0);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sig); /* dies of the signal, as without the handler */
}

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	t_setenv("EHT_NO_CUDA", "1");
	char dir[1024], ckpt[1100], err[1100], keep[1200];
	struct stat st;
	snprintf(dir, sizeof(dir), "%s", t_tmpdir("synth-signal"));
	snprintf(err, sizeof(err), "%s/err.txt", dir);

	/* A directory synth makes: gone after the signal. */
	snprintf(ckpt, sizeof(ckpt), "%s/made", dir);
	interrupt_with(ckpt, err, SIGINT);
	CHECK(stat(ckpt, &st) != 0 && errno == ENOENT);

	/* A directory that existed, with a file of the user's: it stays, with that file and nothing else. */
	snprintf(ckpt, sizeof(ckpt), "%s/existing", dir);
	CHECK(mkdir(ckpt, 0755) == 0);
	snprintf(keep, sizeof(keep), "%s/README", ckpt);
	FILE *f = fopen(keep, "w");
	CHECK(f && fputs("mine\n", f) >= 0 && fclose(f) == 0);
	interrupt_with(ckpt, err, SIGTERM);
	CHECK(stat(ckpt, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK(stat(keep, &st) == 0);
	size_t left = t_glob_count(ckpt, "*");
	if (left != 1)
		fprintf(stderr, "%zu entries left in %s (README only expected)\n", left, ckpt);
	CHECK(left == 1);

	t_rmtree(dir);
	return t_done();
}
