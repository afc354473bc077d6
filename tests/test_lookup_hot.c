/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_hot.c: the CPU side of the GPU hot-row cache: the open-addressing index the kernels probe
 * (built on the host, probed here with the same hash: every member found at its slot, non-members
 * missed, repeats rejected), hot rows outside the held range rejected with a message naming them, the
 * hot-set file (round trip; bad magic, truncation, a count not matching the size, negative rows, empty
 * files rejected), and eht_lookup_set_hotset's errors on a CPU-only engine, also through the create
 * options. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "table/hotset.h"
#include "testutil.h"

static void check_index(size_t n, uint64_t *rs)
{
	uint64_t *loc = malloc((n + 1) * sizeof(*loc));
	struct eht_hot_index ix;
	/* Distinct rows: a random odd stride through 2^40 (clustered and spread keys both). */
	uint64_t base = t_rand(rs) % 1000, stride = (t_rand(rs) % 5 == 0) ? 1 : (t_rand(rs) | 1) % 100003;
	for (size_t i = 0; i < n; i++)
		loc[i] = (base + i * stride) & ((1ull << 40) - 1);
	CHECK_RC(eht_hot_index_build(loc, n, &ix), 0);
	CHECK(ix.cap >= 2 * n && (ix.cap & (ix.cap - 1)) == 0 && ix.cap == 1ull << ix.bits);
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += eht_hot_index_find(&ix, loc[i]) != (uint32_t)i;
	CHECK(bad == 0);
	for (int k = 0; k < 1000; k++) {
		uint64_t x = t_rand(rs) & ((1ull << 41) - 1);
		uint32_t f = eht_hot_index_find(&ix, x);
		CHECK(f == EHT_HOT_NONE || loc[f] == x);
	}
	CHECK(eht_hot_index_find(&ix, 1ull << 50) == EHT_HOT_NONE);
	eht_hot_index_free(&ix);
	if (n > 1) {
		loc[n] = loc[n / 2];
		CHECK_RC(eht_hot_index_build(loc, n + 1, &ix), -EINVAL);
		CHECK(strstr(eht_last_error(), "twice") != NULL);
		CHECK(ix.keys == NULL);
	}
	free(loc);
}

static void write_raw(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK(fwrite(p, 1, len, f) == len);
		fclose(f);
	}
}

static void check_file(void)
{
	char path[] = "/tmp/eht-test-hotset-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	int64_t rows[] = {7, 0, 123456789012345ll, 42};
	int64_t *got = NULL;
	uint64_t n = 0;
	CHECK_RC(eht_hotset_write(path, rows, 4), 0);
	CHECK_RC(eht_hotset_read(path, &got, &n), 0);
	CHECK(n == 4 && got && !memcmp(got, rows, sizeof(rows)));
	free(got);
	/* What it writes is a safetensors file: one I64 tensor "hotset" [4] holding the rows. */
	eht_st_file *sf = NULL;
	struct eht_st_tensor_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_st_open(path, 0, &sf), 0);
	CHECK(sf && eht_st_count(sf) == 1);
	CHECK(sf && eht_st_find(sf, "hotset", &ti) == 0 && ti.dtype == EHT_DTYPE_I64 && ti.ndim == 1 &&
	      ti.shape[0] == 4 && !memcmp(ti.data, rows, sizeof(rows)));
	CHECK(sf && eht_st_metadata_get(sf, "format") && !strcmp(eht_st_metadata_get(sf, "format"), "eht-hotset-1"));
	eht_st_close(sf);
	/* Another safetensors file (two tensors, or one of another dtype) is not a hot set. */
	static const uint64_t shp[1] = {2};
	static const int32_t i32[2] = {1, 2};
	struct eht_st_write_tensor w2[2] = {{"a", EHT_DTYPE_I64, 1, shp, rows, NULL, NULL},
					    {"b", EHT_DTYPE_I64, 1, shp, rows, NULL, NULL}};
	CHECK_RC(eht_st_write(path, w2, 2, NULL, 0), 0);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	CHECK(strstr(eht_last_error(), "not a hot-set file") != NULL);
	struct eht_st_write_tensor w1 = {"hotset", EHT_DTYPE_I32, 1, shp, i32, NULL, NULL};
	CHECK_RC(eht_st_write(path, &w1, 1, NULL, 0), 0);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	static const int64_t neg[2] = {3, -1};
	struct eht_st_write_tensor wn = {"hotset", EHT_DTYPE_I64, 1, shp, neg, NULL, NULL};
	CHECK_RC(eht_st_write(path, &wn, 1, NULL, 0), 0);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	CHECK(strstr(eht_last_error(), "negative") != NULL);
	CHECK_RC(eht_hotset_write(path, rows, 0), -EINVAL);

	/* The first format ("EHTHOT1\n", count, rows) is still read. */

	uint8_t buf[64];
	memcpy(buf, EHT_HOTSET_MAGIC, 8);
	memset(buf + 8, 0, 56);
	buf[8] = 2; /* two rows: 1 and 2 */
	buf[16] = 1;
	buf[24] = 2;
	write_raw(path, buf, 32);
	CHECK_RC(eht_hotset_read(path, &got, &n), 0);
	CHECK(n == 2 && got && got[0] == 1 && got[1] == 2);
	free(got);
	/* Truncated, then longer than the count says. */
	write_raw(path, buf, 31);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	CHECK(strstr(eht_last_error(), "header says 2 rows") != NULL);
	CHECK(got == NULL && n == 0);
	write_raw(path, buf, 40);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	/* A count so large that 16 + 8 x count wraps. */
	buf[15] = 0x20;
	write_raw(path, buf, 32);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	buf[15] = 0;
	/* Negative row. */
	memset(buf + 24, 0xff, 8);
	write_raw(path, buf, 32);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	CHECK(strstr(eht_last_error(), "negative") != NULL);
	/* Empty set, bad magic, short file, missing file. */
	buf[8] = 0;
	write_raw(path, buf, 16);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	buf[8] = 2;
	buf[0] = 'X';
	write_raw(path, buf, 32);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	CHECK(strstr(eht_last_error(), "not a hot-set file") != NULL);
	write_raw(path, buf, 5);
	CHECK_RC(eht_hotset_read(path, &got, &n), -EINVAL);
	unlink(path);
	CHECK_RC(eht_hotset_read(path, &got, &n), -ENOENT);
}

int main(void)
{
	uint64_t rs = 11;
	static const size_t ns[] = {1, 2, 3, 100, 4096, 100000};
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
		for (int rep = 0; rep < 3; rep++)
			check_index(ns[k], &rs);

	/* Dead rows: below and above the held range. */
	int64_t rows[] = {10, 11, 19};
	uint64_t loc[3];
	CHECK_RC(eht_hot_rows_local(rows, 3, 10, 20, loc), 0);
	CHECK(loc[0] == 0 && loc[2] == 9);
	rows[1] = 20;
	CHECK_RC(eht_hot_rows_local(rows, 3, 10, 20, loc), -EINVAL);
	CHECK(strstr(eht_last_error(), "row 20 (entry 1)") != NULL);
	rows[1] = 9;
	CHECK_RC(eht_hot_rows_local(rows, 3, 10, 20, loc), -EINVAL);

	check_file();

	/* The API on a CPU-only engine. */
	uint8_t tab[4 * 16] = {0};
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(tab, 4, 16, 0, "hot-cpu", &t), 0);
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				    .device = -1, .numa_node = -1, .threads = 1};
	eht_lookup *lk = NULL;
	if (t)
		CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	int64_t hot[] = {1};
	CHECK_RC(eht_lookup_set_hotset(NULL, hot, 1), -EINVAL);
	if (lk) {
		CHECK_RC(eht_lookup_set_hotset(lk, hot, 1), -EINVAL);
		CHECK(strstr(eht_last_error(), "GPU") != NULL);
		CHECK(eht_lookup_hotset_rows(lk) == 0);
	}
	CHECK(eht_lookup_hotset_rows(NULL) == 0);
	/* A hot set in the create options: refused on a CPU-only engine, and rows without the array. */
	eht_lookup *lk2 = NULL;
	struct eht_lookup_opts o2 = o;
	o2.hotset = hot;
	o2.hotset_rows = 1;
	if (t) {
		CHECK_RC(eht_lookup_create(t, &o2, &lk2), -EINVAL);
		CHECK(lk2 == NULL && strstr(eht_last_error(), "opts hotset") && strstr(eht_last_error(), "GPU"));
		o2.hotset = NULL;
		CHECK_RC(eht_lookup_create(t, &o2, &lk2), -EINVAL);
		CHECK(lk2 == NULL && strstr(eht_last_error(), "without hotset"));
		o2.hotset_rows = 0; /* none: fine */
		CHECK_RC(eht_lookup_create(t, &o2, &lk2), 0);
		eht_lookup_destroy(lk2);
	}
	eht_lookup_destroy(lk);
	eht_table_close(t);
	return t_done();
}
