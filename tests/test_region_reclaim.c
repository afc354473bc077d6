/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_reclaim.c: a creator killed while populating leaves its region file; the next
 * creator of this user reclaims it, and a not yet linked file (.eht-tmp.) whose named creator pid is
 * gone too, not one whose creator runs. Region names are unpredictable: files pre-created under the
 * names an earlier version would have chosen (table.pid.counter) do not make `eht serve` fail. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static int exists(const char *dir, const char *name)
{
	char p[1024];
	struct stat st;
	snprintf(p, sizeof(p), "%s/eht.%s", dir, name);
	return stat(p, &st) == 0;
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	char *tmp = t_tmpdir("region-reclaim");
	char shm[600], shm2[600], ckpt[600];
	snprintf(shm, sizeof(shm), "%s/shm", tmp);
	snprintf(shm2, sizeof(shm2), "%s/shm2", tmp);
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
	mkdir(shm, 0700);
	mkdir(shm2, 0700);
	struct eht_region_opts ro = {.size = sizeof(ro), .flags = EHT_REGION_UNLINK_WHEN_MAPPED, .dir = shm,
				     .expected_peers = 1, .populate_threads = 1};

	/* A creator SIGKILLed after creating, before ready (as during a populate). */
	pid_t pid = fork();
	if (pid == 0) {
		eht_region *r = NULL;
		if (eht_region_open("killed", 4 << 20, &ro, &r) == 0 && eht_region_is_creator(r))
			kill(getpid(), SIGKILL);
		_exit(3);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CHECK(exists(shm, "killed"));

	/* The next creator (this process, a first create in that directory) removes it. */
	eht_region *r = NULL;
	CHECK_RC(eht_region_open("fresh", 4 << 20, &ro, &r), 0);
	CHECK(!exists(shm, "killed"));
	CHECK(exists(shm, "fresh"));
	eht_region_close(&r);

	/* A file a creator left before linking it (killed while sizing or mapping it: no header, no
	 * lock), named with a pid that is gone; and one named with a running pid (this process), which
	 * may be between making its file and locking it. A fresh process's first create removes the
	 * first only. */
	char shm3[600], gone[900], live[900];
	snprintf(shm3, sizeof(shm3), "%s/shm3", tmp);
	mkdir(shm3, 0700);
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, &st, 0);
	snprintf(gone, sizeof(gone), "%s/.eht-tmp.killed.%d.0.0123456789abcdef", shm3, (int)dead);
	snprintf(live, sizeof(live), "%s/.eht-tmp.young.%d.0.0123456789abcdef", shm3, (int)getpid());
	CHECK(t_write_file(gone, "partial", 7) == 0);
	CHECK(t_write_file(live, "partial", 7) == 0);
	pid = fork();
	if (pid == 0) {
		struct eht_region_opts o3 = ro;
		o3.dir = shm3;
		eht_region *r3 = NULL;
		int rc = eht_region_open("fresh3", 4 << 20, &o3, &r3);
		eht_region_close(&r3);
		_exit(rc == 0 ? 0 : 4);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct stat sb;
	CHECK(stat(gone, &sb) != 0);
	CHECK(stat(live, &sb) == 0);

	/* Squatted predictable names: the server still starts. */
	t_setenv("EHT_SHM_DIR", shm2);
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 2, .rows = 100, .shards = 1, .seed = 1};
	CHECK_RC(eht_synth_checkpoint(ckpt, &so), 0);
	const char *tables[] = {"layers.1.engram.embed", "layers.14.engram.embed"}; /* eht synth's names */
	for (int t = 0; t < 2; t++)
		for (int c = 0; c < 4; c++) {
			char p[1024];
			snprintf(p, sizeof(p), "%s/eht.%s.%d.%d", shm2, tables[t], (int)getpid(), c);
			CHECK(t_write_file(p, "squat", 5) == 0);
			snprintf(p, sizeof(p), "%s/.eht-tmp.%s.%d.%d.%d", shm2, tables[t], (int)getpid(), c, c);
			CHECK(t_write_file(p, "squat", 5) == 0);
		}
	char key[64];
	snprintf(key, sizeof(key), "reclaim-%d", (int)getpid());
	struct eht_serve_opts o = {.size = sizeof(o), .key = key, .tier = EHT_TIER_REGION, .threads = 1};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &o, &s), 0);
	CHECK_RC(eht_serve_stop(s), 0);
	t_rmtree(tmp);
	return t_done();
}
