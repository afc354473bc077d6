/* SPDX-License-Identifier: Apache-2.0 */
/* host.h: the HOST strategy's state and pieces, private to src/lookup: the CPU side (host.c: sort +
 * dedup of ids, the pool gathering rows into pinned staging chunk by chunk, each chunk sent to the GPU
 * as soon as it is ready) and the stream-triggered side (host_bell.c: ids in GPU memory and CUDA-graph
 * replays, the CPU gather started by the stream itself). AUTO and the hot cache use these pieces too.
 * The sorted HOST path is (a) eht_lk_sort_dedup (host-side sort + dedup of ids), (b)
 * eht_lk_gather_stage (distinct rows by memcpy from the host pointer, or through the tier's read_rows
 * for tiers without one, into pinned staging by the CPU pool, each chunk sent to a fixed GPU buffer as
 * soon as it is ready), (c) eht_gpu_expand (src/gpu/gpu_lookup.h) from that GPU buffer to the
 * requested order; eht_lk_host_sorted_piece runs all three for one piece of a batch. */
#ifndef EHT_LOOKUP_STRATEGY_HOST_H
#define EHT_LOOKUP_STRATEGY_HOST_H

#include "lookup/lookup_impl.h"

/* Stream-triggered requests per engine (host_bell.c): the first LK_EAGER_REQS are a ring for calls
 * made outside capture, the rest are kept for captured calls (one per distinct ids buffer and shape).
 * Engines capture a graph per batch size (vLLM: up to 67 FULL decode graphs by default, each layer's
 * lookup with ids in its own buffer), so 1,024 captured calls per engine. */
#define LK_EAGER_REQS 8
#define LK_CAPTURED_REQS 1024
#define LK_REQS (LK_EAGER_REQS + LK_CAPTURED_REQS)
/* A chunk's ready value: the request in the top bits (11 for 1,032 requests), chunk + 1 below; a
 * request has at most LK_TAG_CHUNKS chunks (eht_lk_bell_geom widens chunks to stay below). */
#define LK_TAG_SHIFT 21
#define LK_TAG_CHUNKS ((1u << LK_TAG_SHIFT) - 2)
#define LK_READY(idx, c) (((uint32_t)(idx) << LK_TAG_SHIFT) | (uint32_t)((c) + 1))
/* Most groups of a background request (host_bell.c). */
#define LK_BG_GROUPS 8
/* Rows of a bf16 background request above which each group is dequantized as soon as it is copied
 * instead of all at once after the last copy. Each dequant is a kernel that, beside the model, waits
 * for SMs between the GEMMs' waves, and each node costs a few microseconds (a wait, a copy, a kernel:
 * about 15 us a group on the lent H200): a decode batch's one dequant at the end costs less than one
 * per group. */
#define LK_BG_DEQUANT_ROWS 16384

/* One stream-triggered CPU gather: what the CPU reads when the doorbell of its index rings. */
struct lk_req {
	const void *key;  /* captured: the caller's ids pointer (with n, id64, off: the request's key) */
	const void *ids;  /* what the CPU reads: h_ids, or the caller's host ids */
	void *h_ids;      /* pinned copy of ids in GPU memory (the kernel copies them before ringing) */
	eht_dptr d_h_ids; /* its device address */
	size_t h_cap, n;  /* bytes of h_ids; ids */
	int id64;
	int64_t off;
	bool compact;     /* the distinct rows of a dedup pass: n bounds them, h_count has their number */
	bool bg;          /* background mode: groups of rows waited for by stream memory operations */
	/* Pushed (a background request the CPU finishes itself, host_bell.c): the CPU's own copies move
	 * each group from staging to push_dst (GPU memory) and then set the request's done word, the one
	 * thing the stream waits for. 0: the stream waits for each group and copies it. */
	eht_dptr push_dst;
	atomic_bool armed; /* fields above published (release) for the poller */
	bool taken;       /* captured slot in use */
	bool done_used;
	eht_event done;     /* eager ring: recorded after the request's kernel */
};

/* State of the stream-triggered path, allocated at its first use. */
struct lk_bell {
	bool ready_alloc;
	uint8_t *staging;   /* pinned, mapped: slots of chunk rows */
	size_t staging_rows;
	eht_dptr d_staging;
	_Atomic uint32_t *words; /* pinned, mapped: bells[LK_REQS], ready[max_chunks], done[LK_REQS] */
	atomic_uint *slot_pub;   /* CPU only: chunk + 1 last gathered into each slot */
	uint8_t *arena;          /* pinned: ids copies of captured requests, bump-allocated */
	eht_dptr d_arena;
	/* (the dead ids of a run whose kernel publishes them go to the engine's h_dead) */
	uint64_t *h_count;       /* pinned, mapped: rows of each compact request, written by its kernel */
	eht_dptr d_h_count;
	size_t arena_cap, arena_used;
	eht_dptr d_words;
	uint64_t *cdead;    /* pinned, mapped: dead ids per chunk */
	eht_dptr d_cdead;
	eht_dptr d_sync; /* 2 x LK_REQS u32, zero between launches */
	eht_dptr d_mirror; /* GPU memory, max_chunks u32: the stage-in kernel's relay of ready (0: none) */
	struct lk_req reqs[LK_REQS];
	unsigned eager_next;
	unsigned prev_slots; /* slots the previous request used: all free before the next starts */
	_Atomic unsigned scan; /* requests the poller looks at: indices < scan */
	/* Background bf16: each group's dequant runs on bg_xstream once its copy is done (bg_copied[g]),
	 * beside the next groups' copies; the caller's stream joins it (bg_xdone) at the end. */
	eht_stream bg_xstream;
	eht_event bg_copied[LK_BG_GROUPS], bg_xdone;
	/* Pushed requests (EHT_LOOKUP_BG_PUSH): the CPU's copies go on push_stream, whose
	 * last one is ev_pushed (staging is busy until it is done; pushed_used: recorded once). */
	bool bg_push;
	eht_stream push_stream;
	eht_event ev_pushed;
	bool pushed_used;
	uint64_t pushed_reqs; /* pushed requests served (poller only; the tests check the path ran) */
	uint64_t bg_side_dequants; /* group dequants enqueued on bg_xstream (the tests check the path ran) */
	bool no_kick;          /* it has captured requests: the poller naps (counted in its no_kick) */
	bool own_h_dead;       /* the CPU emulation allocated lk->h_dead */
	atomic_uint_fast64_t bg_reqs; /* background requests served, counted before the last group is ready */
	atomic_uint_fast64_t bg_compact_reqs; /* of them, compact ones (a dedup pass's distinct misses) */
	atomic_int err;        /* first error of a gather no caller waited for */
	char errmsg[512];
	bool registered;
	/* EHT_TEST_BELL_TRACE=1: requests served, seconds waiting for the previous request's slots, seconds
	 * gathering; printed when the engine is destroyed (where a step's time goes). */
	uint64_t st_reqs[LK_AUTO_NCLASS], st_rows[LK_AUTO_NCLASS]; /* per batch-size class (LK_AUTO_CLASS) */
	double st_wait_s[LK_AUTO_NCLASS], st_gather_s[LK_AUTO_NCLASS], st_first_s[LK_AUTO_NCLASS];
	bool trace;          /* EHT_TEST_BELL_TRACE: the kernel also stamps GPU times into gtrace */
	uint64_t *gtrace;    /* pinned, mapped: start, ring, chunk 0 ready, last chunk ready, end; then the
			      * CPU's marks and their GPU stamps (trace_mark) */
	eht_dptr d_gtrace;
	uint64_t gprev[2];   /* start and ring of the launch served last (its later stamps are in gtrace) */
	int gclass;          /* class of the launch served last */
	uint64_t g_n[LK_AUTO_NCLASS];
	double g_ring_s[LK_AUTO_NCLASS], g_first_s[LK_AUTO_NCLASS], g_span_s[LK_AUTO_NCLASS], g_tail_s[LK_AUTO_NCLASS];
	double g_ans_s[LK_AUTO_NCLASS], g_pool_s[LK_AUTO_NCLASS], g_copy0_s[LK_AUTO_NCLASS], g_copyl_s[LK_AUTO_NCLASS];
};

/* The HOST strategy's state (lk->state[EHT_LOOKUP_HOST]). */
struct lk_host {
	uint8_t *staging;                  /* lk->staging_rows rows (pinned with a GPU) */
	uint64_t *h_rows, *h_tmp, *h_uniq; /* max_batch, 2 x max_batch, max_batch */
	uint32_t *h_slot;                  /* max_batch */
	atomic_uint *chunk_done;
	uint64_t *chunk_dead;
	eht_event ev_half[2], ev_stage;
	bool half_used[2], stage_used;
	struct lk_bell bell; /* with a GPU and the kernels (ready_alloc), or the tests' CPU emulation */
};

/* HOST's state (NULL before its init ran). */
static inline struct lk_host *eht_lk_host(const eht_lookup *lk) { return lk->state[EHT_LOOKUP_HOST]; }
/* The stream-triggered path of HOST, NULL when it has none (no init, no GPU kernels). */
static inline struct lk_bell *eht_lk_bell(const eht_lookup *lk)
{
	struct lk_host *h = eht_lk_host(lk);
	return h && h->bell.ready_alloc ? &h->bell : NULL;
}

/* (a) Sorts and deduplicates rows[0..n) (local rows < 2^32, or LK_DEAD): uniq[0..*nu) ascending
 * distinct live rows, slot[p] = index into uniq or LK_SLOT_DEAD. tmp: 2n entries. Returns the number
 * of dead rows. n must be < 2^32. */
size_t eht_lk_sort_dedup(const uint64_t *rows, size_t n, uint64_t *tmp, uint64_t *uniq, uint32_t *slot,
			 size_t *nu);

/* (b) Gathers rows rows[0..n) into lk->staging by the pool (from the host pointer, or with the
 * table's read_rows: `rows` are then absolute rows, else local), and when dma_dst is not 0 sends each
 * finished run of chunks to dma_dst (same layout) on stream s. Returns 0 or the first error. */
int eht_lk_gather_stage(eht_lookup *lk, const uint64_t *rows, size_t n, eht_dptr dma_dst, eht_stream s);

/* One piece (n <= min(max_batch, staging_rows)) of the sorted HOST path: ids -> local rows ->
 * (a) -> (b) -> (c) into out (GPU when out_dev, else host memory, expanded by the CPU). Adds the dead
 * ids to *dead. */
int eht_lk_host_sorted_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
			     bool out_dev, eht_stream s, uint64_t *dead);

/* The HOST path in request order for n <= max_batch ids (no sort): rows copied (or dequantized)
 * straight into host out, or through staging halves into GPU out. Adds the dead ids to *dead. */
int eht_lk_host_direct_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
			     bool out_dev, eht_stream s, uint64_t *dead);

/* HOST of one piece with host ids, by the calling thread (into GPU or host out). */
int eht_lk_host_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out, bool out_dev,
		      eht_stream s, uint64_t *dead);

/* host_bell.c: HOST (and the CPU share of AUTO) triggered by the stream itself: enqueues the ids copy
 * (ids_dev) and the stage-in kernel for ids[0..n) into GPU out on s; the process's poller thread
 * gathers when the kernel rings. Capturable. Dead ids go to lk->d_counters[0], and with publish_dead
 * (the run's only GPU work) from there to lk->h_dead when the kernel ends. */
int eht_lk_bell_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
		      eht_dptr out, eht_stream s, bool capturing, bool publish_dead);
/* The same for the distinct rows of a dedup pass (hot/hot.c): uniq (u32 local rows) after the GPU's
 * share of the *ucount there are (both on the GPU; n bounds them) into compact (raw, same places). */
int eht_lk_bell_compact(eht_lookup *lk, eht_dptr uniq, eht_dptr ucount, eht_dptr compact, float share,
			size_t n, eht_stream s, bool capturing, bool publish_dead);
/* Allocates the path's buffers (host memory without a GPU: the CPU emulation the tests drive) and
 * joins the poller. */
int eht_lk_bell_init(eht_lookup *lk);
/* The call's CPU part: picks request idx (an eager ring slot, or the captured request of this key)
 * and records what the CPU will read (push_dst: a pushed background request's rows go there, part
 * of the key); then arm (before the kernel can ring). */
int eht_lk_bell_prepare(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			bool compact, bool bg, eht_dptr push_dst, bool capturing, unsigned *idx);
/* Request idx's done word (host_bell.c, pushed requests): the CPU sets it to 1 once the rows are in
 * GPU memory; the stream's ring clears it. */
_Atomic uint32_t *eht_lk_bell_done(struct lk_bell *b, const eht_lookup *lk, unsigned idx);
/* Groups of a background request of n rows (bg_geom): the stream waits for each, then copies it. */
void eht_lk_bell_bg_geom(const eht_lookup *lk, size_t n, uint32_t *groups, uint32_t *group_rows);
void eht_lk_bell_arm(eht_lookup *lk, unsigned idx);
/* Chunk rows and staging slots of an n-row request (the kernel's launch arguments). */
void eht_lk_bell_geom(const eht_lookup *lk, size_t n, uint32_t *chunk, uint32_t *nslots);
/* lk's captured requests ring without waking the poller (nothing beside their kernels does): the
 * idle poller naps while they may ring (what every capture does). */
void eht_lk_bell_no_kick(eht_lookup *lk);
/* Leaves the poller and frees the path's buffers (after the GPU finished with them). */
void eht_lk_bell_fini(eht_lookup *lk);
/* The first error of a stream-triggered gather since the last call (then cleared), or 0. */
int eht_lk_bell_take_error(eht_lookup *lk);

#endif
