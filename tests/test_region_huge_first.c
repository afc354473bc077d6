/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_huge_first.c: the auto tier's huge page test (table/share_huge.h): it says yes only
 * with a GPU and a pool with room for the table and its header page, to the page; and the path it
 * opens in eht_table_share. Without a GPU (EHT_TEST_SHARE_HUGE_FIRST stands in for one) the
 * region-pinned attempt cannot pin, so the usual order follows and ends in the region tier on huge
 * pages, with every page of the failed attempt given back; two ranks take the same path (rank 0
 * decides for the group). The pool is resized by the test and put back (root only; skips
 * otherwise). No GPU needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/fsinfo.h"
#include "os/numa.h"
#include "table/share_huge.h"
#include "table/table_impl.h"
#include "testutil.h"

#define HP (2ull << 20)
#define RB 264u
#define ROWS 20000u /* 5.3 MiB: 3 data pages + the header page */

static char key[64];

/* eht_table_share in the auto tier; checks the table is a region on huge pages, filled and read. */
static int share_auto(eht_group *g, const char *name)
{
	eht_table *t = NULL;
	struct eht_share_opts so = {.size = sizeof(so), .device = -1, .tier = 0, .row_bytes = RB, .name = name};
	int rc = eht_table_share((uint64_t)ROWS * RB, g, &so, &t);
	if (rc) {
		fprintf(stderr, "%s: %s\n", name, eht_last_error());
		return 1;
	}
	struct eht_table_info info = {.size = sizeof(info)};
	int bad = eht_table_get_info(t, &info) != 0;
	bad |= info.tier != EHT_TIER_REGION || info.page_size != HP || eht_table_page_size(t) != HP;
	if (bad)
		fprintf(stderr, "%s: tier %d, page size %llu\n", name, info.tier, (unsigned long long)info.page_size);
	uint8_t *p = info.host;
	if (p && eht_group_rank(g) == 0)
		for (uint64_t r = 0; r < ROWS; r += 7)
			p[r * RB] = (uint8_t)r;
	bad |= eht_group_barrier(g) != 0;
	for (uint64_t r = 0; p && r < ROWS; r += 7)
		bad |= p[r * RB] != (uint8_t)r;
	bad |= eht_table_close(t) != 0;
	return bad;
}

static int rank_main(int rank)
{
	eht_group *g = NULL;
	struct eht_group_opts go = {.size = sizeof(go), .timeout_ms = 20000};
	if (eht_group_create(key, rank, 2, &go, &g))
		return 3;
	int bad = share_auto(g, "huge-first-2");
	eht_group_destroy(g);
	return bad;
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	t_setenv("EHT_LOG", "info"); /* the fallback's line says which path the share took */
	struct eht_hugetlb_pool pool;
	long nr0 = t_hugepages_resizable_or_skip(&pool);
	const uint64_t bytes = (uint64_t)ROWS * RB, need = 1 + (bytes + HP - 1) / HP; /* 4 pages */
	long used = (long)(pool.total - pool.available);

	/* The test itself: no GPU, no; room for the table to the page, yes; one page short, no. */
	CHECK(t_set_nr_hugepages(used + (long)need) == 0);
	if (t_hugepages_available() != need) {
		t_set_nr_hugepages(nr0);
		t_skip("no memory for a few huge pages");
	}
	CHECK(!eht_share_huge_first(bytes, 0, -1));
	CHECK(eht_share_huge_first(bytes, 1, -1));
	if (eht_numa_node_count() == 1) /* one node: the pool's count is the node's */
		CHECK(eht_share_huge_first(bytes, 2, 0));
	CHECK(!eht_share_huge_first(bytes + (HP - bytes % HP) + 1, 1, -1));
	CHECK(t_set_nr_hugepages(used + (long)need - 1) == 0);
	CHECK(!eht_share_huge_first(bytes, 1, -1));
	CHECK(t_set_nr_hugepages(used) == 0);
	CHECK(!eht_share_huge_first(bytes, 1, -1));

	/* The path: region-pinned first (here it cannot pin), then host-NUMA (no GPU), then the region:
	 * on huge pages, as the first attempt gave back what it took. */
	t_setenv("EHT_TEST_SHARE_HUGE_FIRST", "1");
	CHECK(t_set_nr_hugepages(used + 2 * (long)need) == 0);
	uint64_t before = t_hugepages_available();
	if (before < need) { /* the kernel grants what fragmented memory allows, maybe less than asked */
		t_set_nr_hugepages(nr0);
		t_skip("no memory for the huge pages of the share path");
	}
	char *dir = t_tmpdir("hfirst"), path[512];
	snprintf(path, sizeof(path), "%s/share.log", dir);
	int saved = dup(2);
	CHECK(t_stderr_to(path) == 0);
	eht_group *g = NULL;
	CHECK_RC(eht_group_create_single(&g), 0);
	CHECK(share_auto(g, "huge-first") == 0);
	eht_group_destroy(g);
	dup2(saved, 2);
	close(saved);
	CHECK(t_count_lines(path, "region-pinned on huge pages failed") == 1); /* the path was taken */
	CHECK(t_count_lines(path, "could not pin the region for GPU DMA (no GPU)") == 1);
	t_rmtree(dir);
	CHECK(t_hugepages_available() == before);
	/* Two ranks: both try the same tiers in the same order, each collective matched. */
	snprintf(key, sizeof(key), "t.hfirst.%d", (int)getpid());
	pid_t pids[2];
	for (int r = 0; r < 2; r++)
		if ((pids[r] = fork()) == 0)
			_exit(rank_main(r));
	for (int r = 0; r < 2; r++) {
		int st = 0;
		waitpid(pids[r], &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CHECK(t_hugepages_available() == before);
	CHECK(t_set_nr_hugepages(nr0) == 0);
	CHECK(t_nr_hugepages() == nr0);
	return t_done();
}
