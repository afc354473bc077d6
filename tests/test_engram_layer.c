/* SPDX-License-Identifier: Apache-2.0 */
/* test_engram_layer.c: the engine's own call (eht_engram_layer) on the CPU, bit-exact against the
 * reference of engram_layer_ref.h for every (head_start, part) of tp 1/2/3/4/5/6/8, both vocab windows,
 * T in {1, 7, 256, 2048}, int32 / int64 ids of other strides, raw and bf16 rows, dense and strided
 * outputs (the bytes between strided rows untouched), calls split over max_tokens, started calls
 * (EHT_ENGRAM_LAYER_START: whole at the start in host memory, the wait a no-op); and its argument
 * errors. Runs without a GPU (test_gpu_engram_layer runs the GPU ways). */
#include <string.h>

#include "engram_layer_ref.h"
#include "testutil.h"

static void run_case(eht_engram_layer *l, struct lr_case *c, const uint8_t *table, int64_t first, int64_t local,
		     int64_t shift, int64_t rows, uint64_t *rs)
{
	const size_t R = c->fmt == EHT_LOOKUP_BF16 ? 512 : LR_RB;
	const uint64_t stride = c->part * R + c->out_pad;
	int64_t *m = malloc(c->T * LR_H * sizeof(int64_t));
	uint8_t *out = malloc(c->T * stride + 16);
	int64_t s_tok, s_head;
	size_t ib;
	CHECK(m && out);
	if (!m || !out)
		goto done;
	lr_matrix(c, rows, m, rs);
	void *ids = lr_ids(c, m, &s_tok, &s_head, &ib);
	CHECK(ids != NULL);
	memset(out, 0xee, c->T * stride + 16);
	/* odd cases started and waited for (host memory: the whole lookup at the start, the wait a no-op) */
	const unsigned start = (c->T & 1) ? EHT_ENGRAM_LAYER_START : 0;
	CHECK_RC(eht_engram_layer_lookup(l, ids, c->id64 ? EHT_ID_INT64 : EHT_ID_INT32, c->T, s_tok, s_head, out,
					 c->out_pad ? stride : 0, EHT_ENGRAM_LAYER_HOST | start, NULL),
		 0);
	CHECK(lr_compare(c, m, table, first, local, shift, out, stride) == 0);
	if (start)
		CHECK_RC(eht_engram_layer_wait(l, NULL), 0);
	/* the gaps of a strided output and the bytes after it are left alone */
	for (uint64_t t = 0; c->out_pad && t < c->T; t++)
		for (uint64_t k = c->part * R; k < stride; k++)
			if (out[t * stride + k] != 0xee) {
				fprintf(stderr, "token %llu: byte %llu of the gap written\n", (unsigned long long)t,
					(unsigned long long)k);
				t_failures++;
				t = c->T;
				break;
			}
	for (int k = 0; k < 16; k++)
		CHECK(out[c->T * stride + k] == 0xee);
	free(ids);
done:
	free(m);
	free(out);
}

struct run_arg {
	int64_t rows;
	uint64_t *rs;
};

static void each_case(const struct lr_at *at, void *arg)
{
	struct run_arg *ra = arg;
	run_case(at->l, at->c, at->base, 0, at->local, at->shift, ra->rows, ra->rs);
}

static void errors(eht_table *t)
{
	eht_engram_layer *l = NULL;
	struct eht_engram_layer_opts o = {.size = sizeof(o), .format = EHT_LOOKUP_RAW, .device = -1};
	CHECK_RC(eht_engram_layer_create(NULL, &o, &l), -EINVAL);
	o.flags = 0x80;
	CHECK_RC(eht_engram_layer_create(t, &o, &l), -EINVAL);
	o.flags = 0;
	o.head_start = 24; /* part 0: no column */
	CHECK_RC(eht_engram_layer_create(t, &o, &l), -EINVAL);
	o.head_start = 0;
	o.vocab_start = 5;
	o.vocab_end = 1u << 30; /* past the table */
	CHECK_RC(eht_engram_layer_create(t, &o, &l), -EINVAL);
	CHECK(strstr(eht_last_error(), "past table") != NULL);
	o.vocab_end = 4; /* not a range */
	CHECK_RC(eht_engram_layer_create(t, &o, &l), -EINVAL);
	o.vocab_start = o.vocab_end = 0;
	o.format = 7;
	CHECK_RC(eht_engram_layer_create(t, &o, &l), -EINVAL);
	o.format = EHT_LOOKUP_RAW;
	o.lookup_flags = EHT_LOOKUP_BACKGROUND; /* the call chooses the way, not the options */
	CHECK_RC(eht_engram_layer_create(t, &o, &l), -EINVAL);
	o.lookup_flags = 0;
	CHECK_RC(eht_engram_layer_create(t, &o, &l), 0);
	if (!l)
		return;
	int32_t ids[24] = {0};
	uint8_t out[24 * LR_RB + 64];
	CHECK_RC(eht_engram_layer_lookup(l, NULL, EHT_ID_INT32, 1, 24, 1, out, 0, EHT_ENGRAM_LAYER_HOST, NULL), -EINVAL);
	CHECK_RC(eht_engram_layer_lookup(l, ids, 9, 1, 24, 1, out, 0, EHT_ENGRAM_LAYER_HOST, NULL), -EINVAL);
	CHECK_RC(eht_engram_layer_lookup(l, ids, EHT_ID_INT32, 1, 24, 1, out, 0, 0x40, NULL), -EINVAL);
	CHECK_RC(eht_engram_layer_wait(NULL, NULL), -EINVAL);
	CHECK_RC(eht_engram_layer_wait(l, NULL), 0); /* nothing started */
	CHECK_RC(eht_engram_layer_lookup(l, ids, EHT_ID_INT32, 1, 24, 1, out, 100, EHT_ENGRAM_LAYER_HOST, NULL), -EINVAL);
	CHECK(strstr(eht_last_error(), "out_stride") != NULL);
	/* GPU memory to a layer without a GPU */
	CHECK_RC(eht_engram_layer_lookup(l, ids, EHT_ID_INT32, 1, 24, 1, out, 0, 0, NULL), -EINVAL);
	CHECK_RC(eht_engram_layer_lookup(l, ids, EHT_ID_INT32, 0, 24, 1, out, 0, EHT_ENGRAM_LAYER_HOST, NULL), 0);
	CHECK(eht_engram_layer_engine(l, 0) != NULL);
	CHECK(eht_engram_layer_engine(l, EHT_ENGRAM_LAYER_BACKGROUND) == eht_engram_layer_engine(l, 0));
	CHECK(eht_engram_layer_max_tokens(l) == 8192); /* opts.max_tokens 0: the documented default */
	CHECK(eht_engram_layer_max_tokens(NULL) == 0);
	eht_engram_layer_destroy(l);
	eht_engram_layer_destroy(NULL);
}

int main(void)
{
	eht_engram_layout *lay = NULL;
	CHECK_RC(eht_engram_layout_preset("v41-small", &lay), 0);
	if (!lay)
		return t_done();
	struct eht_engram_info info = {.size = sizeof(info)};
	CHECK_RC(eht_engram_layout_info(lay, &info), 0);
	const int64_t rows = (int64_t)info.rows[0];
	uint64_t rs = 12345;
	uint8_t *table = t_rand_rows((uint64_t)rows, LR_RB, &rs);
	eht_table *whole = NULL;
	CHECK_RC(eht_table_wrap(table, (uint64_t)rows, LR_RB, -1, "layer", &whole), 0);
	if (!whole)
		return t_done();
	errors(whole);
	struct run_arg ra = {.rows = rows, .rs = &rs};
	unsigned n = lr_for_each_case(lay, whole, table, rows, -1, 0, 100, each_case, &ra);
	printf("%u cases\n", n);
	eht_table_close(whole);
	free(table);
	eht_engram_layout_free(lay);
	return t_done();
}
