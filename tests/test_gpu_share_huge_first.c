/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_share_huge_first.c: eht_table_share's auto tier on a GPU node takes region-pinned on 2 MiB
 * hugetlb pages when the huge page pool has room for the table (the GPU reads through the table's
 * device pointer match the CPU's bytes), and host-NUMA, as before, when the pool has none. The
 * pool is resized by the test and put back (root only). Skips (77) without a GPU. CUDA is only
 * ever initialized in forked children. */
#include <string.h>

#include "gpu/dev.h"
#include "os/fsinfo.h"
#include "region_testutil.h"
#include "table/table_impl.h"
#include "util/err.h"

#define HP (2ull << 20)
#define RB 264u
#define ROWS 100000u /* 25 MiB: 13 data pages + the header page */

static eht_table *share(int tier, const char *name)
{
	eht_group *g = NULL;
	eht_table *t = NULL;
	struct eht_share_opts so = {.size = sizeof(so), .device = 0, .tier = tier, .row_bytes = RB, .name = name};
	if (eht_group_create_single(&g) == 0 && eht_table_share((uint64_t)ROWS * RB, g, &so, &t) != 0)
		fprintf(stderr, "%s: %s\n", name, eht_last_error());
	eht_group_destroy(g);
	return t;
}

/* Child, pool with room: region-pinned on huge pages, the GPU's view the CPU's bytes. */
static void room_child(void)
{
	eht_table *t = share(0, "huge-first");
	CHECK(t != NULL);
	struct eht_table_info info = {.size = sizeof(info)};
	if (!t || eht_table_get_info(t, &info))
		_exit(t_done());
	fprintf(stderr, "room: tier %s, page size %llu\n", eht_tier_name(info.tier), (unsigned long long)info.page_size);
	CHECK(info.tier == EHT_TIER_REGION_PINNED && info.page_size == HP && info.device_ptr != 0);
	uint8_t *p = info.host;
	r_fill(p, (size_t)ROWS * RB, 0x4a6e);
	static uint8_t buf[1u << 20];
	const uint64_t offs[] = {0, 12345 * RB, (uint64_t)ROWS * RB - sizeof(buf)};
	CHECK_RC(eht_dev_use(0), 0);
	for (size_t i = 0; info.device_ptr && i < sizeof(offs) / sizeof(offs[0]); i++) {
		memset(buf, 0xee, sizeof(buf));
		CHECK_RC(eht_dev_d2h(buf, info.device_ptr + offs[i], sizeof(buf)), 0);
		CHECK(memcmp(buf, p + offs[i], sizeof(buf)) == 0);
	}
	CHECK_RC(eht_table_close(t), 0);
	_exit(t_done());
}

/* Child, no room: the tier host-NUMA gives when asked for, as before. */
static void no_room_child(void)
{
	eht_table *h = share(EHT_TIER_HOST_NUMA, "host-numa");
	int want = h ? EHT_TIER_HOST_NUMA : -1; /* without host-NUMA here, any tier but this path's */
	eht_err_clear();
	if (h)
		CHECK_RC(eht_table_close(h), 0);
	eht_table *t = share(0, "no-room");
	struct eht_table_info info = {.size = sizeof(info)};
	CHECK(t != NULL && eht_table_get_info(t, &info) == 0);
	fprintf(stderr, "no room: tier %s, page size %llu\n", eht_tier_name(info.tier), (unsigned long long)info.page_size);
	CHECK(want < 0 ? info.page_size != HP : info.tier == want);
	if (t)
		CHECK_RC(eht_table_close(t), 0);
	_exit(t_done());
}

int main(void)
{
	if (!t_have_gpu_forked())
		t_skip("no CUDA GPU");
	struct eht_hugetlb_pool pool;
	long nr0 = t_hugepages_resizable_or_skip(&pool);
	const long need = 1 + (long)(((uint64_t)ROWS * RB + HP - 1) / HP);
	long used = (long)(pool.total - pool.available);

	CHECK(t_set_nr_hugepages(used) == 0);
	pid_t c = fork();
	if (c == 0)
		no_room_child();
	CHECK(r_wait(c) == 0);

	CHECK(t_set_nr_hugepages(used + need) == 0);
	if (t_hugepages_available() != (uint64_t)need) {
		t_set_nr_hugepages(nr0);
		t_skip("no memory for the table's huge pages");
	}
	c = fork();
	if (c == 0)
		room_child();
	CHECK(r_wait(c) == 0);
	CHECK(t_hugepages_available() == (uint64_t)need); /* all given back */
	CHECK(t_set_nr_hugepages(nr0) == 0);
	return t_done();
}
