/* SPDX-License-Identifier: Apache-2.0 */
/* test_st_rows.c: the row split for tensor parallelism, row ranges as file offsets, mapped views. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static void split_math(void)
{
	static const uint64_t rows_list[] = {0, 1, 3, 7, 8, 5000, 5001, 4099, 1000003};
	static const uint32_t ranks[] = {1, 2, 3, 4, 8};
	for (size_t a = 0; a < sizeof(rows_list) / sizeof(rows_list[0]); a++)
		for (size_t b = 0; b < sizeof(ranks) / sizeof(ranks[0]); b++) {
			uint64_t rows = rows_list[a], next = 0;
			uint32_t R = ranks[b];
			for (uint32_t r = 0; r < R; r++) {
				uint64_t first = 99, count = 99;
				CHECK_RC(eht_rows_split(rows, r, R, &first, &count), 0);
				/* contiguous, in rank order, covering every row once */
				CHECK(first == next);
				/* the first rows % R ranks get one more row */
				CHECK(count == rows / R + (r < rows % R ? 1 : 0));
				next = first + count;
			}
			CHECK(next == rows);
		}
	uint64_t f, c;
	/* hand-checked values: 10 rows over 4 ranks -> 3,3,2,2 */
	CHECK_RC(eht_rows_split(10, 1, 4, &f, &c), 0);
	CHECK(f == 3 && c == 3);
	CHECK_RC(eht_rows_split(10, 2, 4, &f, &c), 0);
	CHECK(f == 6 && c == 2);
	CHECK_RC(eht_rows_split(10, 3, 4, &f, &c), 0);
	CHECK(f == 8 && c == 2);
	CHECK_RC(eht_rows_split(2, 3, 4, &f, &c), 0);
	CHECK(f == 2 && c == 0);
	CHECK_RC(eht_rows_split(10, 4, 4, &f, &c), -EINVAL);
	CHECK_RC(eht_rows_split(10, 0, 0, &f, &c), -EINVAL);
	CHECK_RC(eht_rows_split(10, 0, 1, NULL, &c), -EINVAL);
}

static void ranges(const char *dir)
{
	struct eht_synth_opts o = {.size = sizeof(o), .tables = 2, .rows = 1001, .shards = 2, .seed = 9};
	eht_ckpt *c = NULL;
	long page = sysconf(_SC_PAGESIZE);
	CHECK_RC(eht_synth_checkpoint(dir, &o), 0);
	CHECK_RC(eht_ckpt_open(dir, 0, &c), 0);
	if (!c)
		return;
	static const uint32_t ranks[] = {1, 2, 3, 4, 8};
	size_t checked = 0;
	for (size_t i = 0; i < eht_ckpt_count(c); i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		CHECK_RC(eht_ckpt_tensor(c, i, &t), 0);
		uint64_t row_bytes = t.shape[1] * (uint64_t)eht_dtype_bits(t.dtype) / 8;
		for (size_t b = 0; b < sizeof(ranks) / sizeof(ranks[0]); b++) {
			uint64_t covered = 0;
			for (uint32_t r = 0; r < ranks[b]; r++) {
				struct eht_st_rows rr = {.size = sizeof(rr)};
				uint64_t f, n;
				CHECK_RC(eht_st_rows(&t, r, ranks[b], &rr), 0);
				CHECK_RC(eht_rows_split(t.shape[0], r, ranks[b], &f, &n), 0);
				CHECK(rr.first_row == f && rr.count == n && rr.rows == t.shape[0]);
				CHECK(rr.row_bytes == row_bytes && rr.nbytes == n * row_bytes);
				CHECK(rr.file_offset == t.file_offset + f * row_bytes);
				CHECK(!strcmp(rr.path, t.path) && !strcmp(rr.name, t.name));
				covered += rr.nbytes;
				eht_st_map *m = NULL;
				CHECK_RC(eht_st_map_rows(&rr, 0, &m), 0);
				if (!m)
					continue;
				const unsigned char *d = eht_st_map_data(m);
				CHECK(eht_st_map_bytes(m) == rr.nbytes);
				/* the view sits inside a page-aligned mapping at the file offset's place */
				CHECK((uintptr_t)d % (uintptr_t)page == rr.file_offset % (uint64_t)page);
				CHECK(memcmp(d, (const unsigned char *)t.data + f * row_bytes, (size_t)rr.nbytes) == 0);
				/* the fd reads the same bytes (what the disk tier preads) */
				if (rr.nbytes) {
					unsigned char *buf = malloc(rr.row_bytes);
					uint64_t last = rr.file_offset + (rr.count - 1) * rr.row_bytes;
					CHECK(pread(eht_st_map_fd(m), buf, rr.row_bytes, (off_t)last) == (ssize_t)rr.row_bytes);
					CHECK(memcmp(buf, d + (rr.count - 1) * rr.row_bytes, rr.row_bytes) == 0);
					free(buf);
				}
				CHECK_RC(eht_st_unmap(m), 0);
				checked++;
			}
			CHECK(covered == t.nbytes);
		}
	}
	CHECK(checked == 5 * (1 + 2 + 3 + 4 + 8));

	/* a rank with no rows maps nothing */
	struct eht_st_tensor_info t = {.size = sizeof(t)};
	struct eht_st_rows rr = {.size = sizeof(rr)};
	CHECK_RC(eht_ckpt_find(c, "layers.0.attn.dummy", &t), 0);
	CHECK_RC(eht_st_rows(&t, 1, 65, &rr), 0);
	CHECK(rr.count == 1);
	CHECK_RC(eht_st_rows(&t, 64, 65, &rr), 0);
	CHECK(rr.count == 0 && rr.first_row == 64);
	eht_st_map *m = NULL;
	CHECK_RC(eht_st_map_rows(&rr, 0, &m), 0);
	CHECK(m && eht_st_map_data(m) == NULL && eht_st_map_bytes(m) == 0);
	eht_st_unmap(m);
	/* refusals: bad rank, flags, a range outside the file */
	CHECK_RC(eht_st_rows(&t, 2, 2, &rr), -EINVAL);
	CHECK_RC(eht_st_rows(&t, 0, 2, &rr), 0);
	CHECK_RC(eht_st_map_rows(&rr, 1, &m), -EINVAL);
	rr.file_offset += 1u << 30;
	CHECK_RC(eht_st_map_rows(&rr, 0, &m), -EINVAL);
	CHECK(strstr(eht_last_error(), "not inside the file"));
	eht_ckpt_close(c);
}

static void shapes(void)
{
	/* not 2-D; a row that is not whole bytes (F4 x 3 columns) */
	static unsigned char img[256];
	const char *hdr = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2,2,2],\"data_offsets\":[0,8]},"
			  "\"b\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[8,11]}}";
	size_t n = strlen(hdr);
	for (int i = 0; i < 8; i++)
		img[i] = (unsigned char)((uint64_t)n >> (8 * i));
	memcpy(img + 8, hdr, n);
	eht_st_file *f = NULL;
	CHECK_RC(eht_st_open_memory(img, 8 + n + 11, 0, &f), 0);
	struct eht_st_tensor_info t = {.size = sizeof(t)};
	struct eht_st_rows rr = {.size = sizeof(rr)};
	CHECK_RC(eht_st_find(f, "a", &t), 0);
	CHECK_RC(eht_st_rows(&t, 0, 1, &rr), -EINVAL);
	CHECK(strstr(eht_last_error(), "2-D"));
	CHECK_RC(eht_st_find(f, "b", &t), 0);
	CHECK_RC(eht_st_rows(&t, 0, 1, &rr), -EINVAL);
	CHECK(strstr(eht_last_error(), "whole number of bytes"));
	eht_st_close(f);
}

int main(void)
{
	char *dir = t_tmpdir("st-rows");
	split_math();
	ranges(dir);
	shapes();
	t_rmtree(dir);
	return t_done();
}
