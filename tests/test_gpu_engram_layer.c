/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_engram_layer.c: the engine's own call (eht_engram_layer) on the GPU, bit-exact against the
 * reference of engram_layer_ref.h: ids and out in GPU memory, both ways (inline and background) on one
 * object, eager and captured in a CUDA graph replayed with new ids written into the captured id
 * buffer, for every (head_start, part) of tp 1/2/3/4/5/6/8, both vocab windows, T in {1, 7, 256,
 * 2048}, int32 / int64 ids of other strides, raw and bf16, dense and strided outputs; a strided output
 * first met inside a capture is refused; none of these calls runs an ids kernel before the lookup (the
 * doorbell kernels take the rank's view). Exit 77 without a GPU. */
#include <string.h>

#include "engram_layer_ref.h"
#include "gpu/dev.h"
#include "gpu_lookup_ref.h"
#include "lookup/view.h"
#include "testutil.h"

struct gbufs {
	eht_dptr ids, out;
	uint8_t *h;
	size_t ids_bytes, out_bytes;
};

/* One case through one way: eager, then (graph) captured once and replayed with fresh ids. */
static void run_case(eht_engram_layer *l, struct lr_case *c, unsigned way, int graph, const uint8_t *table,
		     int64_t local, int64_t shift, int64_t rows, eht_stream s, struct gbufs *g, uint64_t *rs)
{
	const size_t R = c->fmt == EHT_LOOKUP_BF16 ? 512 : LR_RB;
	const uint64_t stride = c->part * R + c->out_pad;
	int64_t *m = malloc(c->T * LR_H * sizeof(int64_t)), s_tok, s_head;
	size_t ib = 0;
	eht_graph gr = NULL;
	eht_graph_exec gx = NULL;
	for (int rep = 0; rep < (graph ? 3 : 1); rep++) {
		lr_matrix(c, rows, m, rs);
		void *ids = lr_ids(c, m, &s_tok, &s_head, &ib);
		CHECK(ib <= g->ids_bytes);
		/* on the test's stream (a non-blocking one: the legacy stream's copies would not order) */
		CHECK_RC(eht_dev_h2d_async(g->ids, ids, ib, s), 0);
		CHECK_RC(eht_dev_memset8_async(g->out, 0xee, c->T * stride, s), 0);
		CHECK_RC(eht_dev_stream_sync(s), 0);
		free(ids);
		if (!graph) {
			CHECK_RC(eht_engram_layer_lookup(l, (void *)(uintptr_t)g->ids, c->id64 ? EHT_ID_INT64 : EHT_ID_INT32,
							 c->T, s_tok, s_head, (void *)(uintptr_t)g->out,
							 c->out_pad ? stride : 0, way, s), 0);
		} else {
			if (rep == 0) {
				CHECK_RC(eht_dev_capture_begin(s, EHT_CAPTURE_THREAD_LOCAL), 0);
				int rc = eht_engram_layer_lookup(l, (void *)(uintptr_t)g->ids,
								 c->id64 ? EHT_ID_INT64 : EHT_ID_INT32, c->T, s_tok, s_head,
								 (void *)(uintptr_t)g->out, c->out_pad ? stride : 0, way, s);
				CHECK_RC(rc, 0);
				CHECK_RC(eht_dev_capture_end(s, &gr), 0);
				CHECK_RC(eht_dev_graph_instantiate(&gx, gr), 0);
			}
			CHECK_RC(eht_dev_graph_launch(gx, s), 0);
		}
		CHECK_RC(eht_dev_stream_sync(s), 0);
		CHECK_RC(eht_dev_d2h(g->h, g->out, c->T * stride), 0);
		if (lr_compare(c, m, table, 0, local, shift, g->h, stride)) {
			fprintf(stderr, "  (%s way, %s, replay %d)\n", way ? "background" : "inline", graph ? "graph" : "eager",
				rep);
			t_failures++;
		}
		for (uint64_t t = 0; c->out_pad && t < c->T; t++)
			if (g->h[t * stride + c->part * R] != 0xee) {
				fprintf(stderr, "token %llu: the gap of a strided out was written\n", (unsigned long long)t);
				t_failures++;
				break;
			}
	}
	if (gx)
		eht_dev_graph_exec_destroy(gx);
	if (gr)
		eht_dev_graph_destroy(gr);
	free(m);
}

struct run_arg {
	int64_t rows;
	eht_stream s;
	struct gbufs *g;
	uint64_t *rs;
	uint64_t calls, flattens; /* GPU calls made (eager or captured), and those that made flat ids first */
};

/* Both ways on one object, each eager then as a graph (graphs on layers of the default max_tokens: an
 * engine's captured requests share an ids arena of two max batches). */
static void each_case(const struct lr_at *at, void *arg)
{
	struct run_arg *ra = arg;
	const uint64_t f0 = eht_engram_layer_flattens(at->l);
	for (unsigned way = 0; way < 2; way++)
		for (int graph = 0; graph < (at->small_max ? 1 : 2); graph++) {
			run_case(at->l, at->c, way ? EHT_ENGRAM_LAYER_BACKGROUND : 0, graph, at->base, at->local, at->shift,
				 ra->rows, ra->s, ra->g, ra->rs);
			ra->calls++;
		}
	ra->flattens += eht_engram_layer_flattens(at->l) - f0;
}

/* On a table only the CPU reads, every call goes to the CPU pool through the doorbell kernels (the
 * stage-in kernel inline, the ring kernel in the background), and those take a tp-4 rank's view of
 * the ids themselves: no call makes flat ids in GPU memory first, and the rows are bit-exact. */
static void view_fused(const eht_engram_layout *lay, uint8_t *table, struct run_arg *ra)
{
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(table, (uint64_t)ra->rows, LR_RB, -1, "cpu-only", &t), 0);
	struct lr_case c = {.tp = 4, .rank = 1, .fmt = EHT_LOOKUP_BF16};
	CHECK_RC(lr_rank(lay, &c), 0);
	struct eht_engram_layer_opts o = {.size = sizeof(o), .head_start = c.head_start, .part = c.part,
					  .format = c.fmt, .device = 0, .vocab_start = (uint64_t)c.vs,
					  .vocab_end = (uint64_t)c.ve};
	eht_engram_layer *l = NULL;
	if (t)
		CHECK_RC(eht_engram_layer_create(t, &o, &l), 0);
	static const uint64_t Ts[] = {7, 256};
	for (size_t k = 0; l && k < 2; k++)
		for (unsigned way = 0; way < 2; way++)
			for (int graph = 0; graph < 2; graph++) {
				c.T = Ts[k];
				c.id64 = (int)k;
				c.layout = graph;
				run_case(l, &c, way ? EHT_ENGRAM_LAYER_BACKGROUND : 0, graph, table, ra->rows, 0, ra->rows,
					 ra->s, ra->g, ra->rs);
			}
	if (l && eht_engram_layer_flattens(l) != 0) {
		fprintf(stderr, "a CPU-only table's layer made flat ids first %llu times\n",
			(unsigned long long)eht_engram_layer_flattens(l));
		t_failures++;
	}
	eht_engram_layer_destroy(l);
	eht_table_close(t);
}

/* A strided output first met inside a capture: refused (its buffer cannot be made there); the same
 * call made eagerly first, then captured, works. */
static void strided_first_in_capture(eht_table *t, eht_stream s, struct gbufs *g)
{
	struct eht_engram_layer_opts o = {.size = sizeof(o), .format = EHT_LOOKUP_RAW, .device = 0, .max_tokens = 64};
	eht_engram_layer *l = NULL;
	CHECK_RC(eht_engram_layer_create(t, &o, &l), 0);
	if (!l)
		return;
	CHECK_RC(eht_dev_memset8(g->ids, 0, 24 * 4 * 4), 0);
	eht_graph gr = NULL;
	CHECK_RC(eht_dev_capture_begin(s, EHT_CAPTURE_THREAD_LOCAL), 0);
	CHECK_RC(eht_engram_layer_lookup(l, (void *)(uintptr_t)g->ids, EHT_ID_INT32, 4, 24, 1, (void *)(uintptr_t)g->out,
					 24 * LR_RB + 64, 0, s), -EOPNOTSUPP);
	eht_dev_capture_end(s, &gr);
	if (gr)
		eht_dev_graph_destroy(gr);
	eht_engram_layer_destroy(l);
}

int main(void)
{
	eht_stream s = t_gpu_test_stream();
	eht_engram_layout *lay = NULL;
	CHECK_RC(eht_engram_layout_preset("v41-small", &lay), 0);
	if (!lay)
		return t_done();
	struct eht_engram_info info = {.size = sizeof(info)};
	CHECK_RC(eht_engram_layout_info(lay, &info), 0);
	const int64_t rows = (int64_t)info.rows[0];
	uint64_t rs = 777;
	uint8_t *table = t_rand_rows((uint64_t)rows, LR_RB, &rs);
	eht_table *whole = NULL;
	CHECK_RC(eht_table_wrap(table, (uint64_t)rows, LR_RB, 0, "layer", &whole), 0);
	struct gbufs g = {.ids_bytes = 2048 * 2 * LR_H * 8, .out_bytes = 2048 * (size_t)LR_H * 512 + 2048 * 64};
	CHECK_RC(eht_dev_alloc(&g.ids, g.ids_bytes), 0);
	CHECK_RC(eht_dev_alloc(&g.out, g.out_bytes), 0);
	g.h = malloc(g.out_bytes);
	if (!whole || !g.ids || !g.out || !g.h) {
		free(g.h);
		return t_done();
	}
	strided_first_in_capture(whole, s, &g);
	struct run_arg ra = {.rows = rows, .s = s, .g = &g, .rs = &rs};
	unsigned n = lr_for_each_case(lay, whole, table, rows, 0, 4, 300, each_case, &ra);
	printf("%u cases, each both ways, eager and as a graph; %llu of %llu GPU calls made flat ids before the "
	       "lookup\n", n, (unsigned long long)ra.flattens, (unsigned long long)ra.calls);
	/* (AUTO may send a class of batches to the GPU's in-place gather here: those need flat ids) */
	CHECK(ra.calls > 0 && ra.flattens < ra.calls);
	view_fused(lay, table, &ra);
	eht_dev_free(g.ids);
	eht_dev_free(g.out);
	free(g.h);
	eht_table_close(whole);
	free(table);
	eht_engram_layout_free(lay);
	eht_dev_stream_destroy(s);
	return t_done();
}
