/* SPDX-License-Identifier: Apache-2.0 */
/* test_tier_edges.c: the tier seam's edges. A stop flag rides the share options (the region's
 * populate stops with -EINTR, leaving no file; serve passes its signal flag this way); tier names
 * come from the registry alone (eht_tier_name, the exported ids); every optional op, of a table and
 * of the registry, is filled with a default that refuses in words; read_rows copies rows into host
 * memory from host-pointer and disk tables, and refuses a device destination (-EOPNOTSUPP) where the
 * tier cannot write one. On the CPU. */
#include <string.h>
#include <unistd.h>

#include "region_testutil.h"
#include "table/table_impl.h"

#define ROWS 300
#define W "layers.1.engram.embed.weight"
#define S "layers.1.engram.embed.scale"

static void check_cancel(void)
{
	const char *dir = r_tmpdir("tier-edges");
	t_setenv("EHT_SHM_DIR", dir);
	eht_group *g = NULL;
	CHECK_RC(eht_group_create_single(&g), 0);
	volatile int stop = 1;
	struct eht_share_opts so = {.size = sizeof(so), .tier = EHT_TIER_REGION, .device = -1, .row_bytes = 64,
				    .name = "edges", .cancel = &stop};
	eht_table *t = NULL;
	CHECK_RC(eht_table_share(64 << 14, g, &so, &t), -EINTR);
	CHECK(t == NULL && r_count_files(dir) == 0);
	stop = 0; /* the same options without the stop: shared */
	CHECK_RC(eht_table_share(64 << 14, g, &so, &t), 0);
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK(t && eht_table_get_info(t, &ti) == 0 && ti.tier == EHT_TIER_REGION);
	CHECK_RC(eht_table_close(t), 0);
	eht_group_destroy(g);
	t_setenv("EHT_SHM_DIR", NULL);
	t_rmtree(dir);
}

static void check_names(void)
{
	int seen = 0;
	for (const struct eht_tier_def *k = eht_tier_list(); k->id; k++)
		for (int i = 0; i < 2 && k->tiers[i]; i++, seen++) {
			CHECK(eht_tier_of(k->tiers[i]) == k);
			CHECK(k->names[i] && !strcmp(eht_tier_name(k->tiers[i]), k->names[i]));
			CHECK(eht_tier_find(k->id) == k);
		}
	CHECK(seen == 5 && !strcmp(eht_tier_name(EHT_TIER_REGION_PINNED), "region-pinned"));
	CHECK(!strcmp(eht_tier_name(0), "none") && !strcmp(eht_tier_name(99), "none"));
}

static void check_defaults(void)
{
	/* The registry: every op set; caps say whose. */
	for (const struct eht_tier_def *k = eht_tier_list(); k->id; k++)
		CHECK(k->share && k->open_in_place && k->import);
	const struct eht_tier_def *mem = eht_tier_find("memory"), *disk = eht_tier_find("disk");
	CHECK(mem && mem->caps == 0 && disk && disk->caps == (EHT_TIER_IN_PLACE | EHT_TIER_CAN_IMPORT));
	CHECK(eht_tier_find("region")->caps == (EHT_TIER_CAN_SHARE | EHT_TIER_CAN_IMPORT));
	eht_table *t = NULL;
	CHECK_RC(mem->share(4096, NULL, NULL, EHT_TIER_MEMORY, true, &t), -EINVAL);
	CHECK(strstr(eht_last_error(), "cannot be shared") != NULL);
	CHECK_RC(mem->open_in_place(NULL, "w", NULL, "x", 0, 1, 0, &t), -ENOTSUP);
	json_t *d = json_pack("{s:s, s:s}", "name", "x", "tier", "memory");
	CHECK_RC(mem->import(d, NULL, 0, NULL, &t), -EPROTO);
	json_decref(d);

	/* A table whose tier gave no ops at all. */
	static const struct eht_table_ops none = {0};
	uint8_t rows[4 * 16];
	for (size_t i = 0; i < sizeof(rows); i++)
		rows[i] = (uint8_t)i;
	struct eht_table_info info = {.size = sizeof(info), .tier = EHT_TIER_MEMORY, .rows = 4, .row_bytes = 16,
				      .local_rows = 4, .host = rows, .device = -1, .numa_node = -1, .name = "bare"};
	CHECK_RC(eht_table_new(&info, &none, NULL, &t), 0);
	if (!t)
		return;
	CHECK(t->ops->describe && t->ops->read_rows && t->ops->export_to && t->ops->seal && t->ops->close);
	CHECK(t->tier_ops == &none);
	json_t *desc = json_object();
	int *fds = NULL;
	size_t nfds = 0;
	CHECK_RC(eht_table_export(t, desc, &fds, &nfds), -ENOTSUP);
	CHECK(strstr(eht_last_error(), "cannot be handed to another process") && fds == NULL && nfds == 0);
	json_decref(desc);
	eht_table_seal(t);
	uint64_t want[2] = {3, 1};
	uint8_t out[2 * 16];
	CHECK_RC(eht_table_read_rows(t, want, 2, out, 0), 0);
	CHECK(!memcmp(out, rows + 3 * 16, 16) && !memcmp(out + 16, rows + 16, 16));
	CHECK_RC(eht_table_close(t), 0);

	/* Without a host pointer either: read_rows refuses instead of reading nothing. */
	info.host = NULL;
	CHECK_RC(eht_table_new(&info, NULL, NULL, &t), 0);
	CHECK_RC(eht_table_read_rows(t, want, 2, out, 0), -EOPNOTSUPP);
	CHECK(strstr(eht_last_error(), "neither a host pointer nor its own read_rows") != NULL);
	CHECK_RC(eht_table_close(t), 0);
}

static void check_read_rows(void)
{
	/* A host-pointer tier (memory): host destination copies, device destination refused. */
	static uint8_t mem[ROWS * EHT_ENGRAM_ROW_BYTES];
	uint64_t s = 5;
	for (size_t i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)t_rand(&s);
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(mem, ROWS, EHT_ENGRAM_ROW_BYTES, -1, "edges", &t), 0);
	uint64_t rows[3] = {7, 299, 0};
	uint8_t out[3 * EHT_ENGRAM_ROW_BYTES];
	CHECK_RC(eht_table_read_rows(t, rows, 3, out, 0), 0);
	for (int i = 0; i < 3; i++)
		CHECK(!memcmp(out + i * EHT_ENGRAM_ROW_BYTES, mem + rows[i] * EHT_ENGRAM_ROW_BYTES, EHT_ENGRAM_ROW_BYTES));
	CHECK_RC(eht_table_read_rows(t, rows, 3, out, EHT_ROWS_TO_DEVICE), -EOPNOTSUPP);
	CHECK(strstr(eht_last_error(), "host memory only") != NULL);
	uint64_t bad = ROWS;
	CHECK_RC(eht_table_read_rows(t, &bad, 1, out, 0), -ERANGE);
	CHECK_RC(eht_table_read_rows(t, rows, 3, out, 0x80), -EINVAL);
	CHECK_RC(eht_table_close(t), 0);

	/* The disk tier: its own read_rows, the same bytes as the checkpoint; device refused. */
	char *dir = t_tmpdir("tier-edges-disk");
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 1, .shards = 1, .rows = ROWS, .seed = 3};
	CHECK_RC(eht_synth_checkpoint(dir, &so), 0);
	struct eht_disk_opts o = {.size = sizeof(o), .weight = W, .scale = S, .cache_bytes = EHT_DISK_NO_CACHE};
	CHECK_RC(eht_disk_open(dir, &o, &t), 0);
	eht_ckpt *ck = NULL;
	CHECK_RC(eht_ckpt_open(dir, 0, &ck), 0);
	struct eht_st_tensor_info w = {.size = sizeof(w)}, sc = {.size = sizeof(sc)};
	if (t && ck && eht_ckpt_find(ck, W, &w) == 0 && eht_ckpt_find(ck, S, &sc) == 0) {
		CHECK_RC(eht_table_read_rows(t, rows, 3, out, 0), 0);
		for (int i = 0; i < 3; i++) {
			CHECK(!memcmp(out + i * EHT_ENGRAM_ROW_BYTES, (const uint8_t *)w.data + rows[i] * 256, 256));
			CHECK(!memcmp(out + i * EHT_ENGRAM_ROW_BYTES + 256, (const uint8_t *)sc.data + rows[i] * 8, 8));
		}
		memset(out, 0xa5, sizeof(out));
		CHECK_RC(eht_table_read_rows(t, rows, 3, out, EHT_ROWS_TO_DEVICE), -EOPNOTSUPP);
		CHECK(strstr(eht_last_error(), "host memory only") != NULL && out[0] == 0xa5); /* nothing read */
	} else {
		CHECK(!"disk table or checkpoint did not open");
	}
	eht_ckpt_close(ck);
	CHECK_RC(eht_table_close(t), 0);
	t_rmtree(dir);
}

int main(void)
{
	check_cancel();
	check_names();
	check_defaults();
	check_read_rows();
	return t_done();
}
