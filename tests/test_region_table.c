/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_table.c: a ready region becomes a table of the region tier that owns the region. */
#include <string.h>

#include "region_testutil.h"
#include "table/region/region_table.h"

int main(void)
{
	const char *dir = r_tmpdir("region-table");
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_UNLINK_WHEN_MAPPED, .dir = dir,
				    .rows = 1000, .row_bytes = EHT_ENGRAM_ROW_BYTES, .expected_peers = 1};
	eht_region *r = NULL;
	eht_table *t = NULL;
	CHECK_RC(eht_region_open("tbl", 0, &o, &r), 0);
	if (!r)
		return t_done();
	r_fill(eht_region_data(r), 1000 * EHT_ENGRAM_ROW_BYTES, 5);
	CHECK_RC(eht_table_from_region(&r, NULL, &t), -EINVAL); /* not ready yet */
	CHECK(r != NULL && t == NULL);
	CHECK_RC(eht_region_mark_ready(r), 0);
	void *data = eht_region_data(r);
	CHECK_RC(eht_table_from_region(NULL, NULL, &t), -EINVAL);
	CHECK_RC(eht_table_from_region(&r, "engram.l1", &t), 0);
	CHECK(r == NULL && t != NULL);
	struct eht_table_info info = {.size = sizeof(info)};
	CHECK_RC(eht_table_get_info(t, &info), 0);
	CHECK(info.tier == EHT_TIER_REGION);
	CHECK(info.rows == 1000 && info.local_rows == 1000 && info.row_bytes == EHT_ENGRAM_ROW_BYTES);
	CHECK(info.host == data && info.device_ptr == 0 && info.device == -1);
	CHECK(strcmp(info.name, "engram.l1") == 0 && strcmp(eht_tier_name(info.tier), "region") == 0);
	CHECK(info.page_size >= 4096);
	void *want = malloc(1000 * EHT_ENGRAM_ROW_BYTES);
	r_fill(want, 1000 * EHT_ENGRAM_ROW_BYTES, 5);
	CHECK(memcmp(info.host, want, 1000 * EHT_ENGRAM_ROW_BYTES) == 0);
	free(want);
	CHECK_RC(eht_table_close(t), 0);

	/* A region without geometry cannot become a table and stays the caller's. */
	struct eht_region_opts g = {.size = sizeof(g), .flags = EHT_REGION_UNLINK_WHEN_MAPPED, .dir = dir,
				    .expected_peers = 1};
	CHECK_RC(eht_region_open("flat", 4096, &g, &r), 0);
	CHECK_RC(eht_region_mark_ready(r), 0);
	CHECK_RC(eht_table_from_region(&r, NULL, &t), -EINVAL);
	CHECK(r != NULL);
	CHECK_RC(eht_region_close(&r), 0);
	CHECK(r_count_files(dir) == 0);
	t_rmtree(dir);
	return t_done();
}
