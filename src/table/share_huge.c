/* SPDX-License-Identifier: Apache-2.0 */
/* share_huge.c: the auto tier's huge page test (share_huge.h). */
#include "table/share_huge.h"

#include "os/fsinfo.h"
#include "os/numa.h"
#include "util/settings.h"

bool eht_share_huge_first(uint64_t bytes, int gpus, int node)
{
	if (gpus <= 0 && !eht_setting_bool(EHT_SET_TEST_SHARE_HUGE_FIRST))
		return false;
	struct eht_hugetlb_pool pool;
	if (eht_hugetlb_pool(0, &pool) != 0 || !pool.page_size)
		return false;
	uint64_t need = eht_hugetlb_region_pages(bytes, pool.page_size);
	if (pool.available < need)
		return false;
	/* A region bound to a node faults its pages in from that node's pool. */
	if (node >= 0 && eht_numa_node_count() > 1)
		return eht_hugetlb_free(pool.page_size, node) / pool.page_size >= need;
	return true;
}
