/* SPDX-License-Identifier: Apache-2.0 */
/* test_share_cpu.c: eht_table_share on a machine without a GPU (EHT_NO_CUDA=1): host-NUMA fails the
 * same way on every rank, all ranks fall back to the same region tier with one note in total (info:
 * without a GPU the region is the tier to use), and every rank reads rank 0's bytes; EHT_TEST_FAULT
 * parsing. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "table/host_numa/host_numa.h"
#include "testutil.h"

#define N 3
#define BYTES (8u << 20)
static char key[64];
static char logdir[256];

static int rank_main(int rank)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/rank%d.log", logdir, rank);
	if (t_stderr_to(path))
		return 2;
	eht_group *g = NULL;
	struct eht_group_opts go = {.size = sizeof(go), .timeout_ms = 20000};
	if (eht_group_create(key, rank, N, &go, &g))
		return 3;
	int bad = 0;
	eht_table *t = NULL;
	struct eht_share_opts so = {.size = sizeof(so), .device = -1, .row_bytes = 256, .name = "cpu-share"};

	/* Host-NUMA alone: the same error on every rank, nothing returned. */
	int rc = eht_host_table_share(BYTES, g, &so, &t);
	bad |= rc != -ENODEV || t != NULL;
	int all[N];
	bad |= eht_group_allgather(g, &rc, sizeof(rc), all) != 0;
	for (int i = 0; i < N; i++)
		bad |= all[i] != rc;
	/* Forcing the pinned region without a GPU fails everywhere alike. */
	so.tier = EHT_TIER_REGION_PINNED;
	rc = eht_table_share(BYTES, g, &so, &t);
	bad |= rc == 0;
	bad |= eht_group_allgather(g, &rc, sizeof(rc), all) != 0;
	for (int i = 0; i < N; i++)
		bad |= all[i] != rc;
	if (bad)
		fprintf(stderr, "rank %d: step 1 failed: %d %s\n", rank, rc, eht_last_error());

	/* The call users make: falls back to the region, same tier everywhere. */
	so.tier = 0;
	rc = eht_table_share(BYTES, g, &so, &t);
	if (rc) {
		fprintf(stderr, "rank %d: eht_table_share: %s\n", rank, eht_last_error());
		return 1;
	}
	struct eht_table_info info = {.size = sizeof(info)};
	bad |= eht_table_get_info(t, &info) != 0;
	bad |= info.tier != EHT_TIER_REGION || info.rows != BYTES / 256 || info.row_bytes != 256 || !info.host;
	bad |= info.device_ptr != 0;
	int tiers[N];
	bad |= eht_group_allgather(g, &info.tier, sizeof(int), tiers) != 0;
	for (int i = 0; i < N; i++)
		bad |= tiers[i] != info.tier;
	uint64_t *p = info.host;
	if (rank == 0)
		for (size_t i = 0; i < BYTES / 8; i++)
			p[i] = i * 0x9e3779b97f4a7c15ull;
	bad |= eht_group_barrier(g) != 0;
	for (size_t i = 0; i < BYTES / 8; i++)
		if (p[i] != i * 0x9e3779b97f4a7c15ull) {
			bad |= 1;
			break;
		}
	bad |= eht_group_barrier(g) != 0;
	bad |= eht_table_close(t) != 0;
	eht_group_destroy(g);
	if (bad)
		fprintf(stderr, "rank %d: a check failed (%s)\n", rank, eht_last_error());
	return bad;
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	t_setenv("EHT_LOG", "info"); /* (the ranks' notes are counted) */

	/* EHT_TEST_FAULT parsing. */
	t_setenv("EHT_TEST_FAULT", "map:rank=2,import,create:rank=0");
	CHECK_RC(eht_fault("map", 2), -EIO);
	CHECK(strstr(eht_last_error(), "injected fault") != NULL);
	CHECK_RC(eht_fault("map", 1), 0);
	CHECK_RC(eht_fault("ma", 2), 0);
	CHECK_RC(eht_fault("import", 5), -EIO);
	CHECK_RC(eht_fault("create", 0), -EIO);
	CHECK_RC(eht_fault("create", 1), 0);
	CHECK_RC(eht_fault("access", 0), 0);
	t_setenv("EHT_TEST_FAULT", "map:rank=12");
	CHECK_RC(eht_fault("map", 1), 0);
	CHECK_RC(eht_fault("map", 12), -EIO);
	t_setenv("EHT_TEST_FAULT", NULL);
	CHECK_RC(eht_fault("map", 12), 0);

	/* A group of one, no GPU: host-NUMA says why, the region works. */
	eht_group *g = NULL;
	eht_table *t = NULL;
	CHECK_RC(eht_group_create_single(&g), 0);
	CHECK_RC(eht_host_table_share(BYTES, g, NULL, &t), -ENODEV);
	CHECK_RC(eht_host_table_share(0, g, NULL, &t), -EINVAL);
	struct eht_share_opts so = {.size = sizeof(so), .device = -1, .tier = EHT_TIER_REGION, .name = "solo"};
	CHECK_RC(eht_table_share(BYTES, g, &so, &t), 0);
	CHECK(t != NULL);
	CHECK_RC(eht_table_close(t), 0);
	so.tier = EHT_TIER_DISK;
	CHECK_RC(eht_table_share(BYTES, g, &so, &t), -EINVAL);
	eht_group_destroy(g);

	snprintf(logdir, sizeof(logdir), "%s", t_tmpdir("share"));
	snprintf(key, sizeof(key), "t.share.%d", (int)getpid());
	pid_t pids[N];
	for (int r = 0; r < N; r++)
		if ((pids[r] = fork()) == 0)
			_exit(rank_main(r));
	for (int r = 0; r < N; r++) {
		int st = 0;
		waitpid(pids[r], &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	int warnings = 0, notes = 0;
	for (int r = 0; r < N; r++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/rank%d.log", logdir, r);
		int w = t_count_lines(path, "warn: table cpu-share: host-NUMA sharing unavailable");
		int i = t_count_lines(path, "info: table cpu-share: no GPU");
		if (r != 0)
			CHECK(w == 0 && i == 0);
		warnings += w;
		notes += i;
		if (t_failures) {
			char cmd[600];
			snprintf(cmd, sizeof(cmd), "cat %s >&2", path);
			if (system(cmd)) {
			}
		}
	}
	/* A warning from eht_host_table_share (asked for host-NUMA alone); eht_table_share's fallback to
	 * the region on a machine without a GPU is what the tiers are for: a note at info level. */
	CHECK(warnings == 1 && notes == 1);
	fprintf(stderr, "warnings: %d, notes: %d\n", warnings, notes);
	t_rmtree(logdir);
	return t_done();
}
