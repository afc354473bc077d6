/* SPDX-License-Identifier: Apache-2.0 */
/* lookup_impl.h: the lookup engine's state, private to src/lookup and shared by its files: lookup.c
 * (create, dispatch), lk_strategy.c (the strategy table), lk_auto.c (AUTO), lk_host.c (the HOST
 * strategy), lk_cpu.c (the CPU pool), lk_bell.c (stream-triggered HOST). The sorted HOST path is (a) eht_lk_sort_dedup
 * (host-side sort + dedup of ids), (b) eht_lk_gather_stage (distinct rows by memcpy from the host
 * pointer, or through the tier's read_rows for tiers without one, into pinned staging by the CPU
 * pool, each chunk sent to a fixed GPU buffer as soon as it is ready), (c) eht_gpu_expand
 * (src/cuda/gpu_lookup.h) from that GPU buffer to the requested order; eht_lk_host_sorted_piece runs
 * all three for one piece of a batch. Tiers plug in only through struct eht_table_ops. */
#ifndef EHT_LOOKUP_LOOKUP_IMPL_H
#define EHT_LOOKUP_LOOKUP_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/cu_driver.h"
#include "cuda/gpu_lookup.h"
#include "eht.h"
#include "table/table_impl.h"
#include "util/pool.h"

/* AUTO's class of an n-id batch: 0 small (a few requests: the in-place gather's latency can win),
 * 1 decode-sized, 2 prefill-sized; each calibrated at its own size (lk_auto.c). */
#define LK_AUTO_NCLASS 3
#define LK_AUTO_CLASS(n) ((n) >= 32768 ? 2 : (n) >= 4096 ? 1 : 0)

/* Smallest batch that goes through GPU dedup and the hot set (lk_hot.c); EHT_LOOKUP_DEDUP_MIN. Below it
 * (AUTO's small class) the two extra passes cost more than they save: on the H200 with real text and
 * a 1 Mi-row hot set, 256 / 1,024 ids took 28 / 35 us through them against 19 / 27 us without, while
 * 4,096 / 6,144 / 16,384 ids took 94 / 112 / 198 us against 101 / 124 / 260 us (graph replays). */
#define LK_DEDUP_MIN 4096
/* The same with ids in host memory, read now: below it the CPU piece (no copy of the ids to the GPU,
 * no kernels) is faster: 6,144 ids took 114 us through the hot set against 78-82 us without. */
#define LK_DEDUP_MIN_HOST_IDS 32768

#define LK_DEAD UINT64_MAX
#define LK_SLOT_DEAD UINT32_MAX
/* Rows a CPU thread reads ahead with software prefetch: enough to overlap a few DRAM misses, few
 * enough not to evict rows still being copied (8 measured a little faster than none). */
#define LK_PREFETCH 8
#define LK_CHUNK_MIN 16
#define LK_CHUNK_MAX 1024
/* Stream-triggered requests per engine (lk_bell.c): the first LK_EAGER_REQS are a ring for calls
 * made outside capture, the rest are kept for captured calls (one per distinct ids buffer and shape). */
#define LK_REQS 64
#define LK_EAGER_REQS 8
/* A chunk's ready value: the request in the top bits, chunk + 1 below. */
#define LK_TAG_SHIFT 26
#define LK_READY(idx, c) (((uint32_t)(idx) << LK_TAG_SHIFT) | (uint32_t)((c) + 1))

/* One stream-triggered CPU gather: what the CPU reads when the doorbell of its index rings. */
struct lk_req {
	const void *key;  /* captured: the caller's ids pointer (with n, id64, off: the request's key) */
	const void *ids;  /* what the CPU reads: h_ids, or the caller's host ids */
	void *h_ids;      /* pinned copy of ids in GPU memory (the kernel copies them before ringing) */
	CUdeviceptr d_h_ids; /* its device address */
	size_t h_cap, n;  /* bytes of h_ids; ids */
	int id64;
	int64_t off;
	bool compact;     /* the distinct rows of a dedup pass: n bounds them, h_count has their number */
	atomic_bool armed; /* fields above published (release) for the poller */
	bool taken;       /* captured slot in use */
	bool done_used;
	CUevent done;     /* eager ring: recorded after the request's kernel */
};

/* State of the stream-triggered path, allocated at its first use. */
struct lk_bell {
	bool ready_alloc;
	uint8_t *staging;   /* pinned, mapped: slots of chunk rows */
	size_t staging_rows;
	CUdeviceptr d_staging;
	_Atomic uint32_t *words; /* pinned, mapped: bells[LK_REQS], then ready[max_chunks] */
	atomic_uint *slot_pub;   /* CPU only: chunk + 1 last gathered into each slot */
	uint8_t *arena;          /* pinned: ids copies of captured requests, bump-allocated */
	CUdeviceptr d_arena;
	uint64_t *h_dead;        /* pinned, mapped: dead ids of the last run, written by its kernel */
	uint64_t *h_count;       /* pinned, mapped: rows of each compact request, written by its kernel */
	CUdeviceptr d_h_count;
	CUdeviceptr d_h_dead;
	size_t arena_cap, arena_used;
	CUdeviceptr d_words;
	uint64_t *cdead;    /* pinned, mapped: dead ids per chunk */
	CUdeviceptr d_cdead;
	CUdeviceptr d_sync; /* 2 x LK_REQS u32, zero between launches */
	struct lk_req reqs[LK_REQS];
	unsigned eager_next;
	unsigned prev_slots; /* slots the previous request used: all free before the next starts */
	_Atomic unsigned scan; /* requests the poller looks at: indices < scan */
	atomic_int err;        /* first error of a gather no caller waited for */
	char errmsg[512];
	bool registered;
	/* EHT_BELL_TRACE=1: requests served, seconds waiting for the previous request's slots, seconds
	 * gathering; printed when the engine is destroyed (where a step's time goes). */
	uint64_t st_reqs[LK_AUTO_NCLASS], st_rows[LK_AUTO_NCLASS]; /* per batch-size class (LK_AUTO_CLASS) */
	double st_wait_s[LK_AUTO_NCLASS], st_gather_s[LK_AUTO_NCLASS];
	bool trace;          /* EHT_BELL_TRACE: the kernel also stamps GPU times into gtrace */
	uint64_t *gtrace;    /* pinned, mapped: start, ring, chunk 0 ready, last chunk ready, end */
	CUdeviceptr d_gtrace;
	int gclass;          /* class of the launch gtrace belongs to */
	uint64_t g_n[LK_AUTO_NCLASS];
	double g_ring_s[LK_AUTO_NCLASS], g_first_s[LK_AUTO_NCLASS], g_span_s[LK_AUTO_NCLASS], g_tail_s[LK_AUTO_NCLASS];
};

struct eht_lookup {
	eht_table *t;
	struct eht_table_info ti;
	uint32_t rb, out_rb;
	int64_t lo, hi; /* absolute rows this process holds: [lo, hi) */
	int fmt, strategy, device;
	unsigned flags;
	bool gpu;          /* a GPU context and GPU buffers exist */
	bool kernels;      /* the lookup kernels are loaded */
	bool table_gpu;    /* the table is readable in place by that GPU */
	bool sortable;     /* local rows fit 32-bit keys (SORTED, HOST_SORT) */
	uint64_t max_batch;

	eht_pool *pool;
	unsigned nthreads;

	/* Host buffers, allocated once (pinned when gpu). */
	uint8_t *staging;
	size_t staging_rows;
	uint64_t *h_rows, *h_tmp, *h_uniq; /* max_batch, 2 x max_batch, max_batch */
	uint32_t *h_slot;                  /* max_batch */
	void *h_ids;                       /* max_batch x 8 (gpu only) */
	uint64_t *h_counters;              /* 2: dead, distinct (gpu only, written by DMA) */
	atomic_uint *chunk_done;
	uint64_t *chunk_dead;
	size_t max_chunks;

	/* GPU state. */
	struct eht_gpu_lookup g;
	CUstream side;
	CUevent ev_half[2], ev_ids, ev_stage, ev_fork, ev_join;
	bool half_used[2], ids_used, stage_used;
	CUdeviceptr d_ids, d_compact, d_uniq, d_slot, d_counters;
	struct eht_gpu_sort_bufs sb;
	uint64_t compact_rows;

	/* Last run and AUTO's calibration. */
	uint64_t last_dead_host;
	bool last_dead_gpu;
	bool last_dead_bell; /* the last run's count is in bell.h_dead */
	int last_strategy;
	/* AUTO, per place of the ids (host, GPU) and batch-size class (decode-sized, prefill-sized):
	 * which side takes the batch, or
	 * what fraction the GPU takes when both gather at once. Calibrated at create; the split
	 * fraction then follows each call's measured times, so both sides finish together. */
	struct lk_auto {
		int mode;          /* EHT_LOOKUP_DIRECT, EHT_LOOKUP_HOST, or EHT_LOOKUP_AUTO: split */
		double f;          /* GPU's share of a split batch */
		double f0;         /* the share calibration settled on */
		double t_cpu;      /* last split: seconds of the CPU part */
		size_t k, n;       /* last split: GPU ids, all ids (k == 0: nothing to learn from) */
		bool pending;      /* ev_t0/ev_t1 of the last split not read yet */
	} autos[2][LK_AUTO_NCLASS]; /* [ids in GPU memory][class] */
	CUevent ev_t0, ev_t1; /* timing events around the GPU part of a split */
	struct lk_bell bell;
	struct lk_hot *hot; /* GPU hot-row cache (lk_hot.c), NULL without a hot set */
	bool ran;           /* eht_lookup_run was called (the hot set is set before) */
	uint64_t dedup_min, dedup_min_host; /* batches this large or larger use the hot set and GPU dedup
					     * (ids in GPU memory or captured; host ids read now) */
	/* One eht_lookup_run at a time: the per-call state above (chunk dead counts and flags, staging,
	 * last_dead_*) is the engine's, so threads sharing an engine take turns (their dead counts
	 * and DEAD_ERROR results are then each their own call's). */
	pthread_mutex_t run_mu;
};


/* One id (int32/int64 at index i) + off -> local row, or LK_DEAD. */
static inline uint64_t eht_lk_local(const void *ids, int id64, size_t i, int64_t off, int64_t lo, int64_t hi)
{
	int64_t v = id64 ? ((const int64_t *)ids)[i] : (int64_t)((const int32_t *)ids)[i];
	int64_t r = (int64_t)((uint64_t)v + (uint64_t)off);
	return (r >= lo && r < hi) ? (uint64_t)(r - lo) : LK_DEAD;
}

/* (a) Sorts and deduplicates rows[0..n) (local rows < 2^32, or LK_DEAD): uniq[0..*nu) ascending
 * distinct live rows, slot[p] = index into uniq or LK_SLOT_DEAD. tmp: 2n entries. Returns the number
 * of dead rows. n must be < 2^32. */
size_t eht_lk_sort_dedup(const uint64_t *rows, size_t n, uint64_t *tmp, uint64_t *uniq, uint32_t *slot,
			 size_t *nu);

/* (b) Gathers rows rows[0..n) into lk->staging by the pool (from the host pointer, or with the
 * table's read_rows: `rows` are then absolute rows, else local), and when dma_dst is not 0 sends each
 * finished run of chunks to dma_dst (same layout) on stream s. Returns 0 or the first error. */
int eht_lk_gather_stage(eht_lookup *lk, const uint64_t *rows, size_t n, CUdeviceptr dma_dst, CUstream s);

/* One piece (n <= min(max_batch, staging_rows)) of the sorted HOST path: ids -> local rows ->
 * (a) -> (b) -> (c) into out (GPU when out_dev, else host memory, expanded by the CPU). Adds the dead
 * ids to *dead. */
int eht_lk_host_sorted_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
			     bool out_dev, CUstream s, uint64_t *dead);

/* The HOST path in request order for n <= max_batch ids (no sort): rows copied (or dequantized)
 * straight into host out, or through staging halves into GPU out. Adds the dead ids to *dead. */
int eht_lk_host_direct_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
			     bool out_dev, CUstream s, uint64_t *dead);

/* Copies (or dequantizes into fmt) the rows of ids [begin, end) into dst (row `begin` at dst, rows
 * stride bytes apart), zeros for dead ids (counted into *dead); tiers without a host pointer read
 * through read_rows (raw only). Returns 0 or the read error. */
int eht_lk_gather_ids(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t begin, size_t end,
		      uint8_t *dst, size_t stride, int fmt, uint64_t *dead);
/* Chunk rows for an n-row job on this engine's pool. */
size_t eht_lk_chunk_for(const eht_lookup *lk, size_t n);

/* lk_cpu.c: the one CPU pool of the process, shared by every engine. Takes a reference (creating
 * the pool at the first: threads as asked, else EHT_THREADS, else budget (the server's thread budget
 * for this worker, eht_table_copy's pool_threads; 0: none), else the CPUs of NUMA node `node`
 * divided by the GPUs attached to it, less one for the thread that feeds it and one for the
 * process's own thread). */
int eht_lk_pool_get(unsigned threads, unsigned budget, int node, unsigned spin_us, eht_pool **out);
void eht_lk_pool_put(eht_pool *pool);

/* lk_bell.c: HOST (and the CPU share of AUTO) triggered by the stream itself: enqueues the ids copy
 * (ids_dev) and the stage-in kernel for ids[0..n) into GPU out on s; the process's poller thread
 * gathers when the kernel rings. Capturable. Dead ids go to lk->d_counters[0], and with publish_dead
 * (the run's only GPU work) from there to bell.h_dead when the kernel ends. */
int eht_lk_bell_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
		      CUdeviceptr out, CUstream s, bool capturing, bool publish_dead);
/* The same for the distinct rows of a dedup pass (lk_hot.c): uniq (u32 local rows) after the GPU's
 * share of the *ucount there are (both on the GPU; n bounds them) into compact (raw, same places). */
int eht_lk_bell_compact(eht_lookup *lk, CUdeviceptr uniq, CUdeviceptr ucount, float share, size_t n,
			CUdeviceptr compact, CUstream s, bool capturing, bool publish_dead);
/* Allocates the path's buffers (host memory without a GPU: the CPU emulation the tests drive) and
 * joins the poller. */
int eht_lk_bell_init(eht_lookup *lk);
/* The call's CPU part: picks request idx (an eager ring slot, or the captured request of this key)
 * and records what the CPU will read; then arm (before the kernel can ring). */
int eht_lk_bell_prepare(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			bool compact, bool capturing, unsigned *idx);
void eht_lk_bell_arm(eht_lookup *lk, unsigned idx);
/* Chunk rows and staging slots of an n-row request (the kernel's launch arguments). */
void eht_lk_bell_geom(const eht_lookup *lk, size_t n, uint32_t *chunk, uint32_t *nslots);
/* Leaves the poller and frees the path's buffers (after the GPU finished with them). */
void eht_lk_bell_fini(eht_lookup *lk);
/* The first error of a stream-triggered gather since the last call (then cleared), or 0. */
int eht_lk_bell_take_error(eht_lookup *lk);

/* lk_strategy.c: the strategies. One piece of a run: n <= max_batch ids into out. */
struct lk_piece {
	const void *ids;
	bool ids_dev;
	int id64;
	int64_t off;
	size_t n;
	void *out;
	bool out_dev, capture;
	CUstream s;
	uint64_t *dead; /* the CPU piece adds the dead ids it saw (the GPU piece counts on the GPU) */
	bool publish_dead;   /* GPU piece, the run's only one: may have its kernel publish the count */
	bool dead_published; /* ... and did (lk->bell.h_dead holds it once the stream passed) */
};
struct lk_strategy {
	int id;
	const char *name;
	bool gpu_table; /* reads the table in place on the GPU: GPU output, the table GPU-readable */
	bool capturable;
	/* Everything on the stream, no host synchronization (ids in GPU memory, captures); dead ids
	 * counted into lk->d_counters[0]. */
	int (*gpu_piece)(eht_lookup *lk, struct lk_piece *p);
	/* The calling thread reads host ids now (NULL: the GPU piece serves host ids too). */
	int (*cpu_piece)(eht_lookup *lk, struct lk_piece *p);
};
const struct lk_strategy *eht_lk_strategy(int id);
/* DIRECT or SORTED of one piece (host ids copied through pinned memory). */
int eht_lk_gpu_piece(eht_lookup *lk, int strategy, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
		     CUdeviceptr out, CUstream s);
/* HOST of one piece with host ids, by the calling thread (into GPU or host out). */
int eht_lk_host_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out, bool out_dev,
		      CUstream s, uint64_t *dead);

/* Ids of one piece as a device pointer: in place when on the GPU, else copied through pinned h_ids
 * into d_ids on s (not capturable). */
int eht_lk_piece_ids_dev(eht_lookup *lk, const void *ids, bool ids_dev, size_t isz, size_t n, CUstream s,
			 CUdeviceptr *dptr);

/* lk_hot.c: a GPU piece through GPU dedup and the hot-row cache (mark, the strategy's gather of the
 * distinct misses, expand); and freeing that state. */
int eht_lk_hot_piece(eht_lookup *lk, const struct lk_strategy *st, struct lk_piece *p);
void eht_lk_hot_free(eht_lookup *lk);
/* The dedup state alone (EHT_LOOKUP_GPU_DEDUP without a hot set). */
int eht_lk_dedup_init(eht_lookup *lk);
/* A step boundary of an eager run on s: a pending hot-set refresh is applied there. */
int eht_lk_hot_boundary(eht_lookup *lk, CUstream s);

/* lk_auto.c: AUTO's two pieces (the split between the GPU's in-place gather and the CPU pool, as
 * calibrated), its calibration at create, and the defaults before it. */
int eht_lk_auto_gpu(eht_lookup *lk, struct lk_piece *p);
int eht_lk_auto_cpu(eht_lookup *lk, struct lk_piece *p);
void eht_lk_auto_init(eht_lookup *lk);
void eht_lk_auto_calibrate(eht_lookup *lk);

/* The CPU reference of one weight: e4m3 byte w with ue8m0 scale s -> bf16 bits. */
uint16_t eht_lk_dequant1(uint8_t w, uint8_t s);

#endif
