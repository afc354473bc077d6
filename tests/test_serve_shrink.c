/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_shrink.c: a checkpoint that shrinks while `eht serve` loads it, or while `eht worker
 * --check` compares rows with it, gives an error naming the file, never a SIGBUS; nothing is left
 * in the shm directory. */
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "os/mem_guard.h"
#include "testutil.h"

static char file[1024];
static int truncated;

static void shrink_on_first_progress(void *arg, uint64_t done, uint64_t total, const char *table)
{
	if (!truncated && truncate(file, 1 << 20) == 0)
		truncated = 1;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	char *tmp = t_tmpdir("serve-shrink");
	char ckpt[600], shm[600];
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
	snprintf(shm, sizeof(shm), "%s/shm", tmp);
	mkdir(shm, 0700);
	t_setenv("EHT_SHM_DIR", shm);
	/* One checkpoint made, then copied (A and B below are the same bytes): generating it three times
	 * took most of this test's 44 s under TSan. */
	char a[700], b[700], cmd[3200];
	snprintf(a, sizeof(a), "%s/a", tmp);
	snprintf(b, sizeof(b), "%s/b", tmp);
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 1, .rows = 500000, .shards = 1, .seed = 4};
	CHECK_RC(eht_synth_checkpoint(a, &so), 0);
	snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s' && cp -r '%s' '%s'", a, ckpt, a, b);
	CHECK(system(cmd) == 0);
	snprintf(file, sizeof(file), "%s/model.safetensors", ckpt);

	/* The load: -EIO naming the file; the half-loaded table is released. */
	char key[64];
	snprintf(key, sizeof(key), "shrink-%d", (int)getpid());
	struct eht_serve_opts o = {.size = sizeof(o), .key = key, .tier = EHT_TIER_REGION, .threads = 1,
				   .progress = shrink_on_first_progress};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &o, &s), -EIO);
	CHECK(truncated);
	CHECK(strstr(eht_last_error(), "model.safetensors") != NULL && strstr(eht_last_error(), "shrank") != NULL);
	CHECK(t_dir_entries(shm) == 0);

	/* `eht worker --check`: it opens its checkpoint (B) first and waits for the server; B shrinks
	 * before the server (loading its own copy, A) comes up. */
	const char *cli = getenv("EHT_CLI");
	if (cli) {
		pid_t wk = fork();
		if (wk == 0) {
			execl(cli, "eht", "worker", key, "--check", b, "--wait", "--ids", "1000", "--reps", "1", "--timeout", "30",
			      (char *)NULL);
			_exit(127);
		}
		sleep_s(0.5);
		snprintf(file, sizeof(file), "%s/model.safetensors", b);
		CHECK(truncate(file, 1 << 20) == 0);
		pid_t srv = fork();
		if (srv == 0) {
			FILE *f = freopen("/dev/null", "w", stdout);
			(void)f;
			execl(cli, "eht", "serve", a, "--key", key, "--tier", "region", (char *)NULL);
			_exit(127);
		}
		int st = 0;
		waitpid(wk, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 127);
		if (WIFSIGNALED(st))
			fprintf(stderr, "eht worker died of signal %d\n", WTERMSIG(st));
		/* The SIGTERM of a serving server (exit 0). A slow machine (qemu) can have the worker find
		 * B already shrunk and exit while the server still loads: wait until it serves. */
		bool ready = false;
		for (int i = 0; i < 1200 && !ready; i++) {
			json_t *j = t_serve_status(key);
			ready = j && json_is_true(json_object_get(j, "ready"));
			json_decref(j);
			if (!ready)
				sleep_s(0.1);
		}
		CHECK(ready);
		kill(srv, SIGTERM);
		waitpid(srv, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CHECK(t_dir_entries(shm) == 0);
	t_rmtree(tmp);
	return t_done();
}
