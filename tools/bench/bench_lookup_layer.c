/* SPDX-License-Identifier: Apache-2.0 */
/* bench_lookup_layer.c: `eht bench lookup`'s rows of the engine's own call: eht_engram_layer_lookup
 * over the bench's table as vLLM calls its kernel (ids [T, 24] int32, all 24 heads of a tp-1 rank,
 * out [T, 24, R]), inline and in the background way, on the same steps as the strategies. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lookup.h"
#include "cli.h"
#include "eht.h"

#define HEADS 24

int lk_layer_open(struct lk_layer *ly, const struct lk_layer_opts *o)
{
	memset(ly, 0, sizeof(*ly));
	ly->gpu = o->gpu;
	size_t tokens = (o->maxn + HEADS - 1) / HEADS;
	ly->stride = tokens * HEADS;
	/* One internal step per call (a prefill of 8,192 tokens is the default's), so the layer times
	 * what the engine's call gets, not a split of it. */
	struct eht_engram_layer_opts lo = {.size = sizeof(lo), .n_heads = HEADS, .head_start = 0, .part = HEADS,
					   .format = o->format, .device = o->gpu ? o->dev : -1,
					   .max_tokens = tokens, .threads = o->threads,
					   .lookup_flags = o->gpu && o->dedup ? EHT_LOOKUP_GPU_DEDUP : 0};
	ly->rc = eht_engram_layer_create(o->t, &lo, &ly->l);
	if (!ly->rc && o->hot && o->gpu) /* the inline way's engine only: the background way loads none */
		ly->rc = eht_lookup_set_hotset(eht_engram_layer_engine(ly->l, 0), o->hot, o->nhot);
	if (ly->rc) {
		snprintf(ly->err, sizeof(ly->err), "%s", eht_last_error());
		eht_engram_layer_destroy(ly->l);
		ly->l = NULL;
		return 0;
	}
	if (!(ly->ids = malloc((size_t)o->batches * ly->stride * sizeof(*ly->ids))))
		return cli_errorf("bench lookup", 1, "out of memory for the layer's ids");
	if (o->gpu && (eht_dev_alloc(&ly->dids, (size_t)o->batches * ly->stride * sizeof(*ly->ids)) ||
		       eht_dev_alloc(&ly->dcap, ly->stride * sizeof(*ly->ids))))
		return cli_fail("bench lookup", NULL);
	return 0;
}

struct layer_call {
	struct lk_layer *ly;
	size_t tokens;
	unsigned flags;
};

static int layer_run(void *arg, int mode, const void *ids, void *out, eht_stream s)
{
	const struct layer_call *lc = arg;
	return eht_engram_layer_lookup(lc->ly->l, ids, EHT_ID_INT32, lc->tokens, HEADS, 1, out, 0,
				       lc->flags | (mode == ON_HOST ? EHT_ENGRAM_LAYER_HOST : 0), s);
}

/* The shape's steps as [T, 24] tensors: the first n ids of each, the rest of its last token dead. */
static int layer_fill(struct lk_layer *ly, int batches, const int32_t *ids, size_t stride, size_t n)
{
	size_t cells = (n + HEADS - 1) / HEADS * HEADS;
	for (int b = 0; b < batches; b++) {
		int32_t *to = ly->ids + (size_t)b * ly->stride;
		memcpy(to, ids + (size_t)b * stride, n * sizeof(*to));
		for (size_t i = n; i < cells; i++)
			to[i] = -1;
	}
	return ly->gpu ? eht_dev_h2d(ly->dids, ly->ids, (size_t)batches * ly->stride * sizeof(*ly->ids)) : 0;
}

void lk_layer_rows(struct lk_layer *ly, struct bench_ctx *base, const int *want, const int32_t *ids,
		   size_t stride, size_t n, struct result r[2])
{
	for (int w = 0; w < 2; w++) {
		memset(&r[w], 0, sizeof(r[w]));
		snprintf(r[w].label, sizeof(r[w].label), "%s", w ? "layer+bg" : "layer");
		r[w].background = w;
		r[w].n = n;
		r[w].hit = -1;
	}
	int frc = ly->l ? layer_fill(ly, base->batches, ids, stride, n) : 0;
	struct bench_ctx c = *base;
	c.stride = ly->stride;
	c.ids = ly->ids;
	c.dids = ly->dids;
	c.dcap = ly->dcap;
	for (int w = 0; w < 2; w++) {
		struct layer_call lc = {.ly = ly, .tokens = (n + HEADS - 1) / HEADS,
					.flags = w ? EHT_ENGRAM_LAYER_BACKGROUND : 0};
		struct bench_call call = {.run = layer_run, .arg = &lc, .ncopy = lc.tokens * HEADS};
		for (int m = 0; m < NMODES; m++) {
			if (!want[m])
				continue;
			/* with a GPU the layer's ids and out are both GPU memory or both host memory: the
			 * strategies' host-ids mode (host ids, GPU out) is no call it takes */
			if (ly->gpu == (m == ON_HOST)) {
				r[w].na[m] = 1;
				continue;
			}
			const char *why = !ly->l ? ly->err : frc ? eht_last_error() : NULL;
			char bad[160];
			if (!why && lk_time_mode(&c, &call, m, &r[w].med_ms[m], &r[w].p90_ms[m], &r[w].cpu[m]))
				why = eht_last_error();
			/* Every id of the steps is a row of the table: only the padding is dead. Anything
			 * else is a layer that did not look up what it was given, however fast. */
			uint64_t dead = why ? 0 : eht_lookup_last_dead_count(eht_engram_layer_engine(ly->l, lc.flags));
			if (!why && dead != call.ncopy - n) {
				snprintf(bad, sizeof(bad), "the last call counted %llu dead ids, not the %zu of its padding",
					 (unsigned long long)dead, call.ncopy - n);
				why = bad;
			}
			if (why)
				snprintf(r[w].err[m], sizeof(r[w].err[m]), "%s", why);
			else
				r[w].ok[m] = 1;
		}
	}
}

void lk_layer_close(struct lk_layer *ly)
{
	eht_engram_layer_destroy(ly->l);
	ly->l = NULL;
	if (ly->dids)
		eht_dev_free(ly->dids);
	if (ly->dcap)
		eht_dev_free(ly->dcap);
	ly->dids = ly->dcap = 0;
	free(ly->ids);
	ly->ids = NULL;
}
