/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_reclaim.c: a creator killed while populating leaves its region file; the next
 * creator of this user reclaims it. Region names are unpredictable: files pre-created under the
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
