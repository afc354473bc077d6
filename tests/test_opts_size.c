/* SPDX-License-Identifier: Apache-2.0 */
/* test_opts_size.c: structs that grow by `size` stay compatible both ways: an older caller's smaller
 * struct is accepted (missing fields take their defaults), a newer caller's larger struct is accepted
 * when its unknown trailing bytes are zero and refused with -E2BIG otherwise; output structs are
 * filled up to the caller's size, bytes past what this library knows zeroed. */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/* A caller built against a newer eht.h: the known struct followed by one more field. */
struct lookup_opts_v2 {
	struct eht_lookup_opts v1;
	uint64_t newer_field;
};
struct table_info_v2 {
	struct eht_table_info v1;
	uint64_t newer_field;
};

static void synth_sizes(void)
{
	char *dir = t_tmpdir("opts");
	/* older: only size and flags (every other field takes its default) */
	struct eht_synth_opts o = {.size = offsetof(struct eht_synth_opts, tables), .tables = 7, .rows = 3};
	CHECK_RC(eht_synth_checkpoint(dir, &o), 0);
	eht_st_file *f = NULL;
	char p[512];
	snprintf(p, sizeof(p), "%s/model.safetensors", dir);
	CHECK_RC(eht_st_open(p, 0, &f), 0);
	CHECK(eht_st_count(f) == 2 * EHT_SYNTH_DEFAULT_TABLES + 1); /* tables 7 ignored: past the size */
	struct eht_st_tensor_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_st_tensor(f, 0, &ti), 0);
	eht_st_close(f);

	/* newer, unknown bytes zero: accepted; non-zero: -E2BIG naming the byte */
	struct {
		struct eht_synth_opts v1;
		uint32_t more[4];
	} big;
	memset(&big, 0, sizeof(big));
	big.v1.size = sizeof(big);
	big.v1.rows = 10;
	CHECK_RC(eht_synth_checkpoint(dir, &big.v1), 0);
	big.more[2] = 1;
	CHECK_RC(eht_synth_checkpoint(dir, &big.v1), -E2BIG);
	CHECK(strstr(eht_last_error(), "eht_synth_checkpoint") && strstr(eht_last_error(), "not zero"));
	/* size not set */
	struct eht_synth_opts z = {0};
	CHECK_RC(eht_synth_checkpoint(dir, &z), -EINVAL);
	snprintf(p, sizeof(p), "%s/model.safetensors", dir);
	CHECK(unlink(p) == 0);
	CHECK(rmdir(dir) == 0);
}

static void lookup_and_info_sizes(void)
{
	static uint8_t rows[16 * 8];
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(rows, 16, 8, -1, "opts", &t), 0);
	if (!t)
		return;
	/* output: a smaller (older) info gets its prefix; nothing past it is written */
	struct {
		struct eht_table_info info;
		unsigned char canary[8];
	} small;
	memset(&small, 0xa5, sizeof(small));
	small.info.size = offsetof(struct eht_table_info, row_bytes);
	CHECK_RC(eht_table_get_info(t, &small.info), 0);
	CHECK(small.info.size == offsetof(struct eht_table_info, row_bytes));
	CHECK(small.info.tier == EHT_TIER_MEMORY && small.info.rows == 16);
	const unsigned char *b = (const unsigned char *)&small.info;
	int untouched = 1;
	for (size_t i = offsetof(struct eht_table_info, row_bytes); i < sizeof(small); i++)
		untouched &= b[i] == 0xa5;
	CHECK(untouched);
	/* output: a larger (newer) info: the unknown field zeroed */
	struct table_info_v2 i2;
	memset(&i2, 0xa5, sizeof(i2));
	i2.v1.size = sizeof(i2);
	CHECK_RC(eht_table_get_info(t, &i2.v1), 0);
	CHECK(i2.v1.row_bytes == 8 && i2.newer_field == 0 && i2.v1.size == sizeof(i2));
	struct eht_table_info i0 = {0};
	CHECK_RC(eht_table_get_info(t, &i0), -EINVAL);

	/* options: older (size and flags only, CPU-only) accepted; newer with a set field refused */
	struct eht_lookup_opts lo = {.size = offsetof(struct eht_lookup_opts, strategy), .flags = EHT_LOOKUP_CPU_ONLY};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &lo, &lk), 0);
	eht_lookup_destroy(lk);
	lk = NULL;
	struct lookup_opts_v2 l2 = {.v1 = {.size = sizeof(l2), .flags = EHT_LOOKUP_CPU_ONLY, .device = -1,
					   .numa_node = -1}};
	CHECK_RC(eht_lookup_create(t, &l2.v1, &lk), 0);
	eht_lookup_destroy(lk);
	lk = NULL;
	l2.newer_field = 42;
	CHECK_RC(eht_lookup_create(t, &l2.v1, &lk), -E2BIG);
	CHECK(lk == NULL);
	eht_table_close(t);
}

static void region_and_attach_sizes(void)
{
	struct {
		struct eht_region_opts v1;
		uint64_t more;
	} r = {.v1 = {.size = sizeof(r), .flags = EHT_REGION_KEEP}, .more = 1};
	eht_region *reg = NULL;
	CHECK_RC(eht_region_open("eht-test-opts-size", 4096, &r.v1, &reg), -E2BIG);
	CHECK(reg == NULL);
	struct {
		struct eht_attach_opts v1;
		uint32_t more;
	} a = {.v1 = {.size = sizeof(a), .device = -1, .timeout_ms = 1}, .more = 3};
	eht_client *c = NULL;
	CHECK_RC(eht_attach("eht-test-opts-size", &a.v1, &c), -E2BIG);
}

int main(void)
{
	synth_sizes();
	lookup_and_info_sizes();
	region_and_attach_sizes();
	return t_done();
}
