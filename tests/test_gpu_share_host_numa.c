/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_share_host_numa.c: host-NUMA tables across forked ranks on one GPU (device machine):
 * 4 ranks share EHT_TEST_SHARE_BYTES (default 4 GiB); every rank reads rank 0's bytes from the CPU
 * and through the GPU (cuMemcpyDtoH from the device pointer); ranks other than 0 do not grow by the
 * table; an injected fault on one rank sends every rank to the region tier with one warning; the
 * reserve guard trips; FABRIC reports "unsupported here" cleanly where there is no IMEX.
 * CUDA is initialized only inside the forked ranks, never before fork. Exit 77 without a GPU. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "gpu/probe.h"
#include "os/numa.h"
#include "util/size.h"
#include "testutil.h"

#define N 4
static uint64_t bytes;
static char key[64], logdir[256];
static int scenario;
enum { S_SHARE, S_FAULT, S_RESERVE, S_FABRIC };

static uint64_t pattern(uint64_t i) { return (i * 0x9e3779b97f4a7c15ull) ^ 0x5eedull; }

/* MemAvailable of the machine in bytes. */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	uint64_t v = 0;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "MemAvailable:", 13))
			v = strtoull(line + 13, NULL, 10) * 1024;
	if (f)
		fclose(f);
	return v;
}

/* "VmRSS" or "RssAnon" of this process in bytes. */
static uint64_t status_bytes(const char *keyname)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	uint64_t v = 0;
	size_t kl = strlen(keyname);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, keyname, kl) && line[kl] == ':')
			v = strtoull(line + kl + 1, NULL, 10) * 1024;
	if (f)
		fclose(f);
	return v;
}

static int verify(const struct eht_table_info *info, int rank)
{
	const uint64_t *p = info->host;
	uint64_t n = bytes / 8;
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != pattern(i)) {
			fprintf(stderr, "rank %d: CPU byte mismatch at word %llu\n", rank, (unsigned long long)i);
			return 1;
		}
	/* Through the GPU: copies from the device address of the same table. */
	size_t piece = 8u << 20;
	uint64_t *buf = malloc(piece);
	int bad = !buf;
	for (uint64_t off = 0; !bad && off < bytes; off += piece) {
		size_t len = bytes - off < piece ? (size_t)(bytes - off) : piece;
		if (eht_dev_d2h(buf, info->device_ptr + off, len)) {
			fprintf(stderr, "rank %d: %s\n", rank, eht_last_error());
			bad = 1;
			break;
		}
		for (size_t i = 0; i < len / 8; i++)
			if (buf[i] != pattern(off / 8 + i)) {
				fprintf(stderr, "rank %d: GPU byte mismatch at word %llu\n", rank,
					(unsigned long long)(off / 8 + i));
				bad = 1;
				break;
			}
	}
	free(buf);
	return bad;
}

static int rank_main(int rank)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/s%d.rank%d.log", logdir, scenario, rank);
	if (t_stderr_to(path))
		return 2;
	eht_group *g = NULL;
	struct eht_group_opts go = {.size = sizeof(go), .timeout_ms = 600000};
	if (eht_group_create(key, rank, N, &go, &g))
		return 3;
	/* The CUDA context first, so the resident-memory baseline includes it. */
	if (eht_dev_use(0)) {
		fprintf(stderr, "rank %d: %s\n", rank, eht_last_error());
		return 4;
	}
	int bad = 0, rc, all[N];
	eht_table *t = NULL;
	struct eht_share_opts so = {.size = sizeof(so), .device = 0, .row_bytes = 8, .name = "gputest"};
	struct eht_table_info info = {.size = sizeof(info)};
	/* Every rank's context exists before the node-wide baseline is read. */
	if (eht_group_barrier(g))
		return 3;
	uint64_t anon0 = status_bytes("RssAnon"), avail0 = mem_available();

	switch (scenario) {
	case S_SHARE:
		rc = eht_host_table_share(bytes, g, &so, &t);
		if (rc) {
			fprintf(stderr, "rank %d: share: %s\n", rank, eht_last_error());
			return 1;
		}
		bad |= eht_table_get_info(t, &info) != 0;
		bad |= info.tier != EHT_TIER_HOST_NUMA || info.host != (void *)(uintptr_t)info.device_ptr;
		bad |= info.page_size == 0 || info.numa_node < 0 || info.rows != bytes / 8;
		/* Mapping must not give the other ranks a private copy. (VmRSS is no measure here: it
		 * counts the shared host-NUMA pages each rank maps.) */
		if (rank != 0 && status_bytes("RssAnon") - anon0 > bytes / 2) {
			fprintf(stderr, "rank %d: RssAnon grew by %llu after mapping\n", rank,
				(unsigned long long)(status_bytes("RssAnon") - anon0));
			bad = 1;
		}
		if (rank == 0)
			for (uint64_t i = 0; i < bytes / 8; i++)
				((uint64_t *)info.host)[i] = pattern(i);
		bad |= eht_group_barrier(g) != 0;
		bad |= verify(&info, rank);
		/* Reading every byte must not create a private copy either. */
		if (rank != 0 && status_bytes("RssAnon") - anon0 > bytes / 2 + (64u << 20)) {
			fprintf(stderr, "rank %d: RssAnon grew by %llu after reading\n", rank,
				(unsigned long long)(status_bytes("RssAnon") - anon0));
			bad = 1;
		}
		bad |= eht_group_barrier(g) != 0;
		/* One copy on the node, not one per rank: with all N ranks mapped and read, the node's
		 * available memory fell by about the table size, far less than N tables. */
		if (rank == 0 && avail0 - mem_available() > bytes + bytes / 2) {
			fprintf(stderr, "node memory fell by %llu for a %llu-byte table on %d ranks\n",
				(unsigned long long)(avail0 - mem_available()), (unsigned long long)bytes, N);
			bad = 1;
		}
		bad |= eht_group_barrier(g) != 0;
		bad |= eht_table_close(t) != 0;
		break;
	case S_FAULT:
		/* map fails on rank 2 only; every rank must land in the same region tier. */
		t_setenv("EHT_TEST_FAULT", "map:rank=2");
		rc = eht_host_table_share(bytes, g, &so, &t);
		bad |= rc != -EIO || t;
		bad |= strstr(eht_last_error(), "rank 2") == NULL || strstr(eht_last_error(), "injected") == NULL;
		rc = eht_table_share(bytes, g, &so, &t);
		t_setenv("EHT_TEST_FAULT", NULL);
		bad |= eht_group_allgather(g, &rc, sizeof(rc), all) != 0;
		for (int i = 0; i < N; i++)
			bad |= all[i] != rc;
		if (rc == 0) {
			bad |= eht_table_get_info(t, &info) != 0;
			bad |= info.tier != EHT_TIER_REGION_PINNED && info.tier != EHT_TIER_REGION;
			bad |= eht_group_allgather(g, &info.tier, sizeof(int), all) != 0;
			for (int i = 0; i < N; i++)
				bad |= all[i] != info.tier;
			bad |= eht_table_close(t) != 0;
		} else {
			fprintf(stderr, "rank %d: region fallback failed too: %s\n", rank, eht_last_error());
		}
		break;
	case S_RESERVE: {
		int numa = eht_dev_host_numa_id(0);
		uint64_t total = 0, freeb = 0, avail = 0;
		bad |= numa < 0 || eht_numa_node_mem(numa, &total, &freeb, &avail) != 0;
		so.reserve_bytes = avail + 1; /* just above what is free */
		rc = eht_host_table_share(bytes, g, &so, &t);
		bad |= rc != -ENOMEM || t;
		bad |= strstr(eht_last_error(), "fell below its") == NULL;
		bad |= eht_group_allgather(g, &rc, sizeof(rc), all) != 0;
		for (int i = 0; i < N; i++)
			bad |= all[i] != -ENOMEM;
		/* Everything was released: the node has its memory back. */
		uint64_t avail2 = 0;
		eht_numa_node_mem(numa, &total, &freeb, &avail2);
		bad |= avail2 + (bytes / 2) < avail;
		break;
	}
	case S_FABRIC: {
		char why[192] = "";
		int sup = eht_vmm_export_supported(0, EHT_VMM_FABRIC, why, sizeof(why));
		so.flags = EHT_SHARE_FABRIC;
		rc = eht_host_table_share(bytes, g, &so, &t);
		if (sup == 1) {
			bad |= rc != 0;
			if (!rc) {
				bad |= eht_table_get_info(t, &info) != 0;
				bad |= eht_table_close(t) != 0;
			}
		} else {
			bad |= rc != -EOPNOTSUPP && rc != -EPERM;
			bad |= strstr(eht_last_error(), "unsupported here") == NULL;
			bad |= strstr(why, "unsupported here") == NULL;
		}
		bad |= eht_group_allgather(g, &rc, sizeof(rc), all) != 0;
		for (int i = 0; i < N; i++)
			bad |= all[i] != rc;
		fprintf(stderr, "rank %d: FABRIC: %s\n", rank, rc ? eht_last_error() : "works here");
		break;
	}
	}
	eht_group_destroy(g);
	if (bad)
		fprintf(stderr, "rank %d: scenario %d failed (%s)\n", rank, scenario, eht_last_error());
	return bad;
}

static int count_in_logs(int sc, const char *needle, int *rank0)
{
	int n = 0;
	*rank0 = 0;
	for (int r = 0; r < N; r++) {
		char path[512], line[2048];
		snprintf(path, sizeof(path), "%s/s%d.rank%d.log", logdir, sc, r);
		FILE *f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, needle)) {
				n++;
				*rank0 += r == 0;
			}
		if (f)
			fclose(f);
	}
	return n;
}

static void dump_logs(int sc)
{
	for (int r = 0; r < N; r++) {
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "sed 's/^/[s%d r%d] /' %s/s%d.rank%d.log >&2", sc, r, logdir, sc, r);
		if (system(cmd)) {
		}
	}
}

static void run(int sc, const char *tag)
{
	scenario = sc;
	snprintf(key, sizeof(key), "t.gpu.%s.%d", tag, (int)getpid());
	pid_t pids[N];
	int failed = 0;
	for (int r = 0; r < N; r++)
		if ((pids[r] = fork()) == 0)
			_exit(rank_main(r));
	for (int r = 0; r < N; r++) {
		int st = 0;
		waitpid(pids[r], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	CHECK(failed == 0);
	if (failed)
		dump_logs(sc);
	fprintf(stderr, "scenario %s: %s\n", tag, failed ? "FAILED" : "ok");
}

int main(void)
{
	/* Ask a child whether there is a GPU: the parent must not initialize CUDA before forking. */
	pid_t c = fork();
	if (c == 0)
		_exit(t_have_gpu() ? 0 : T_SKIP);
	int st = 0;
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		t_skip("no CUDA device");
	const char *want = getenv("EHT_TEST_SHARE_BYTES");
	bytes = 4ull << 30;
	if (want && *want && eht_parse_size(want, &bytes) != 0) {
		fprintf(stderr, "FAIL: EHT_TEST_SHARE_BYTES=%s is not a size\n", want);
		return 1;
	}
	bytes = bytes / 8 * 8;
	snprintf(logdir, sizeof(logdir), "%s", t_tmpdir("gpushare"));

	run(S_SHARE, "share");
	run(S_FAULT, "fault");
	int r0 = 0;
	int w = count_in_logs(S_FAULT, "host-NUMA sharing unavailable", &r0);
	/* One from eht_host_table_share called alone, one from eht_table_share's fallback: rank 0 only. */
	CHECK(w == 2 && r0 == 2);
	run(S_RESERVE, "reserve");
	run(S_FABRIC, "fabric");
	t_rmtree(logdir);
	return t_done();
}
