/* SPDX-License-Identifier: Apache-2.0 */
/* test_tier_seam.c: the tier interface: a region table exported (description + descriptor) and
 * imported through the registry by tier id maps the same pages; a description that claims more than
 * the file holds, an unknown tier, a wrong descriptor count and an unexportable tier are refused. */
#include <string.h>
#include <unistd.h>

#include "region_testutil.h"
#include "table/region/region_table.h"
#include "table/table_impl.h"

int main(void)
{
	const char *dir = r_tmpdir("tier-seam");
	const uint64_t rows = 1000, rb = EHT_ENGRAM_ROW_BYTES;
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_UNLINK_WHEN_MAPPED, .dir = dir,
				    .rows = rows, .row_bytes = rb, .expected_peers = 1};
	eht_region *r = NULL;
	eht_table *t = NULL, *u = NULL;
	CHECK_RC(eht_region_open("seam", 0, &o, &r), 0);
	if (!r)
		return t_done();
	r_fill(eht_region_data(r), rows * rb, 9);
	CHECK_RC(eht_region_mark_ready(r), 0);
	CHECK_RC(eht_table_from_region(&r, "engram.seam", &t), 0);

	/* Every tier names itself; the registry finds it by id and by tier number. */
	CHECK(eht_tier_find("region") == eht_tier_of(EHT_TIER_REGION));
	CHECK(eht_tier_of(EHT_TIER_REGION_PINNED) == eht_tier_of(EHT_TIER_REGION));
	CHECK(eht_tier_find("host-numa") && eht_tier_find("disk") && eht_tier_find("memory"));
	CHECK(eht_tier_find("nonsense") == NULL && eht_tier_of(99) == NULL);

	json_t *desc = json_object();
	int *fds = NULL;
	size_t nfds = 0;
	CHECK_RC(eht_table_export(t, desc, &fds, &nfds), 0);
	CHECK(nfds == 1 && fds && fds[0] >= 0);
	CHECK(strcmp(eht_desc_str(desc, "tier"), "region") == 0 && eht_desc_u64(desc, "rows") == rows);
	struct eht_import_args a = {.device = -1, .rank = 0, .nranks = 1};
	if (nfds == 1) {
		/* Imported in this process: another mapping of the same pages. */
		CHECK_RC(eht_table_import(desc, fds, nfds, &a, &u), 0);
		struct eht_table_info ti = {.size = sizeof(ti)}, ui = {.size = sizeof(ui)};
		CHECK_RC(eht_table_get_info(t, &ti), 0);
		CHECK_RC(eht_table_get_info(u, &ui), 0);
		CHECK(ui.tier == EHT_TIER_REGION && ui.rows == rows && ui.row_bytes == rb && ui.host != ti.host);
		CHECK(ui.numa_node == ti.numa_node && ui.page_size == ti.page_size);
		if (ui.host && ti.host) {
			CHECK(memcmp(ui.host, ti.host, rows * rb) == 0);
			((uint8_t *)ti.host)[rb * 7] ^= 0xff; /* shared pages: seen through the other mapping */
			CHECK(((uint8_t *)ui.host)[rb * 7] == ((uint8_t *)ti.host)[rb * 7]);
		}
		CHECK_RC(eht_table_close(u), 0);

		/* The file decides, not the description: one byte more than the file holds is refused. */
		json_t *big = json_deep_copy(desc);
		json_object_set_new(big, "file_bytes", json_integer((json_int_t)eht_desc_u64(desc, "file_bytes") + 1));
		json_object_set_new(big, "rows", json_integer((json_int_t)rows));
		u = NULL;
		CHECK_RC(eht_table_import(big, fds, nfds, &a, &u), -EPROTO);
		CHECK(u == NULL && strstr(eht_last_error(), "bytes") != NULL);
		json_decref(big);

		CHECK_RC(eht_table_import(desc, fds, 0, &a, &u), -EPROTO); /* no descriptor */
		json_t *odd = json_deep_copy(desc);
		json_object_set_new(odd, "tier", json_string("tape"));
		CHECK_RC(eht_table_import(odd, fds, nfds, &a, &u), -EPROTO);
		CHECK(strstr(eht_last_error(), "tape") != NULL);
		json_decref(odd);
		close(fds[0]);
	}
	free(fds);
	json_decref(desc);
	CHECK_RC(eht_table_close(t), 0);

	/* Caller-owned memory cannot be handed to another process. */
	static uint8_t mem[4 * 64];
	CHECK_RC(eht_table_wrap(mem, 4, 64, -1, "mine", &t), 0);
	desc = json_object();
	fds = NULL;
	CHECK_RC(eht_table_export(t, desc, &fds, &nfds), -ENOTSUP);
	CHECK(fds == NULL && nfds == 0);
	json_decref(desc);
	struct eht_table_info mi = {.size = sizeof(mi)};
	CHECK_RC(eht_table_get_info(t, &mi), 0);
	CHECK(mi.tier == EHT_TIER_MEMORY && mi.host == mem && mi.device == -1);
	CHECK_RC(eht_table_close(t), 0);

	CHECK(r_count_files(dir) == 0);
	t_rmtree(dir);
	return t_done();
}
