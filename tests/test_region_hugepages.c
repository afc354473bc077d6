/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_hugepages.c: a shared region table (eht_table_share, as eht serve makes them) lands on
 * 2 MiB pages when the huge page pool has room (a hugetlb memfd: smaps says so in the creator, in a
 * second rank that got it by descriptor and in an importer), and on 4 KiB pages with one warning
 * naming vm.nr_hugepages when it has none; a CPU lookup returns the same bytes on both. The pool is
 * resized by the test and put back (root only; skips otherwise). No GPU needed. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/fsinfo.h"
#include "table/table_impl.h"
#include "testutil.h"

#define RB 264u
#define ROWS 20000u /* 5.3 MiB: 3 data pages + the header page */
#define NIDS 3001u
#define HP (2ull << 20)

static char logdir[256];
static char key[64];

static uint8_t row_byte(uint64_t r, size_t k) { return (uint8_t)((r * 2654435761u) >> 7 ^ (k * 31u)); }

static void fill(eht_table *t)
{
	struct eht_table_info info = {.size = sizeof(info)};
	if (eht_table_get_info(t, &info) || !info.host)
		return;
	uint8_t *p = info.host;
	for (uint64_t r = 0; r < ROWS; r++)
		for (size_t k = 0; k < RB; k++)
			p[r * RB + k] = row_byte(r, k);
}

/* The CPU HOST lookup of a fixed id list into out (NIDS * RB bytes). */
static void gather(eht_table *t, uint8_t *out)
{
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .format = EHT_LOOKUP_RAW,
				    .strategy = EHT_LOOKUP_HOST, .threads = 2, .numa_node = -1, .device = -1};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk)
		return;
	int64_t ids[NIDS];
	uint64_t s = 7;
	for (size_t i = 0; i < NIDS; i++)
		ids[i] = (int64_t)(t_rand(&s) % ROWS);
	uint64_t dead = 1;
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, NIDS, out, NULL, 0, &dead), 0);
	CHECK(dead == 0);
	eht_lookup_destroy(lk);
}

static eht_table *share_one(void)
{
	eht_group *g = NULL;
	eht_table *t = NULL;
	struct eht_share_opts so = {.size = sizeof(so), .device = -1, .tier = EHT_TIER_REGION, .row_bytes = RB,
				    .name = "huge"};
	CHECK_RC(eht_group_create_single(&g), 0);
	CHECK_RC(eht_table_share((uint64_t)ROWS * RB, g, &so, &t), 0);
	eht_group_destroy(g);
	return t;
}

/* Rank r of a two-rank share on huge pages: rank 1 gets the memfd by descriptor. */
static int rank_main(int rank)
{
	eht_group *g = NULL;
	struct eht_group_opts go = {.size = sizeof(go), .timeout_ms = 20000};
	if (eht_group_create(key, rank, 2, &go, &g))
		return 3;
	eht_table *t = NULL;
	struct eht_share_opts so = {.size = sizeof(so), .device = -1, .tier = EHT_TIER_REGION, .row_bytes = RB,
				    .name = "huge2"};
	if (eht_table_share((uint64_t)ROWS * RB, g, &so, &t)) {
		fprintf(stderr, "rank %d: %s\n", rank, eht_last_error());
		return 1;
	}
	if (rank == 0)
		fill(t);
	int bad = eht_group_barrier(g) != 0;
	struct eht_table_info info = {.size = sizeof(info)};
	bad |= eht_table_get_info(t, &info) != 0;
	const uint8_t *p = info.host;
	for (uint64_t r = 0; p && r < ROWS && !bad; r += 97)
		bad |= p[r * RB + 5] != row_byte(r, 5);
	bad |= eht_table_page_size(t) != HP || info.page_size != HP;
	if (bad)
		fprintf(stderr, "rank %d: page size %llu, info %llu\n", rank, (unsigned long long)eht_table_page_size(t),
			(unsigned long long)info.page_size);
	bad |= eht_group_barrier(g) != 0;
	bad |= eht_table_close(t) != 0;
	eht_group_destroy(g);
	return bad;
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	t_setenv("EHT_LOG", NULL); /* the region's warnings are counted at the default level */
	struct eht_hugetlb_pool pool;
	long nr0 = t_hugepages_resizable_or_skip(&pool);
	snprintf(logdir, sizeof(logdir), "%s", t_tmpdir("hugepages"));
	uint8_t *out4k = malloc((size_t)NIDS * RB), *out2m = malloc((size_t)NIDS * RB);
	char path[512];

	/* No room in the pool: 4 KiB pages and one warning naming the fix. */
	long used = (long)(pool.total - pool.available);
	CHECK(t_set_nr_hugepages(used) == 0);
	CHECK(eht_hugetlb_pool(HP, &pool) == 0 && pool.available == 0);
	char mode[32];
	eht_thp_shmem_mode(mode, sizeof(mode));
	bool no_thp = !strcmp(mode, "never") || !strcmp(mode, "deny");
	snprintf(path, sizeof(path), "%s/small.log", logdir);
	int saved = dup(2);
	CHECK(t_stderr_to(path) == 0);
	eht_table *t = share_one();
	dup2(saved, 2);
	close(saved);
	if (t) {
		fill(t);
		gather(t, out4k);
		uint64_t ps = eht_table_page_size(t);
		fprintf(stderr, "no pool (shmem THP %s): page size %llu\n", mode, (unsigned long long)ps);
		if (no_thp) {
			CHECK(ps == 4096);
			CHECK(t_count_lines(path, "vm.nr_hugepages=") == 1);
			CHECK(t_count_lines(path, "4 KiB pages") == 1);
		}
		CHECK_RC(eht_table_close(t), 0);
	}

	/* A pool with room: the table is a hugetlb memfd, 2 MiB pages everywhere it is mapped. */
	CHECK(t_set_nr_hugepages(used + 16) == 0);
	if (eht_hugetlb_pool(HP, &pool) != 0 || pool.available < 8) {
		fprintf(stderr, "could not reserve huge pages (%llu available)\n", (unsigned long long)pool.available);
		t_set_nr_hugepages(nr0);
		t_rmtree(logdir);
		t_skip("no memory for 16 huge pages");
	}
	t = share_one();
	if (t) {
		struct eht_table_info info = {.size = sizeof(info)};
		CHECK_RC(eht_table_get_info(t, &info), 0);
		CHECK(info.page_size == HP && ((uintptr_t)info.host % HP) == 0);
		CHECK(eht_table_page_size(t) == HP);
		fill(t);
		gather(t, out2m);
		CHECK(memcmp(out4k, out2m, (size_t)NIDS * RB) == 0);
		/* A worker's import (same process here) maps the same huge pages. */
		json_t *desc = json_object();
		int *fds = NULL;
		size_t nfds = 0;
		CHECK_RC(eht_table_export(t, desc, &fds, &nfds), 0);
		struct eht_import_args ia = {.device = -1, .rank = 0, .nranks = 1};
		eht_table *w = NULL;
		CHECK_RC(eht_table_import(desc, fds, nfds, &ia, &w), 0);
		if (w) {
			CHECK(eht_table_page_size(w) == HP);
			memset(out2m, 0, (size_t)NIDS * RB);
			gather(w, out2m);
			CHECK(memcmp(out4k, out2m, (size_t)NIDS * RB) == 0);
			CHECK_RC(eht_table_close(w), 0);
		}
		for (size_t i = 0; i < nfds; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		free(fds);
		json_decref(desc);
		CHECK_RC(eht_table_close(t), 0);
	}
	/* Two ranks: the second gets the memfd by descriptor. */
	snprintf(key, sizeof(key), "t.huge.%d", (int)getpid());
	pid_t pids[2];
	for (int r = 0; r < 2; r++)
		if ((pids[r] = fork()) == 0)
			_exit(rank_main(r));
	for (int r = 0; r < 2; r++) {
		int st = 0;
		waitpid(pids[r], &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CHECK(eht_hugetlb_pool(HP, &pool) == 0 && pool.free == pool.total - (uint64_t)used); /* all given back */
	CHECK(t_set_nr_hugepages(nr0) == 0);
	CHECK(t_nr_hugepages() == nr0);
	free(out4k);
	free(out2m);
	t_rmtree(logdir);
	return t_done();
}
