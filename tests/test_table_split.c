/* SPDX-License-Identifier: Apache-2.0 */
/* test_table_split.c: eht_table_wrap_split, a table over an engine's own split storage (weights
 * [rows, 256] then scales [rows, 8], in one allocation or two) gives the same bytes as the packed
 * table of the same rows: through the HOST strategy (raw and bf16, request order and sorted) and
 * through an engram layer; its argument errors, and eht_table_wrap_split2's (options, a GPU where
 * there is none). Runs without a GPU (test_gpu_lookup_split reads split tables on one). */
#include <string.h>

#include "engram_layer_ref.h"
#include "testutil.h"

#define ROWS 5000u

static void same_lookups(eht_table *split, eht_table *packed, uint64_t *rs)
{
	for (int fmt = 0; fmt < 2; fmt++)
		for (unsigned flags = 0; flags <= EHT_LOOKUP_HOST_SORT; flags += EHT_LOOKUP_HOST_SORT) {
			struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_HOST, .format = fmt,
						    .device = -1, .numa_node = -1, .threads = 3,
						    .flags = EHT_LOOKUP_CPU_ONLY | flags};
			eht_lookup *a = NULL, *b = NULL;
			CHECK_RC(eht_lookup_create(split, &o, &a), 0);
			CHECK_RC(eht_lookup_create(packed, &o, &b), 0);
			const size_t n = 3000, ob = fmt ? 512 : LR_RB;
			int64_t *ids = malloc(n * 8);
			uint8_t *x = malloc(n * ob), *y = malloc(n * ob);
			for (size_t i = 0; i < n; i++)
				ids[i] = i % 17 == 0 ? -1 : (int64_t)(t_rand(rs) % (ROWS + 3)); /* dead ones too */
			uint64_t da = 0, db = 0;
			if (a && b && ids && x && y) {
				CHECK_RC(eht_lookup_run(a, ids, EHT_ID_INT64, 0, n, x, NULL, 0, &da), 0);
				CHECK_RC(eht_lookup_run(b, ids, EHT_ID_INT64, 0, n, y, NULL, 0, &db), 0);
				CHECK(da == db && da > 0);
				CHECK(memcmp(x, y, n * ob) == 0);
			}
			free(ids);
			free(x);
			free(y);
			eht_lookup_destroy(a);
			eht_lookup_destroy(b);
		}
}

static void same_layer(eht_table *split, const uint8_t *packed_rows, uint64_t *rs)
{
	eht_engram_layout *lay = NULL;
	CHECK_RC(eht_engram_layout_preset("v41-small", &lay), 0);
	struct lr_case c = {.tp = 4, .rank = 2, .fmt = EHT_LOOKUP_BF16, .T = 300, .layout = 1, .out_pad = 32};
	if (!lay || lr_rank(lay, &c))
		return;
	c.ve = c.ve < ROWS ? c.ve : ROWS;
	c.vs = c.vs < c.ve ? c.vs : 0;
	struct eht_engram_layer_opts o = {.size = sizeof(o), .head_start = c.head_start, .part = c.part,
					  .format = c.fmt, .device = -1, .vocab_start = (uint64_t)c.vs,
					  .vocab_end = (uint64_t)c.ve};
	eht_engram_layer *l = NULL;
	CHECK_RC(eht_engram_layer_create(split, &o, &l), 0);
	int64_t *m = malloc(c.T * LR_H * 8), s_tok, s_head;
	const uint64_t stride = c.part * 512 + c.out_pad;
	uint8_t *out = malloc(c.T * stride);
	size_t ib = 0;
	if (l && m && out) {
		lr_matrix(&c, ROWS, m, rs);
		void *ids = lr_ids(&c, m, &s_tok, &s_head, &ib);
		CHECK_RC(eht_engram_layer_lookup(l, ids, c.id64 ? EHT_ID_INT64 : EHT_ID_INT32, c.T, s_tok, s_head, out, stride,
						 EHT_ENGRAM_LAYER_HOST, NULL), 0);
		CHECK(lr_compare(&c, m, packed_rows, 0, ROWS, 0, out, stride) == 0);
		free(ids);
	}
	free(m);
	free(out);
	eht_engram_layer_destroy(l);
	eht_engram_layout_free(lay);
}

/* eht_table_wrap_split2: every argument error is -errno naming the table; a GPU where there is none
 * is -ENODEV (or, with CPU_FALLBACK, a CPU-only table that reads as the packed one). */
static void wrap2_errors(uint8_t *one, uint8_t *w, uint8_t *s, eht_table *packed, uint64_t *rs)
{
	eht_table *t = NULL;
	struct eht_wrap_split_opts o = {.size = sizeof(o), .device = -1, .name = "w2"};
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, NULL), -EINVAL);
	CHECK_RC(eht_table_wrap_split2(NULL, 256, s, 8, ROWS, &o, &t), -EINVAL);
	CHECK(strstr(eht_last_error(), "w2") && strstr(eht_last_error(), "NULL weights"));
	CHECK_RC(eht_table_wrap_split2(w, 256, NULL, 8, ROWS, &o, &t), -EINVAL);
	CHECK(strstr(eht_last_error(), "NULL scales") != NULL);
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 0, ROWS, &o, &t), -EINVAL);
	CHECK_RC(eht_table_wrap_split2(one, 256, one + 4096, 8, ROWS, &o, &t), -EINVAL);
	CHECK(strstr(eht_last_error(), "w2") && strstr(eht_last_error(), "overlap"));
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, UINT64_MAX / 100, &o, &t), -EOVERFLOW);
	o.flags = 0x80;
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, &t), -EINVAL);
	CHECK(strstr(eht_last_error(), "w2") && strstr(eht_last_error(), "flags"));
	o.flags = 0;
	o.device = -2;
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, &t), -EINVAL);
	CHECK(strstr(eht_last_error(), "device -2") != NULL);
	o.device = -1;
	o.size = 0;
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, &t), -EINVAL);
	struct {
		struct eht_wrap_split_opts o;
		uint64_t newer; /* a field of a newer eht.h, set */
	} big = {.o = {.size = sizeof(big), .device = -1}, .newer = 1};
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, ROWS, &big.o, &t), -E2BIG);
	big.newer = 0; /* zero: accepted */
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, ROWS, &big.o, &t), 0);
	eht_table_close(t);
	t = NULL;
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, ROWS, NULL, &t), 0); /* defaults: CPU only */
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_table_get_info(t, &ti), 0);
	CHECK(ti.device == -1 && ti.device_ptr == 0 && ti.host == NULL && !strcmp(ti.name, "memory-split"));
	eht_table_close(t);
	t = NULL;
	CHECK(t == NULL);
	/* A GPU for in-place reads where there is none: an error naming the table, or with CPU_FALLBACK a
	 * CPU-only table (one warning). */
	if (t_have_gpu())
		return; /* test_gpu_lookup_split checks that side */
	o = (struct eht_wrap_split_opts){.size = sizeof(o), .device = 0, .name = "w2-gpu"};
	CHECK(eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, &t) < 0 && t == NULL);
	CHECK(strstr(eht_last_error(), "w2-gpu") && strstr(eht_last_error(), "GPU 0"));
	o.flags = EHT_WRAP_SPLIT_CPU_FALLBACK;
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, &t), 0);
	CHECK_RC(eht_table_get_info(t, &ti), 0);
	CHECK(ti.device == -1 && ti.device_ptr == 0);
	if (t)
		same_lookups(t, packed, rs);
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = EHT_LOOKUP_DIRECT, .device = 0, .numa_node = -1};
	eht_lookup *lk = NULL;
	CHECK(eht_lookup_create(t, &lo, &lk) < 0 && lk == NULL);
	eht_table_close(t);
}

int main(void)
{
	uint64_t rs = 99;
	uint8_t *packed = t_rand_rows(ROWS, LR_RB, &rs);
	/* one allocation: weights then scales (vLLM's file), and the same in two allocations */
	uint8_t *one = malloc((size_t)ROWS * LR_RB), *w = malloc((size_t)ROWS * 256), *s = malloc((size_t)ROWS * 8);
	for (uint32_t r = 0; r < ROWS; r++) {
		memcpy(one + (size_t)r * 256, packed + (size_t)r * LR_RB, 256);
		memcpy(one + (size_t)ROWS * 256 + (size_t)r * 8, packed + (size_t)r * LR_RB + 256, 8);
		memcpy(w + (size_t)r * 256, packed + (size_t)r * LR_RB, 256);
		memcpy(s + (size_t)r * 8, packed + (size_t)r * LR_RB + 256, 8);
	}
	eht_table *p = NULL, *t1 = NULL, *t2 = NULL;
	CHECK_RC(eht_table_wrap(packed, ROWS, LR_RB, -1, "packed", &p), 0);
	CHECK_RC(eht_table_wrap_split(one, 256, one + (size_t)ROWS * 256, 8, ROWS, "split-one", &t1), 0);
	CHECK_RC(eht_table_wrap_split(w, 256, s, 8, ROWS, "split-two", &t2), 0);
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_table_get_info(t1, &ti), 0);
	CHECK(ti.row_bytes == LR_RB && ti.rows == ROWS && ti.tier == EHT_TIER_MEMORY);
	if (p && t1 && t2) {
		same_lookups(t1, p, &rs);
		same_lookups(t2, p, &rs);
		same_layer(t1, packed, &rs);
		same_layer(t2, packed, &rs);
	}
	/* errors */
	eht_table *bad = NULL;
	CHECK_RC(eht_table_wrap_split(NULL, 256, s, 8, ROWS, "x", &bad), -EINVAL);
	CHECK_RC(eht_table_wrap_split(w, 0, s, 8, ROWS, "x", &bad), -EINVAL);
	CHECK_RC(eht_table_wrap_split(one, 256, one + 100, 8, ROWS, "x", &bad), -EINVAL); /* overlapping */
	CHECK(strstr(eht_last_error(), "overlap") != NULL);
	CHECK_RC(eht_table_wrap_split(w, 256, s, 8, UINT64_MAX / 100, "x", &bad), -EOVERFLOW);
	CHECK(bad == NULL);
	wrap2_errors(one, w, s, p, &rs);
	eht_table_close(p);
	eht_table_close(t1);
	eht_table_close(t2);
	free(packed);
	free(one);
	free(w);
	free(s);
	return t_done();
}
