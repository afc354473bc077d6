/* SPDX-License-Identifier: Apache-2.0 */
/* bell.c: lookups triggered by the stream itself (bell.h), so that ids in GPU memory and CUDA-graph
 * replays need no host synchronization. The call only enqueues work: the stage-in kernel
 * (src/gpu/kernels/lookup/stage_in.cu), which copies the ids into pinned memory and whose last block
 * to do so writes a doorbell word in host-mapped memory. The process's poller (poller.c) sees it and
 * the CPU pool gathers the request (serve.c) chunk by chunk into staging slots, which the kernel
 * copies into the output as soon as each is ready, so gather, transfer and the CPU's next chunks
 * overlap. Every value the stream writes or waits for depends only on the call's arguments, so a
 * captured graph replays it as is.
 *
 * Why a kernel and not cuStreamWriteValue/WaitValue plus one DMA per chunk: one launch per request
 * instead of three stream operations per chunk (a decode batch has dozens of chunks), and no
 * dependence on optional driver entry points. The background mode (EHT_LOOKUP_BACKGROUND) trades
 * that for holding no SM (bg.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu/gpu_lookup.h"
#include "lookup/gather/bell/bell.h"
#include "lookup/gather/bell/bg.h"
#include "lookup/gather/bell/poller.h"
#include "lookup/gather/bell/requests.h"
#include "lookup/gather/bell/trace.h"
#include "lookup/gather/gather.h"
#include "lookup/view.h"
#include "util/err.h"
#include "util/settings.h"

/* ------------------------------------------------------------------- set-up and teardown */
int eht_lk_bell_init(eht_lookup *lk)
{
	struct lk_bell *b = calloc(1, sizeof(*b));
	if (!b)
		return eht_err(ENOMEM, "lookup: out of memory");
	lk->bell = b;
	int rc = 0;
	b->staging_rows = lk->staging_rows;
	b->staging = eht_lk_bell_alloc(lk, b->staging_rows * lk->rb, &b->d_staging, &rc);
	b->words = eht_lk_bell_alloc(lk, (2 * LK_REQS + lk->max_chunks) * sizeof(uint32_t), &b->d_words, &rc);
	b->cdead = eht_lk_bell_alloc(lk, lk->max_chunks * sizeof(uint64_t), &b->d_cdead, &rc);
	if (!lk->gpu && !lk->h_dead) { /* the CPU emulation: a background request writes its dead count here */
		lk->h_dead = eht_lk_bell_alloc(lk, sizeof(uint64_t), NULL, &rc);
		b->own_h_dead = lk->h_dead != NULL;
	}
	b->arena_cap = 2 * lk->max_batch * 8;
	b->arena = eht_lk_bell_alloc(lk, b->arena_cap, &b->d_arena, &rc);
	b->h_count = eht_lk_bell_alloc(lk, LK_REQS * sizeof(uint64_t), &b->d_h_count, &rc);
	b->trace = eht_setting_bool(EHT_SET_TEST_BELL_TRACE);
	if (b->trace) {
		b->gtrace = eht_lk_bell_alloc(lk, 11 * sizeof(uint64_t), &b->d_gtrace, &rc);
		if (!rc && !(b->gs = calloc(1, sizeof(*b->gs))))
			rc = eht_err(ENOMEM, "lookup: out of memory for the bell trace");
	}
	for (unsigned i = 0; i < LK_EAGER_REQS && !rc; i++) {
		b->reqs[i].h_cap = lk->max_batch * 8;
		b->reqs[i].h_ids = eht_lk_bell_alloc(lk, b->reqs[i].h_cap, &b->reqs[i].d_h_ids, &rc);
		if (!rc && lk->gpu)
			rc = eht_dev_event_create(&b->reqs[i].done, 0);
	}
	if (!rc && !(b->slot_pub = calloc(lk->max_chunks, sizeof(*b->slot_pub))))
		rc = eht_err(ENOMEM, "lookup: out of memory");
	if (!rc && lk->gpu) {
		rc = eht_dev_alloc(&b->d_sync, LK_REQS * LK_SYNC_WORDS * sizeof(uint32_t));
		if (!rc)
			rc = eht_dev_memset8(b->d_sync, 0, LK_REQS * LK_SYNC_WORDS * sizeof(uint32_t));
	}
	/* One stage-in block relays the ready words into GPU memory for the others (stage_in.cu). */
	if (!rc && lk->gpu) {
		rc = eht_dev_alloc(&b->d_mirror, lk->max_chunks * sizeof(uint32_t));
		if (!rc)
			rc = eht_dev_memset8(b->d_mirror, 0, lk->max_chunks * sizeof(uint32_t));
	}
	/* Parts of a chunk copied by several stage-in blocks count themselves here, per slot. */
	if (!rc && lk->gpu) {
		rc = eht_dev_alloc(&b->d_parts, lk->max_chunks * sizeof(uint32_t));
		if (!rc)
			rc = eht_dev_memset8(b->d_parts, 0, lk->max_chunks * sizeof(uint32_t));
	}
	if (!rc && lk->gpu && lk->background && lk->fmt != EHT_LOOKUP_RAW) {
		rc = eht_dev_stream_create(&b->bg_xstream, EHT_STREAM_NONBLOCKING);
		for (unsigned g = 0; g < LK_BG_GROUPS && !rc; g++)
			rc = eht_dev_event_create(&b->bg_copied[g], 0);
		if (!rc)
			rc = eht_dev_event_create(&b->bg_xdone, 0);
	}
	/* Captured background requests pushed unless EHT_LOOKUP_BG_STREAM (or 0 in the environment for
	 * every engine; push_ring_wait says what pushing saves, eht.h when not to). Eager ones are pushed
	 * whatever it says (bg.c), so every background engine has the push stream. */
	b->bg_push = eht_setting_is_set(EHT_SET_LOOKUP_BG_PUSH) ? eht_setting_bool(EHT_SET_LOOKUP_BG_PUSH)
								 : !(lk->flags & EHT_LOOKUP_BG_STREAM);
	if (!rc && lk->gpu && lk->background) {
		rc = eht_dev_stream_create(&b->push_stream, EHT_STREAM_NONBLOCKING);
		if (!rc)
			rc = eht_dev_event_create(&b->ev_pushed, 0);
		/* the pushed requests' done words (requests.c says why in GPU memory) */
		if (!rc)
			rc = eht_dev_alloc(&b->d_done, LK_REQS * sizeof(uint32_t));
		if (!rc)
			rc = eht_dev_memset8(b->d_done, 0, LK_REQS * sizeof(uint32_t));
	}
	atomic_store(&b->scan, LK_EAGER_REQS);
	return rc ? rc : eht_lk_poller_join(lk);
}

void eht_lk_bell_fini(eht_lookup *lk)
{
	struct lk_bell *b = lk->bell;
	if (!b)
		return;
	eht_lk_poller_leave(lk); /* first: nothing reads the engine after */
	eht_lk_trace_report(lk);
	for (unsigned i = 0; i < LK_REQS; i++) {
		if (i < LK_EAGER_REQS)
			eht_lk_bell_free(lk, b->reqs[i].h_ids);
		else if (b->reqs[i].h_ids && ((uint8_t *)b->reqs[i].h_ids < b->arena ||
					      (uint8_t *)b->reqs[i].h_ids >= b->arena + b->arena_cap))
			eht_lk_bell_free(lk, b->reqs[i].h_ids);
		if (b->reqs[i].done)
			eht_dev_event_destroy(b->reqs[i].done);
	}
	if (b->d_sync)
		eht_dev_free(b->d_sync);
	if (b->d_mirror)
		eht_dev_free(b->d_mirror);
	if (b->d_parts)
		eht_dev_free(b->d_parts);
	for (unsigned g = 0; g < LK_BG_GROUPS; g++)
		eht_dev_event_destroy(b->bg_copied[g]);
	eht_dev_event_destroy(b->bg_xdone);
	eht_dev_stream_destroy(b->bg_xstream);
	if (b->push_stream)
		eht_dev_stream_sync(b->push_stream);
	if (b->d_done) /* (after the push stream's last write to it) */
		eht_dev_free(b->d_done);
	eht_dev_event_destroy(b->ev_pushed);
	eht_dev_stream_destroy(b->push_stream);
	eht_lk_bell_free(lk, b->arena);
	eht_lk_bell_free(lk, b->h_count);
	eht_lk_bell_free(lk, b->gtrace);
	free(b->gs);
	eht_lk_bell_free(lk, b->staging);
	eht_lk_bell_free(lk, (void *)b->words);
	eht_lk_bell_free(lk, b->cdead);
	if (b->own_h_dead) {
		eht_lk_bell_free(lk, lk->h_dead);
		lk->h_dead = NULL;
	}
	free(b->slot_pub);
	free(b);
	lk->bell = NULL;
}

/* ------------------------------------------------------------------- the stage-in kernel */
/* Enqueues request idx's stage-in kernel (a: everything but the request's own fields). */
static int bell_launch(eht_lookup *lk, struct eht_gpu_stage_in *a, size_t n, eht_dptr out, eht_stream s,
		       bool capturing, bool publish_dead, unsigned idx)
{
	struct lk_bell *b = lk->bell;
	struct lk_req *r = &b->reqs[idx];
	a->h_ids = r->d_h_ids;
	a->staging = b->d_staging;
	a->ready = b->d_words + LK_REQS * sizeof(uint32_t);
	a->chunk_dead = b->d_cdead;
	a->bell = b->d_words + idx * sizeof(uint32_t);
	a->sync = b->d_sync + idx * LK_SYNC_WORDS * sizeof(uint32_t);
	a->h_dead = publish_dead ? lk->d_h_dead : 0;
	a->trace = b->d_gtrace;
	a->mirror = b->d_mirror;
	a->parts_done = b->d_parts;
	eht_lk_bell_geom(lk, n, &a->chunk, &a->nslots);
	a->tag = (uint32_t)idx << LK_TAG_SHIFT;
	eht_lk_bell_start(lk, idx, capturing);
	/* The run's only piece, not a dedup pass's misses (whose dead ids the dedup counted into
	 * lk->d_counters): the kernel keeps its own count beside its sync words and publishes it, so the
	 * run has no memset (on the lent H200 2.3-5 us of an eager call's CPU, and a graph node). */
	const bool own = publish_dead && !a->ucount;
	int rc = own ? 0 : eht_lk_counters_zero(lk, s);
	if (!rc)
		rc = eht_gpu_stage_in(&lk->g, s, a, n, lk->rb, out, own ? a->sync + 2 * sizeof(uint32_t) : lk->d_counters);
	return eht_lk_bell_finish(lk, s, idx, capturing, rc);
}

int eht_lk_bell_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
		      eht_dptr out, eht_stream s, bool capturing, bool publish_dead, const struct eht_lk_view *view)
{
	/* Background: the run's only piece (its dead count is the CPU's) and a request that fits the
	 * staging whole (groups never wrap). */
	if (lk->background && publish_dead && n <= lk->bell->staging_rows)
		return eht_lk_bell_bg_piece(lk, ids, ids_dev, id64, off, n, out, s, capturing, view);
	unsigned idx;
	int rc = eht_lk_bell_prepare(lk, ids, ids_dev, id64, off, n, false, false, 0, 0, capturing, &idx);
	if (rc)
		return rc;
	/* The kernel copies GPU ids into the pinned copy itself (a copy on the stream before it measured
	 * microseconds of extra latency per step). */
	struct eht_gpu_stage_in a = {.ids = ids_dev && !view ? (eht_dptr)(uintptr_t)ids : 0,
				     .id_bytes = n * (id64 ? 8 : 4)};
	if (view)
		a.view = view->k;
	/* bf16: each block moves its chunk's raw rows into the scratch (HOST's init made it; n <= max_batch
	 * <= compact_rows) and dequantizes them from there (GPU memory) into out. Measured on the H200
	 * (graph, GPU ids, 24 GiB): a block's raw copy of a chunk out of staging takes half the time of
	 * dequantizing it on the way (92 against 113 us for decode, 1.34 against 2.06 ms for prefill, with
	 * an expand kernel after); dequantized chunk by chunk beside the gather, no expand is left after
	 * the last row. */
	if (lk->fmt != EHT_LOOKUP_RAW) {
		a.fmt = lk->fmt;
		a.xout = out;
		out = lk->scr.d_compact;
	}
	return bell_launch(lk, &a, n, out, s, capturing, publish_dead, idx);
}

int eht_lk_bell_compact(eht_lookup *lk, eht_dptr uniq, eht_dptr ucount, eht_dptr compact, float share,
			size_t n, eht_stream s, bool capturing, bool publish_dead)
{
	/* Background: every distinct miss the CPU's, a request that fits the staging whole (on the lent
	 * H200 a text decode step's lookups added +93 us that way against +317 us through the stage-in
	 * kernel). */
	if (lk->background && share <= 0.0f && publish_dead && n <= lk->bell->staging_rows)
		return eht_lk_bell_bg_compact(lk, uniq, ucount, compact, n, s, capturing, publish_dead);
	unsigned idx;
	/* u32 local rows: off = lo makes them absolute for the CPU's gather */
	int rc = eht_lk_bell_prepare(lk, (const void *)(uintptr_t)uniq, true, 0, lk->lo, n, true, false, 0, 0, capturing,
				     &idx);
	if (rc)
		return rc;
	struct eht_gpu_stage_in a = {.ids = uniq, .id_bytes = n * 4, .ucount = ucount, .share = share,
				     .h_count = lk->bell->d_h_count + idx * sizeof(uint64_t)};
	return bell_launch(lk, &a, n, compact, s, capturing, publish_dead, idx);
}
