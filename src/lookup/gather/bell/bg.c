/* SPDX-License-Identifier: Apache-2.0 */
/* bg.c: the stream's side of the background and push ways (bg.h; the CPU's side:
 * serve_bg.c). Background mode (EHT_LOOKUP_BACKGROUND): nothing on an SM waits for the CPU. The
 * stream copies GPU ids to pinned memory (copy engine), rings the doorbell (cuStreamWriteValue32),
 * then bg_groups moves the rows group by group; pushed (EHT_LOOKUP_BG_PUSH, the default) the CPU moves
 * them with its own copies (and dequantizes a large bf16 request's groups) and the stream waits for one
 * word (push_ring_wait); split (split.h), that wait is enqueued later, by eht_lk_split_wait. */
#include "gpu/gpu_lookup.h"
#include "lookup/gather/bell/bg.h"
#include "lookup/gather/bell/poller.h"
#include "lookup/gather/bell/requests.h"
#include "lookup/split.h"
#include "lookup/view.h"

/* Per group of request idx: wait for its ready value (cuStreamWaitValue32), copy it from staging to
 * dst (copy engine) and, when expand, dequantize it into out (a small kernel, the SM cap): on the
 * dequant stream after the group's copy (an event), else behind the copy on s. Then one memset frees
 * every group's ready word (the CPU's next request waits for that before it reuses the staging; one
 * node instead of a write per group), and s joins the dequant stream. On the copies' stream each
 * dequant, waiting for SMs beside the model, also held up the next group's copy. Measured on the H200
 * (eht bench step, prefill, 2 x 24 GiB, back to back, three runs of each alternated): HOST background
 * added +0.16 / +0.74 / +0.55 ms with the dequant stream against +1.18 / +0.77 / +1.12 ms without,
 * AUTO background +0.35 / +0.62 / +0.19 against +1.44 / +1.38 / +1.22 ms. */
static int bg_groups(eht_lookup *lk, eht_stream s, unsigned idx, size_t n, eht_dptr dst, eht_dptr out, bool expand)
{
	struct lk_bell *b = lk->bell;
	const eht_dptr d_ready = b->d_words + LK_REQS * sizeof(uint32_t);
	uint32_t groups, grows;
	eht_lk_bell_bg_geom(lk, n, &groups, &grows);
	const bool per_group = expand && n > LK_BG_DEQUANT_ROWS;
	const eht_stream xs = per_group ? b->bg_xstream : NULL; /* (groups <= LK_BG_GROUPS events) */
	int rc = 0;
	for (uint32_t g = 0; g < groups && !rc; g++) {
		size_t r0 = (size_t)g * grows, m = n - r0 < grows ? n - r0 : grows;
		rc = eht_dev_stream_wait32(s, d_ready + g * sizeof(uint32_t), LK_READY(idx, g), EHT_WAIT_EQ);
		if (!rc)
			rc = eht_dev_h2d_async(dst + r0 * lk->rb, b->staging + r0 * lk->rb, m * lk->rb, s);
		if (rc || !per_group)
			continue;
		if (xs) {
			rc = eht_dev_event_record(b->bg_copied[g], s);
			if (!rc)
				rc = eht_dev_stream_wait_event(xs, b->bg_copied[g]);
		}
		if (!rc)
			rc = eht_gpu_expand(&lk->g, xs ? xs : s, 0, m, dst + r0 * lk->rb, lk->rb, out + r0 * lk->out_rb,
					    lk->fmt);
		if (!rc && xs)
			b->bg_side_dequants++;
	}
	if (!rc)
		rc = eht_dev_memset32_async(d_ready, 0, groups, s);
	if (!rc && expand && !per_group)
		rc = eht_gpu_expand(&lk->g, s, 0, n, dst, lk->rb, out, lk->fmt);
	/* (after an error too: a capture must not leave the dequant stream forked) */
	if (xs) {
		int jrc = eht_dev_event_record(b->bg_xdone, xs);
		if (!jrc)
			jrc = eht_dev_stream_wait_event(s, b->bg_xdone);
		rc = rc ? rc : jrc;
	}
	return rc;
}

/* A pushed request on the stream (eht_lk_bell_bg_piece, _bg_compact): the ring kernel (the ids or
 * distinct rows into pinned memory, the done word cleared, the doorbell), then one wait for the done
 * word (GPU memory), which the CPU's push stream sets once its copies have moved every group
 * there. Two nodes where the stream-driven way has a copy and a wait per group, a copy of the ids, a
 * write and a memset: on the lent H200 a graph's launch call pays about 1.7 us per copy node
 * touching host memory and 1.3 us per memory op, next to nothing per kernel node, and a synced
 * decode step pays that launch. */
static int push_ring(eht_lookup *lk, eht_stream s, unsigned idx, struct eht_gpu_ring *a)
{
	struct lk_bell *b = lk->bell;
	a->h_ids = b->reqs[idx].d_h_ids;
	a->done = eht_lk_bell_d_done(b, lk, idx);
	a->bell = b->d_words + idx * sizeof(uint32_t);
	a->sync = b->d_sync + idx * LK_SYNC_WORDS * sizeof(uint32_t);
	return eht_gpu_ring(&lk->g, s, a);
}

static int push_ring_wait(eht_lookup *lk, eht_stream s, unsigned idx, struct eht_gpu_ring *a)
{
	int rc = push_ring(lk, s, idx, a);
	return rc ? rc : eht_dev_stream_wait32(s, a->done, 1u, EHT_WAIT_EQ);
}

/* ------------------------------------------------------------------- split requests (split.h) */
void eht_lk_split_begin(eht_lookup *lk)
{
	if (lk->bell)
		lk->bell->split_want = true;
}

bool eht_lk_split_end(eht_lookup *lk)
{
	if (!lk->bell)
		return false;
	lk->bell->split_want = false;
	return lk->bell->split_pending;
}

bool eht_lk_split_pending(const eht_lookup *lk, bool *capturing)
{
	const struct lk_bell *b = lk->bell;
	if (capturing)
		*capturing = b && b->split_capturing;
	return b && b->split_pending;
}

/* (An eager request's slot is taken again only once the CPU has served it, prepare's armed wait; a
 * captured one stays armed, as every captured request does.) */
bool eht_lk_split_drop(eht_lookup *lk)
{
	struct lk_bell *b = lk->bell;
	bool was = b && b->split_pending;
	if (b)
		b->split_pending = false;
	return was;
}

/* A pushed request that stops after its ring kernel: what its wait needs is kept on the engine. */
static int split_start(eht_lookup *lk, eht_stream s, unsigned idx, struct eht_gpu_ring *a, size_t n, eht_dptr dst,
		       eht_dptr out, bool expand, bool capturing)
{
	struct lk_bell *b = lk->bell;
	int rc = push_ring(lk, s, idx, a);
	if (rc)
		return eht_lk_bell_finish(lk, s, idx, capturing, rc);
	b->split_pending = true;
	b->split_capturing = capturing;
	b->split_expand = expand;
	b->split_idx = idx;
	b->split_n = n;
	b->split_dst = dst;
	b->split_out = out;
	return 0;
}

int eht_lk_split_wait(eht_lookup *lk, eht_stream s)
{
	struct lk_bell *b = lk->bell;
	if (!b || !b->split_pending)
		return 0;
	b->split_pending = false;
	const unsigned idx = b->split_idx;
	const eht_dptr done = eht_lk_bell_d_done(b, lk, idx);
	/* With a dequant to run, the wait is its kernel's: each block polls the done word, then
	 * dequantizes on every SM (the model's stream waits here for the rows in any case, so neither
	 * an SM cap nor an SM kept from polling would leave the model anything to run). One node where
	 * the stream's wait and the dequant were two: on an H100 the split pieces' decode step paid 29
	 * us over the same pieces without lookups back to back [27 synced] against 40 [36], the one
	 * graph's split 14 [7] over the copies against 33 [17] (docs/BENCHMARKS.md, round 49). The done
	 * word follows the copy engine's copies on the CPU's push stream (a request dequantized here is
	 * one the CPU does not dequantize); a kernel an earlier call queued there is waited for before
	 * this request starts (the layer's API asks it: see eht_gpu_expand_after for why). */
	const int rc = b->split_expand ? eht_gpu_expand_after(&lk->g, s, done, b->split_n, b->split_dst, lk->rb,
							      b->split_out, lk->fmt)
				       : eht_dev_stream_wait32(s, done, 1u, EHT_WAIT_EQ);
	return eht_lk_bell_finish(lk, s, idx, b->split_capturing, rc);
}

/* Whether a background request is pushed: a captured one as the engine says (bg_push, the default;
 * eht.h), a bf16 prefill too (the CPU then also enqueues each group's dequant after its copy, push_rows).
 * Pushed, its graph has two nodes where the stream's way has a wait, a copy, an event and a dequant
 * per group: on the lent H200 (eht bench step, prefill, 2 x 24 GiB, two alternated pairs of processes,
 * 3 rounds each) the synced step paid -0.06 / +0.22 ms pushed against +0.32 / +0.37 ms the stream's
 * way, whose graph's launch took +143 / +152 us over the step without lookups against +17 / +32 us.
 * An eager request always: its calling thread then makes two calls (the ring kernel, one wait) where
 * the stream's way makes a wait and a copy per group and four more, and an eager engine's launching
 * thread is its bottleneck (a tp-4 rank's bf16 call of 8,192 tokens measured 31 against 134 us of the
 * thread's CPU). */
static bool bg_pushed(const eht_lookup *lk, bool capturing)
{
	const struct lk_bell *b = lk->bell;
	return b->bg_push || (!capturing && b->push_stream);
}

int eht_lk_bell_bg_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			 eht_dptr out, eht_stream es, bool capturing, const struct eht_lk_view *view)
{
	struct lk_bell *b = lk->bell;
	const bool raw = lk->fmt == EHT_LOOKUP_RAW, group_dequant = !raw && n > LK_BG_DEQUANT_ROWS;
	const bool push = bg_pushed(lk, capturing);
	/* Pushed bf16 above LK_BG_DEQUANT_ROWS: the CPU enqueues each group's dequant after its copy (on
	 * the dequant stream, as bg_groups does, for the same reason), so the stream still has two nodes.
	 * Eager and smaller: the CPU enqueues the one dequant after its last copy, so the calling thread
	 * makes two calls (the ring kernel, the wait) instead of three: an eager engine's launching thread
	 * is its bottleneck (on the lent H200 a launch costs it 5-15 us). A captured one keeps the dequant
	 * in its graph, where a kernel node costs the launch next to nothing (pushed by the CPU too, a
	 * decode step measured worse back to back: docs/BENCHMARKS.md, "Tried, not kept"). */
	const bool cpu_dequant = push && !raw && (group_dequant || !capturing);
	const eht_dptr dst = raw ? out : lk->scr.d_compact;
	unsigned idx;
	int rc = eht_lk_bell_prepare(lk, ids, ids_dev, id64, off, n, false, true, push ? dst : 0, cpu_dequant ? out : 0,
				     capturing, &idx);
	if (rc)
		return rc;
	struct lk_req *r = &b->reqs[idx];
	eht_lk_bell_start(lk, idx, capturing);
	if (push) {
		struct eht_gpu_ring a = {.ids = ids_dev && !view ? (eht_dptr)(uintptr_t)ids : 0,
					 .id_words = ids_dev ? n * (id64 ? 2 : 1) : 0, .n = n};
		if (view)
			a.view = view->k;
		if (b->split_want && !b->split_pending) /* (split.h: the wait and dequant come later) */
			return split_start(lk, es, idx, &a, n, dst, out, !raw && !cpu_dequant, capturing);
		rc = push_ring_wait(lk, es, idx, &a);
		if (!rc && !raw && !cpu_dequant)
			rc = eht_gpu_expand(&lk->g, es, 0, n, dst, lk->rb, out, lk->fmt);
		return eht_lk_bell_finish(lk, es, idx, capturing, rc);
	}
	if (view) /* the stream's own copy below needs the flat ids */
		rc = view->flatten(view, es);
	if (ids_dev && !rc)
		rc = eht_dev_d2h_async(r->h_ids, (eht_dptr)(uintptr_t)ids, n * (id64 ? 8 : 4), es);
	if (!rc)
		rc = eht_dev_stream_write32(es, b->d_words + idx * sizeof(uint32_t), 1);
	if (!rc)
		rc = bg_groups(lk, es, idx, n, dst, out, !raw);
	return eht_lk_bell_finish(lk, es, idx, capturing, rc);
}

/* Background mode for the distinct misses of a dedup pass (a hot set, GPU dedup), all of them the
 * CPU's: as eht_lk_bell_bg_piece, but their count exists only on the GPU. The stream copies it and
 * the bound's local rows to pinned memory before it rings; the CPU gathers that many and publishes every group of
 * the bound (those past the count at once, empty); the copy engine moves whole groups into compact
 * (rows past the count are never read: the hot path's expand takes them by code). Its dead count is
 * the dedup pass's (lk->d_counters[0]), copied to lk->h_dead at the end with publish_dead. */
int eht_lk_bell_bg_compact(eht_lookup *lk, eht_dptr uniq, eht_dptr ucount, eht_dptr compact, size_t n,
			   eht_stream s, bool capturing, bool publish_dead)
{
	struct lk_bell *b = lk->bell;
	const bool push = bg_pushed(lk, capturing);
	unsigned idx;
	int rc = eht_lk_bell_prepare(lk, (const void *)(uintptr_t)uniq, true, 0, lk->lo, n, true, true, push ? compact : 0, 0,
				     capturing, &idx);
	if (rc)
		return rc;
	struct lk_req *r = &b->reqs[idx];
	eht_lk_bell_start(lk, idx, capturing);
	if (push) {
		struct eht_gpu_ring a = {.ids = uniq, .ucount = ucount, .n = n,
					 .h_count = b->d_h_count + idx * sizeof(uint64_t),
					 .dead = publish_dead ? lk->d_counters : 0, .h_dead = publish_dead ? lk->d_h_dead : 0};
		rc = push_ring_wait(lk, s, idx, &a);
		return eht_lk_bell_finish(lk, s, idx, capturing, rc);
	}
	rc = eht_dev_d2h_async(&b->h_count[idx], ucount, sizeof(uint64_t), s);
	if (!rc)
		rc = eht_dev_d2h_async(r->h_ids, uniq, n * sizeof(uint32_t), s);
	if (!rc)
		rc = eht_dev_stream_write32(s, b->d_words + idx * sizeof(uint32_t), 1);
	if (!rc)
		rc = bg_groups(lk, s, idx, n, compact, 0, false);
	if (!rc && publish_dead)
		rc = eht_dev_d2h_async(lk->h_dead, lk->d_counters, sizeof(uint64_t), s);
	return eht_lk_bell_finish(lk, s, idx, capturing, rc);
}
