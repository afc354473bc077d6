/* SPDX-License-Identifier: Apache-2.0 */
/* layer.c: the engine's own call (eht_engram_layer): one Engram layer's table as one rank looks it up,
 * a policy above the lookup engines. A call turns the engine's [T, H] ids (any strides) into the
 * rank's flat ids (on the GPU by the lookup's own kernel that hands ids to the CPU pool, else by a
 * kernel of its own; a loop on the CPU; none where they already are: a dense [T, 24] of every head
 * over the table's rows, a tp-1 rank's call), runs the way the call asks for (the
 * inline engine or the background one, both made here) and, for an output of another token stride,
 * moves the dense rows there with one more kernel. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "eht.h"
#include "gpu/dev.h"
#include "gpu/gpu_layer.h"
#include "lookup/split.h"
#include "lookup/view.h"
#include "util/err.h"

#define LAYER_MAX_TOKENS_DEFAULT 8192u
#define LAYER_WAYS 2 /* 0 inline, 1 background */

/* One way's buffers: the flat ids and, once a strided output needs it, dense rows. Each way has its
 * own so a background call on a side stream never shares a buffer with an inline one. */
struct layer_way {
	eht_lookup *lk;
	eht_dptr ids;    /* max_tokens * part ids (GPU), int32 unless ids64 */
	eht_dptr dense;  /* max_tokens * part * R bytes, made at the first strided call */
	int64_t *hids;   /* host ids of CPU calls, max_tokens * part */
	uint8_t *hdense; /* dense rows of strided CPU calls, made at the first */
	pthread_mutex_t mu;
};

struct eht_engram_layer {
	eht_table *table;
	uint32_t n_heads, head_start, part;
	int64_t vocab_start, vocab_end, shift;
	uint32_t R; /* output bytes per row */
	bool ids64; /* the flat ids are int64: a live row may be 2^31 or more */
	uint64_t max_tokens;
	/* The rank's ids are the engine's as they are: every head its own (head_start 0, part n_heads) and the
	 * vocab range the table's rows, unshifted (ids outside are dead ids to the engine as to the layer).
	 * A call whose ids are dense [T, part] then skips the ids kernel. */
	bool ids_as_is;
	int device; /* -1: CPU only */
	struct eht_gpu_layer k;
	struct layer_way way[LAYER_WAYS];
	atomic_uint_fast64_t flattens; /* GPU calls whose flat ids were made in GPU memory (tests) */
};

static int layer_ranges(eht_engram_layer *l, const struct eht_engram_layer_opts *o, const struct eht_table_info *ti)
{
	l->n_heads = o->n_heads ? o->n_heads : 24;
	l->head_start = o->head_start;
	l->part = o->part ? o->part : (o->head_start < l->n_heads ? l->n_heads - o->head_start : 0);
	if (l->part == 0 || l->part > 4096 || l->n_heads > 4096)
		return eht_err(EINVAL, "engram layer: part %u with n_heads %u and head_start %u (part must be 1..4096)",
			       l->part, l->n_heads, l->head_start);
	uint64_t lo = ti->first_row, hi = ti->first_row + ti->local_rows;
	uint64_t vs = o->vocab_start, ve = o->vocab_end;
	if (vs == 0 && ve == 0) {
		vs = lo;
		ve = hi;
	}
	if (vs > ve || ve > INT64_MAX)
		return eht_err(EINVAL, "engram layer: vocab range [%llu, %llu) is not a range", (unsigned long long)vs,
			       (unsigned long long)ve);
	l->vocab_start = (int64_t)vs;
	l->vocab_end = (int64_t)ve;
	if (o->flags & EHT_ENGRAM_LAYER_ID_SHIFT)
		l->shift = o->id_shift;
	else if (ve - vs == ti->local_rows && vs != lo)
		l->shift = (int64_t)lo - (int64_t)vs; /* the rank's shard stored from its own row 0 */
	else if (ve > ti->rows)
		return eht_err(EINVAL, "engram layer: vocab range [%llu, %llu) lies past table %s's %llu rows",
			       (unsigned long long)vs, (unsigned long long)ve, ti->name, (unsigned long long)ti->rows);
	l->ids64 = (int64_t)ve + (l->shift > 0 ? l->shift : 0) > INT32_MAX;
	l->ids_as_is = l->head_start == 0 && l->part == l->n_heads && l->shift == 0 && vs == lo && ve == hi;
	return 0;
}

static int layer_engines(eht_engram_layer *l, const struct eht_engram_layer_opts *o)
{
	const uint32_t bg_way = EHT_LOOKUP_BG_PUSH | EHT_LOOKUP_BG_STREAM;
	const uint32_t known = EHT_LOOKUP_GPU_DEDUP | EHT_LOOKUP_NO_HOTSET | bg_way;
	if (o->lookup_flags & ~known)
		return eht_err(EINVAL, "engram layer: lookup_flags 0x%x not allowed (GPU_DEDUP, NO_HOTSET, BG_PUSH, BG_STREAM)",
			       o->lookup_flags & ~known);
	for (int w = 0; w < LAYER_WAYS; w++) {
		struct eht_lookup_opts lo = {.size = sizeof(lo), .format = o->format, .device = l->device,
					     .threads = o->threads, .numa_node = -1,
					     .max_batch = l->max_tokens * l->part};
		lo.flags = o->lookup_flags & ~bg_way;
		if (l->device < 0)
			lo.flags |= EHT_LOOKUP_CPU_ONLY;
		/* The background way loads no hot set: beside the model its work cost the step more than
		 * the host rows it saved (eht bench step on real text), and one GPU copy of it is enough. */
		if (w == 1)
			lo.flags |= EHT_LOOKUP_BACKGROUND | EHT_LOOKUP_NO_HOTSET | (o->lookup_flags & bg_way);
		int rc = eht_lookup_create(l->table, &lo, &l->way[w].lk);
		if (rc)
			return eht_err_prefix(rc, "engram layer: the %s engine", w ? "background" : "inline");
		if (l->device < 0)
			break; /* CPU only: one engine serves both ways */
	}
	return 0;
}

int eht_engram_layer_create(eht_table *table, const struct eht_engram_layer_opts *o, eht_engram_layer **out)
{
	if (!table || !o || !out)
		return eht_err(EINVAL, "eht_engram_layer_create: NULL argument");
	*out = NULL;
	if (o->size < sizeof(*o) || (o->flags & ~EHT_ENGRAM_LAYER_OPTS_FLAGS))
		return eht_err(EINVAL, "eht_engram_layer_create: options size %u (want %zu) or unknown flags 0x%x",
			       o->size, sizeof(*o), o->flags & ~EHT_ENGRAM_LAYER_OPTS_FLAGS);
	struct eht_table_info ti = {.size = sizeof(ti)};
	int rc = eht_table_get_info(table, &ti);
	if (rc)
		return rc;
	if (o->format != EHT_LOOKUP_BF16 && o->format != EHT_LOOKUP_RAW)
		return eht_err(EINVAL, "engram layer: unknown format %d", o->format);
	eht_engram_layer *l = calloc(1, sizeof(*l));
	if (!l)
		return eht_err(ENOMEM, "engram layer: out of memory");
	l->table = table;
	l->device = o->device >= 0 ? o->device : ti.device;
	l->max_tokens = o->max_tokens ? o->max_tokens : LAYER_MAX_TOKENS_DEFAULT;
	l->R = o->format == EHT_LOOKUP_BF16 ? 512u : (uint32_t)ti.row_bytes;
	for (int w = 0; w < LAYER_WAYS; w++)
		pthread_mutex_init(&l->way[w].mu, NULL);
	if ((rc = layer_ranges(l, o, &ti)))
		goto fail;
	if (l->max_tokens > (UINT32_MAX / 2) / l->part) {
		rc = eht_err(EINVAL, "engram layer: max_tokens %llu x part %u is over 2^31 ids",
			     (unsigned long long)l->max_tokens, l->part);
		goto fail;
	}
	const size_t nids = (size_t)l->max_tokens * l->part;
	for (int w = 0; w < LAYER_WAYS; w++)
		if (!(l->way[w].hids = malloc(nids * sizeof(int64_t)))) {
			rc = eht_err(ENOMEM, "engram layer: out of memory (%zu ids)", nids);
			goto fail;
		}
	if (l->device >= 0) {
		if ((rc = eht_gpu_layer_load(l->device, &l->k)))
			goto fail;
		for (int w = 0; w < LAYER_WAYS; w++)
			if ((rc = eht_dev_alloc(&l->way[w].ids, nids * sizeof(int64_t))))
				goto fail;
	}
	if ((rc = layer_engines(l, o)))
		goto fail;
	*out = l;
	return 0;
fail:
	eht_engram_layer_destroy(l);
	return rc;
}

/* The rank's flat ids of tokens [t0, t0 + n) on the CPU. */
static void host_ids(const eht_engram_layer *l, int64_t *hids, const void *ids, int id64, uint64_t t0, uint64_t n, int64_t s_tok,
		     int64_t s_head)
{
	for (uint64_t t = 0; t < n; t++)
		for (uint32_t j = 0; j < l->part; j++) {
			const uint32_t c = l->head_start + j;
			int64_t r = -1;
			if (c < l->n_heads) {
				const int64_t at = (int64_t)(t0 + t) * s_tok + (int64_t)c * s_head;
				const int64_t v = id64 ? ((const int64_t *)ids)[at] : ((const int32_t *)ids)[at];
				if (v >= l->vocab_start && v < l->vocab_end)
					r = v + l->shift;
			}
			hids[t * l->part + j] = r;
		}
}

static int args_check(const eht_engram_layer *l, const void *ids, int id_type, const void *out, uint64_t out_stride,
		      unsigned flags)
{
	const unsigned known = EHT_ENGRAM_LAYER_BACKGROUND | EHT_ENGRAM_LAYER_HOST | EHT_ENGRAM_LAYER_START;
	if (!l || !ids || !out)
		return eht_err(EINVAL, "eht_engram_layer_lookup: NULL %s", !l ? "layer" : !ids ? "ids" : "out");
	if (flags & ~known)
		return eht_err(EINVAL, "eht_engram_layer_lookup: unknown flags 0x%x", flags & ~known);
	if (id_type != EHT_ID_INT32 && id_type != EHT_ID_INT64)
		return eht_err(EINVAL, "eht_engram_layer_lookup: unknown id type %d", id_type);
	const uint64_t w = (uint64_t)l->part * l->R;
	if (out_stride && out_stride < w)
		return eht_err(EINVAL, "eht_engram_layer_lookup: out_stride %llu bytes is less than a token's %u rows (%llu)",
			       (unsigned long long)out_stride, l->part, (unsigned long long)w);
	if (l->R == 512 && (((uintptr_t)out | out_stride) & 15))
		return eht_err(EINVAL, "eht_engram_layer_lookup: bf16 out and out_stride must be 16-byte aligned");
	if (!(flags & EHT_ENGRAM_LAYER_HOST) && l->device < 0)
		return eht_err(EINVAL, "eht_engram_layer_lookup: GPU memory given to a CPU-only layer (flag HOST)");
	return 0;
}

/* The dense buffer a strided output goes through; made outside a capture only. */
static int way_dense(eht_engram_layer *l, struct layer_way *w, eht_stream s)
{
	if (w->dense)
		return 0;
	bool capturing = false;
	int rc = eht_dev_stream_capturing(s, &capturing);
	if (rc)
		return rc;
	if (capturing)
		return eht_err(EOPNOTSUPP, "eht_engram_layer_lookup: a strided out first met inside a capture: make one "
					   "eager call with a strided out first (its buffer is made then)");
	return eht_dev_alloc(&w->dense, (size_t)l->max_tokens * l->part * l->R);
}

static int layer_flatten(const struct eht_lk_view *v, eht_stream s)
{
	eht_engram_layer *l = (eht_engram_layer *)v->ctx;
	atomic_fetch_add_explicit(&l->flattens, 1, memory_order_relaxed);
	return eht_gpu_layer_ids(&l->k, s, &v->k, v->flat);
}

uint64_t eht_engram_layer_flattens(const eht_engram_layer *l) { return l ? atomic_load(&l->flattens) : 0; }

static int gpu_chunk(eht_engram_layer *l, struct layer_way *w, const void *ids, int id64, uint64_t t0, uint64_t n,
		     int64_t s_tok, int64_t s_head, uint8_t *out, uint64_t stride, eht_stream s)
{
	const uint64_t tw = (uint64_t)l->part * l->R;
	const size_t isz = id64 ? 8 : 4;
	const bool dense = stride == tw;
	uint8_t *dst = out + t0 * stride;
	void *to = dense ? (void *)dst : (void *)(uintptr_t)w->dense;
	const unsigned run_flags = EHT_LOOKUP_RUN_IDS_DEVICE | EHT_LOOKUP_RUN_OUT_DEVICE;
	int rc;
	if (l->ids_as_is && s_head == 1 && s_tok == (int64_t)l->part) {
		rc = eht_lookup_run(w->lk, (const uint8_t *)ids + t0 * l->part * isz, id64 ? EHT_ID_INT64 : EHT_ID_INT32, 0,
				    n * l->part, to, s, run_flags, NULL);
	} else {
		/* The lookup's doorbell kernel reads the view itself where the call goes to the CPU pool;
		 * other paths have layer_flatten make the flat ids first. */
		struct eht_lk_view v = {
			.k = {.ids = (eht_dptr)(uintptr_t)ids + (eht_dptr)((int64_t)t0 * s_tok * (int64_t)isz), .id64 = id64,
			      .tokens = n, .s_tok = s_tok, .s_head = s_head, .head_start = l->head_start, .part = l->part,
			      .n_heads = l->n_heads, .vocab_start = l->vocab_start, .vocab_end = l->vocab_end,
			      .shift = l->shift, .out64 = l->ids64},
			.flat = w->ids, .flatten = layer_flatten, .ctx = l};
		rc = eht_lk_run_view(w->lk, &v, n * l->part, to, s, run_flags);
	}
	if (!rc && !dense)
		rc = eht_gpu_layer_restride(&l->k, s, w->dense, n, tw, (eht_dptr)(uintptr_t)dst, stride);
	return rc;
}

static int host_chunk(eht_engram_layer *l, struct layer_way *w, const void *ids, int id64, uint64_t t0, uint64_t n,
		      int64_t s_tok, int64_t s_head, uint8_t *out, uint64_t stride)
{
	const uint64_t tw = (uint64_t)l->part * l->R;
	host_ids(l, w->hids, ids, id64, t0, n, s_tok, s_head);
	uint8_t *dst = out + t0 * stride;
	if (stride != tw && !w->hdense && !(w->hdense = malloc((size_t)l->max_tokens * tw)))
		return eht_err(ENOMEM, "engram layer: out of memory (a strided out's %llu bytes)",
			       (unsigned long long)(l->max_tokens * tw));
	int rc = eht_lookup_run(w->lk, w->hids, EHT_ID_INT64, 0, n * l->part, stride == tw ? dst : w->hdense, NULL,
				EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_HOST, NULL);
	for (uint64_t t = 0; !rc && stride != tw && t < n; t++)
		memcpy(dst + t * stride, w->hdense + t * tw, tw);
	return rc;
}

int eht_engram_layer_lookup(eht_engram_layer *l, const void *ids, int id_type, uint64_t tokens, int64_t s_tok,
			    int64_t s_head, void *out, uint64_t out_stride, unsigned flags, void *stream)
{
	if (tokens == 0 && l)
		return 0;
	int rc = args_check(l, ids, id_type, out, out_stride, flags);
	if (rc)
		return rc;
	const uint64_t tw = (uint64_t)l->part * l->R;
	const uint64_t stride = out_stride ? out_stride : tw;
	const bool host = flags & EHT_ENGRAM_LAYER_HOST;
	const bool bg = flags & (EHT_ENGRAM_LAYER_BACKGROUND | EHT_ENGRAM_LAYER_START);
	struct layer_way *w = &l->way[bg && l->way[1].lk ? 1 : 0];
	/* START splits only a call that is one pushed request (GPU ids and out, one internal step, a dense
	 * out: a strided one is moved after the rows are in); any other runs whole here, and its wait is
	 * a no-op. */
	const bool split = (flags & EHT_ENGRAM_LAYER_START) && !host && tokens <= l->max_tokens && stride == tw;
	pthread_mutex_lock(&w->mu);
	/* (a started request holds the way's request and scratch until its wait) */
	if (eht_lk_split_pending(w->lk, NULL))
		rc = eht_err(EBUSY, "eht_engram_layer_lookup: this layer's started lookup was not waited for "
				    "(eht_engram_layer_wait comes before the way's next call)");
	if (!rc && !host && stride != tw)
		rc = way_dense(l, w, (eht_stream)stream);
	const bool begun = !rc && split;
	if (begun)
		eht_lk_split_begin(w->lk);
	for (uint64_t t0 = 0; t0 < tokens && !rc; t0 += l->max_tokens) {
		const uint64_t n = tokens - t0 < l->max_tokens ? tokens - t0 : l->max_tokens;
		rc = host ? host_chunk(l, w, ids, id_type == EHT_ID_INT64, t0, n, s_tok, s_head, out, stride)
			  : gpu_chunk(l, w, ids, id_type == EHT_ID_INT64, t0, n, s_tok, s_head, out, stride,
				      (eht_stream)stream);
	}
	if (begun && eht_lk_split_end(w->lk) && rc)
		(void)eht_lk_split_wait(w->lk, (eht_stream)stream); /* (an error after the ring: not left pending) */
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int eht_engram_layer_wait(eht_engram_layer *l, void *stream)
{
	if (!l)
		return eht_err(EINVAL, "eht_engram_layer_wait: NULL layer");
	struct layer_way *w = &l->way[l->way[1].lk ? 1 : 0];
	int rc = 0;
	bool started_captured = false, capturing = false;
	pthread_mutex_lock(&w->mu);
	if (eht_lk_split_pending(w->lk, &started_captured)) {
		rc = eht_dev_stream_capturing((eht_stream)stream, &capturing);
		if (!rc && capturing != started_captured) {
			/* Either way the wait would read another request's done word: the start is dropped
			 * (its graph, or its eager rows, are the caller's to throw away). */
			rc = eht_err(EINVAL, "eht_engram_layer_wait: a lookup started %s a CUDA graph capture is waited "
					     "%s one (start and wait are both captured, or both eager)",
				     started_captured ? "inside" : "outside", capturing ? "inside" : "outside");
			(void)eht_lk_split_drop(w->lk);
		} else if (!rc) {
			rc = eht_lk_split_wait(w->lk, (eht_stream)stream);
		}
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

eht_lookup *eht_engram_layer_engine(eht_engram_layer *l, unsigned flags)
{
	if (!l)
		return NULL;
	return (flags & EHT_ENGRAM_LAYER_BACKGROUND) && l->way[1].lk ? l->way[1].lk : l->way[0].lk;
}

uint64_t eht_engram_layer_max_tokens(const eht_engram_layer *l)
{
	return l ? l->max_tokens : 0;
}

void eht_engram_layer_destroy(eht_engram_layer *l)
{
	if (!l)
		return;
	bool gpu_bufs = false;
	for (int w = 0; w < LAYER_WAYS; w++)
		gpu_bufs |= l->way[w].ids || l->way[w].dense;
	if (gpu_bufs)
		eht_dev_sync(); /* queued work may still read the buffers */
	for (int w = 0; w < LAYER_WAYS; w++) {
		eht_lookup_destroy(l->way[w].lk);
		if (l->way[w].ids)
			eht_dev_free(l->way[w].ids);
		if (l->way[w].dense)
			eht_dev_free(l->way[w].dense);
		free(l->way[w].hids);
		free(l->way[w].hdense);
		pthread_mutex_destroy(&l->way[w].mu);
	}
	if (l->k.mod)
		eht_gpu_layer_unload(&l->k);
	free(l);
}
