/* SPDX-License-Identifier: Apache-2.0 */
/* requests.h: the stream-triggered doorbell's state and request slots (requests.c). Ids in GPU
 * memory and CUDA-graph replays need no host synchronization: the call only enqueues work on the
 * stream (bell.c: the stage-in kernel; bg.c: the background and push ways), which rings a
 * doorbell word in host-mapped memory; the process's poller thread (poller.c) sees it and the CPU
 * pool gathers the request's rows into staging slots (serve.c, serve_bg.c), which the stream copies
 * out as they become ready. A request is a slot of the engine's: an eager ring of LK_EAGER_REQS for
 * calls made outside capture, and one kept per distinct captured call. */
#ifndef EHT_LOOKUP_GATHER_REQUESTS_H
#define EHT_LOOKUP_GATHER_REQUESTS_H

#include "lookup/core.h"
#include "lookup/gather/bell/ring_clock.h"

/* Stream-triggered requests per engine: the first LK_EAGER_REQS are a ring for calls made outside
 * capture, the rest are kept for captured calls (one per distinct ids buffer and shape). Engines
 * capture a graph per batch size (vLLM: up to 67 FULL decode graphs by default, each layer's lookup
 * with ids in its own buffer), so 1,024 captured calls per engine. */
#define LK_EAGER_REQS 8
#define LK_CAPTURED_REQS 1024
#define LK_REQS (LK_EAGER_REQS + LK_CAPTURED_REQS)
/* A request's device words: the doorbell kernels' two block counters, then (stage-in) its own u64
 * dead count, 8-byte aligned (stage_in.cu). */
#define LK_SYNC_WORDS 4u
/* A chunk's ready value: the request in the top bits (11 for 1,032 requests), chunk + 1 below; a
 * request has at most LK_TAG_CHUNKS chunks (eht_lk_bell_geom widens chunks to stay below). */
#define LK_TAG_SHIFT 21
#define LK_TAG_CHUNKS ((1u << LK_TAG_SHIFT) - 2)
#define LK_READY(idx, c) (((uint32_t)(idx) << LK_TAG_SHIFT) | (uint32_t)((c) + 1))
/* Rows per group a background request's stream waits for: few groups keep the stream's nodes (a
 * wait and a copy per group) cheap, enough of them let the copy engine move one while the CPU
 * gathers the next; at most LK_BG_GROUPS of them. A large bf16 request's groups are each dequantized
 * by a kernel that, beside the model's GEMMs, waits for SMs; the last group's copy and dequant
 * follow the gather. On H100s (eht bench step, prefill, 2 x 24 GiB, --trace, graph replays synced;
 * two runs, one process a setting) the step waited at the first table's join 15 and 54 us with 4
 * groups, 92 and 89-96 us with 8, 196 with 24, 342 with 2 (its last copy is 26 MB); the second
 * table's lookup took 2.65-2.97 ms with 4 against 3.85-3.92 with 8. A decode batch (6,144 rows) has 3
 * groups either way. */
#define LK_BG_GROUP_ROWS 2048
#define LK_BG_GROUPS 4
/* Rows of a bf16 background request above which each group is dequantized as soon as it is copied
 * instead of all at once after the last copy. Each dequant is a kernel that, beside the model, waits
 * for SMs between the GEMMs' waves, and each node costs a few microseconds (a wait, a copy, a kernel:
 * about 15 us a group on the lent H200): a decode batch's one dequant at the end costs less than one
 * per group. */
#define LK_BG_DEQUANT_ROWS 16384
/* A stuck GPU (or a request that never comes) must not hang the poller or the pool forever. */
#define LK_STALL_S 10.0

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
	/* Pushed (a background request the CPU finishes itself, serve_bg.c): the CPU's own copies move
	 * each group from staging to push_dst (GPU memory) and then set the request's done word, the one
	 * thing the stream waits for. 0: the stream waits for each group and copies it. */
	eht_dptr push_dst;
	/* A pushed bf16 request the CPU also dequantizes into push_out: above LK_BG_DEQUANT_ROWS rows group
	 * by group (an expand kernel it enqueues on the dequant stream, bg_xstream, once the group's copy
	 * on push_stream is done), an eager one of fewer rows once, on push_stream after its last copy.
	 * 0: the stream dequantizes the rows once they are all there. */
	eht_dptr push_out;
	atomic_bool armed; /* fields above published (release) for the poller */
	bool taken;       /* captured slot in use */
	bool done_used;
	eht_event done;     /* eager ring: recorded after the request's kernel */
	struct lk_ring_clock clock; /* captured: when it rang (the poller's alone, ring_clock.h) */
};

struct lk_trace_samples; /* trace.h */

/* State of the stream-triggered path (lk->bell), made by the strategy that uses it (HOST's init). */
struct lk_bell {
	uint8_t *staging;   /* pinned, mapped: slots of chunk rows */
	size_t staging_rows;
	eht_dptr d_staging;
	_Atomic uint32_t *words; /* pinned, mapped: bells[LK_REQS], ready[max_chunks], done[LK_REQS] (no GPU) */
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
	eht_dptr d_sync; /* LK_SYNC_WORDS u32 a request (two, then a u64 dead count), zero between launches */
	eht_dptr d_mirror; /* GPU memory, max_chunks u32: the stage-in kernel's relay of ready (0: none) */
	eht_dptr d_parts;  /* GPU memory, max_chunks u32: parts of a chunk copied, per slot (stage_in.cu) */
	eht_dptr d_done;   /* GPU memory, LK_REQS u32: pushed requests' done words (0: in words, no GPU) */
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
	atomic_uint_fast64_t pushed_dequants; /* groups the CPU dequantized after pushing them (pool threads) */
	uint64_t bg_side_dequants; /* group dequants enqueued on bg_xstream (the tests check the path ran) */
	/* A split request (lookup/split.h): split_want asks the next pushed request to stop after its
	 * ring kernel; the one that did is split_pending until eht_lk_split_wait enqueues its wait. */
	bool split_want, split_pending, split_capturing, split_expand;
	unsigned split_idx;
	size_t split_n;
	eht_dptr split_dst, split_out;
	bool no_kick;          /* it has captured requests: the poller naps (counted in its no_kick) */
	bool own_h_dead;       /* the CPU emulation allocated lk->h_dead */
	atomic_uint_fast64_t bg_reqs; /* background requests served, counted before the last group is ready */
	atomic_uint_fast64_t bg_compact_reqs; /* of them, compact ones (a dedup pass's distinct misses) */
	atomic_int err;        /* first error of a gather no caller waited for */
	char errmsg[512];
	bool registered;       /* in the poller's list (poller.c) */
	/* EHT_TEST_BELL_TRACE=1: requests served, seconds waiting for the previous request's slots, seconds
	 * gathering; printed when the engine is destroyed (where a step's time goes). */
	uint64_t st_reqs[LK_AUTO_NCLASS], st_rows[LK_AUTO_NCLASS]; /* per batch-size class (LK_AUTO_CLASS) */
	double st_wait_s[LK_AUTO_NCLASS], st_gather_s[LK_AUTO_NCLASS], st_first_s[LK_AUTO_NCLASS];
	/* and how the pool joined each gather (trace.h, struct lk_joins): workers that took a task, the
	 * seconds until the last of them and their sum */
	uint64_t st_joined[LK_AUTO_NCLASS];
	double st_join_last_s[LK_AUTO_NCLASS], st_join_sum_s[LK_AUTO_NCLASS];
	bool trace;          /* EHT_TEST_BELL_TRACE: the kernel also stamps GPU times into gtrace */
	uint64_t *gtrace;    /* pinned, mapped: start, ring, chunk 0 ready, last chunk ready, end; then the
			      * CPU's marks and their GPU stamps (trace.c) */
	eht_dptr d_gtrace;
	uint64_t gprev[2];   /* start and ring of the launch served last (its later stamps are in gtrace) */
	int gclass;          /* class of the launch served last */
	struct lk_trace_samples *gs; /* the launches' GPU times per class (trace.h); with gtrace */
};

/* The doorbell words: bells[LK_REQS] (rung by the stream, request i's at i), then ready[max_chunks]
 * (a staging slot's chunk, or a background request's group, LK_READY when the CPU gathered it, 0
 * once the stream took it), then done[LK_REQS] (a pushed request's end). */
static inline _Atomic uint32_t *eht_lk_bells(struct lk_bell *b) { return b->words; }
static inline _Atomic uint32_t *eht_lk_ready(struct lk_bell *b) { return b->words + LK_REQS; }
/* Request idx's done word (pushed requests): the CPU's push stream sets it to 1 once the rows are in
 * GPU memory; the stream's ring clears it. The host word (the CPU emulation's) and the stream's
 * address (d_done's on a GPU). */
_Atomic uint32_t *eht_lk_bell_done(struct lk_bell *b, const eht_lookup *lk, unsigned idx);
eht_dptr eht_lk_bell_d_done(const struct lk_bell *b, const eht_lookup *lk, unsigned idx);

/* Pinned, mapped memory of the path (*dptr: its device address); host memory without a GPU (the
 * CPU emulation the tests drive). *rc set on failure (then nothing is allocated). */
void *eht_lk_bell_alloc(eht_lookup *lk, size_t bytes, eht_dptr *dptr, int *rc);
void eht_lk_bell_free(eht_lookup *lk, void *p);
/* Makes lk's GPU current on the calling thread (a pool thread or the poller pushing rows). */
int eht_lk_bell_on_device(const eht_lookup *lk);
/* Chunk rows and staging slots of an n-row request (the kernel's launch arguments). */
void eht_lk_bell_geom(const eht_lookup *lk, size_t n, uint32_t *chunk, uint32_t *nslots);
/* Groups of a background request of n rows: the stream waits for each, then copies it. */
void eht_lk_bell_bg_geom(const eht_lookup *lk, size_t n, uint32_t *groups, uint32_t *group_rows);
/* Records the first error of a gather no caller waits for (its message too: messages are
 * thread-local); eht_lk_bell_take_error hands it to the next call. */
void eht_lk_bell_fail(struct lk_bell *b, int rc);
/* The first error of a stream-triggered gather since the last call (then cleared), or 0 (also
 * without the path). */
int eht_lk_bell_take_error(eht_lookup *lk);
/* Waits (the poller, before serving a request) until staging is free: the previous request's slots
 * all read by the GPU and the CPU's copies of the last pushed request done. t0: when it started. */
void eht_lk_bell_wait_free(eht_lookup *lk, double t0);
/* The call's CPU part: picks request idx (an eager ring slot, or the captured request of this key)
 * and records what the CPU will read (push_dst, push_out: where a pushed background request's rows
 * and dequantized rows go, part of the key); then arm it (poller.c) before the kernel can ring. */
int eht_lk_bell_prepare(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			bool compact, bool bg, eht_dptr push_dst, eht_dptr push_out, bool capturing, unsigned *idx);

#endif
