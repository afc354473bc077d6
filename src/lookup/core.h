/* SPDX-License-Identifier: Apache-2.0 */
/* core.h: the lookup engine's core, private to src/lookup: the engine's struct (the table's geometry,
 * the CPU pool, the GPU kernels and parts, the mechanisms' and the strategies' states), one piece of
 * a run, and the strategy ops (strategy.c holds the table). docs/ARCHITECTURE.md draws the rooms:
 *
 *   layer.c (to come), lookup_engram.c  engine-facing objects on the public eht_lookup_* calls
 *   lookup.c      eht_lookup_create / _run / _destroy: geometry, pool, the chosen strategy's init, the
 *                 dispatch of a run's pieces through the ops; dequant_gpu.c: eht_lookup_dequant
 *   strategy.c    the strategy table: ops (defaults filled once), checks, the public enumeration
 *   strategy/     the policies: which rows go which way (direct.c, sorted.c, host.c, auto.c)
 *   hot/          the GPU hot-row cache and dedup (hot.c), its refresh and adaptation
 *   gather/       the mechanisms the policies use, never the other way: the GPU parts (gather.c),
 *                 the CPU pool (cpu_pool.c) copying rows (rows.c, dequant*.c) into pinned staging
 *                 (stage.c), the stream-triggered doorbell (bell/), the in-place GPU gathers
 *                 (inplace.c, distinct.c)
 * Tiers plug in only through struct eht_table_ops; the hot-set format and index are src/table's. */
#ifndef EHT_LOOKUP_CORE_H
#define EHT_LOOKUP_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/dev.h"
#include "gpu/gpu_lookup.h"
#include "eht.h"
#include "table/table_impl.h"
#include "util/pool.h"

/* AUTO's class of an n-id batch: 0 tiny (a rank's decode of a few tokens: the CPU's round trip is
 * most of it), 1 small (a few requests: the in-place gather's latency can win), 2 decode-sized, 3
 * prefill-sized; each calibrated at its own size (strategy/auto.c; the doorbell's trace counts per
 * class too). */
#define LK_AUTO_NCLASS 4
#define LK_AUTO_CLASS(n) ((n) >= 32768 ? 3 : (n) >= 4096 ? 2 : (n) >= 512 ? 1 : 0)

/* Smallest batch that goes through GPU dedup and the hot set (hot/hot.c); EHT_LOOKUP_DEDUP_MIN. Below it
 * (AUTO's small class) the two extra passes cost more than they save: on the H200 with real text and
 * a 1 Mi-row hot set, 256 / 1,024 ids took 28 / 35 us through them against 19 / 27 us without, while
 * 4,096 / 6,144 / 16,384 ids took 94 / 112 / 198 us against 101 / 124 / 260 us (graph replays). */
#define LK_DEDUP_MIN 4096
/* The same with ids in host memory, read now: below it the CPU piece (no copy of the ids to the GPU,
 * no kernels) is faster: 6,144 ids took 114 us through the hot set against 78-82 us without. */
#define LK_DEDUP_MIN_HOST_IDS 32768
/* Smallest eager batch of host ids (GPU output, HOST or AUTO) that goes through the stream-triggered
 * path (gather/bell/: the ids copied into the request's pinned buffer, the stage-in kernel copying
 * each chunk as the pool finishes it) instead of the calling thread's staging jobs and DMA calls.
 * On an H100 (48 GiB, HOST, medians of three alternated runs) it took 0.16-0.17 ms at 16,384 ids
 * against 0.18-0.24, 0.47-0.52 at 65,536 against 0.88-1.07; at 6,144 0.09-0.11 against 0.08-0.09. */
#define LK_BELL_HOST_IDS_MIN 16384

#define LK_DEAD UINT64_MAX
#define LK_SLOT_DEAD UINT32_MAX

/* Strategy ids are 0 .. eht_lookup_strategy_count() - 1 (enum eht_lookup_strategy; strategy.c's
 * table), at most LK_MAX_STRATEGIES. */
#define LK_MAX_STRATEGIES 16

struct lk_strategy;
struct lk_stage; /* gather/stage.h */
struct lk_bell;  /* gather/bell/requests.h */
struct lk_hot;   /* hot/hot.c */

struct eht_lookup {
	eht_table *t;
	struct eht_table_info ti;
	uint32_t rb, out_rb;
	int64_t lo, hi; /* absolute rows this process holds: [lo, hi) */
	int fmt, device;
	unsigned flags;
	bool gpu;          /* a GPU context and GPU buffers exist */
	bool background;   /* EHT_LOOKUP_BACKGROUND with the driver's stream memory operations */
	bool kernels;      /* the lookup kernels are loaded */
	bool table_gpu;    /* the table is readable in place by that GPU (as tab says) */
	struct eht_gpu_table tab; /* how the in-place kernels read it: packed rows, or vLLM's split layout */
	bool sortable;     /* local rows fit 32-bit keys (SORTED, HOST_SORT) */
	bool in_memory;    /* rows in memory (a host pointer, or a split table's two arrays): the CPU reads
			    * them without storage reads (the disk tier's do) */
	uint64_t max_batch;
	size_t staging_rows, max_chunks; /* CPU-side geometry (gather/stage.c): staging rows, chunks of
					  * the largest piece */
	struct eht_lookup_opts opts;     /* as given (defaults filled): each strategy's init reads its own */

	eht_pool *pool;
	unsigned nthreads;

	/* Strategies: the engine's default, and each one's state once its init ran (strategy.c). */
	const struct lk_strategy *st;
	bool ready[LK_MAX_STRATEGIES];
	void *state[LK_MAX_STRATEGIES];

	/* The gather mechanisms a strategy made (NULL until then): the CPU pool's gather into pinned
	 * staging (gather/stage.c) and the stream-triggered doorbell (gather/bell/; with a GPU and the
	 * kernels, or the tests' CPU emulation). */
	struct lk_stage *stage;
	struct lk_bell *bell;

	/* GPU core: the kernels and the counters every GPU piece writes. */
	struct eht_gpu_lookup g;
	uint64_t *h_dead; /* pinned, mapped: a GPU-counted run's dead ids (copied, or written by a kernel) */
	/* 4 u64 (dead ids, distinct rows of the piece; a publishing in-place gather's two words,
	 * gpu_lookup.h); h_dead's address */
	eht_dptr d_counters, d_h_dead;
	bool counters_zeroed; /* d_counters zeroed on the stream for this run (eht_lk_counters_zero) */
	/* GPU parts (gather/gather.c), each made at its first request and kept. */
	struct lk_ids {    /* host ids of a GPU piece pass through pinned h_ids into d_ids (ev: the copy) */
		void *h_ids;
		bool used;
		eht_dptr d_ids; eht_event ev;
	} ids;
	struct lk_scratch { /* distinct rows (compact) and slots of a sorted / deduplicated piece */
		eht_dptr d_compact, d_slot;
		uint64_t compact_rows;
	} scr;
	struct lk_fork {   /* a side stream for a piece split between two gatherers */
		eht_stream side; eht_event ev_fork, ev_join;
	} fork;

	/* The last run's dead count (where it is kept) and strategy (lookup.c: run_finish). */
	struct lk_last {
		uint64_t dead_host; /* counted by the CPU (dead_gpu false) */
		bool dead_gpu;      /* counted on the GPU: *h_dead once the stream passed the run */
		int strategy;
	} last;
	struct lk_hot *hot; /* GPU hot-row cache and dedup (hot/hot.c), NULL without either */
	bool ran;           /* eht_lookup_run was called (the hot set is set before) */
	bool hot_default;   /* the hot set is the table's (eht_lookup_set_hotset may still replace it) */
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

/* ------------------------------------------------------------------- strategies (strategy.c) */
/* One piece of a run: n <= max_batch ids into out. */
struct lk_piece {
	const struct lk_strategy *st;
	const void *ids;
	bool ids_dev;
	int id64;
	int64_t off;
	size_t n;
	void *out;
	bool out_dev, capture;
	eht_stream s;
	uint64_t *dead; /* the CPU piece adds the dead ids it saw (the GPU piece counts on the GPU) */
	bool publish_dead;   /* GPU piece, the run's only one: may have its kernel publish the count */
	bool dead_published; /* ... and did (lk->h_dead holds it once the stream passed) */
	/* The run's ids as an engine's [T, H] view (view.h; ids: where its flat ids go): the doorbell
	 * kernels read it; any other path calls eht_lk_piece_flatten first. NULL: ids are flat. */
	const struct eht_lk_view *view;
};

/* The distinct misses of a dedup pass (hot/hot.c), all on the GPU: uniq (u32 local rows, as many as
 * ucount says; the piece's n bounds them) go to compact (raw rows, the same places). */
struct lk_distinct {
	eht_dptr uniq, ucount, compact;
};

/* What a run is, as eht_lookup_run found it (the strategy's resolve and check read it). */
struct lk_call {
	bool ids_dev, out_dev, capture;
};

/* Capabilities (lk_strategy.caps). */
#define LK_GPU_TABLE 0x1u  /* reads the table in place on the GPU: GPU output, the table GPU-readable, kernels */
#define LK_SORTABLE 0x2u   /* needs local rows < 2^32 - 1 */
#define LK_CAPTURABLE 0x4u /* a CUDA graph can hold its GPU piece */
#define LK_GPU_HOST_IDS 0x8u /* no CPU piece: the GPU piece reads host ids too (set at registration) */
#define LK_VIEW_IDS 0x10u /* its GPU piece takes a view (lk_piece.view) or flattens it itself */

/* A strategy's ops: a policy over the gather mechanisms (gather/). Every op a strategy leaves NULL
 * is filled once, at registration, with the default below, so callers never test one. */
struct lk_strategy {
	int id;
	const char *name;
	unsigned caps;
	/* Its state (lk->state[id]) and the mechanisms it uses; composes other strategies through
	 * eht_lk_strategy_ready. lk->opts holds the engine's options (a mode for a strategy goes there).
	 * Default: nothing to allocate. */
	int (*init)(eht_lookup *lk);
	void (*fini)(eht_lookup *lk); /* default: nothing */
	/* After every init, before a hot set (AUTO times itself here). Default: nothing. */
	void (*calibrate)(eht_lookup *lk);
	/* The strategy that takes this call (AUTO: HOST where it cannot split). Default: self. */
	const struct lk_strategy *(*resolve)(eht_lookup *lk, const struct lk_strategy *self, const struct lk_call *c);
	/* Everything on the stream, no host synchronization (ids in GPU memory, captures); dead ids
	 * counted into lk->d_counters[0]. */
	int (*gpu_piece)(eht_lookup *lk, struct lk_piece *p);
	/* The calling thread reads host ids now. Default (LK_GPU_HOST_IDS): the GPU piece. */
	int (*cpu_piece)(eht_lookup *lk, struct lk_piece *p);
	/* Gathers the distinct misses of p's dedup pass (hot/hot.c) on p's stream: in place on the GPU,
	 * by the CPU pool through the doorbell, or both at once (gather/distinct.c); sets
	 * p->dead_published where the doorbell publishes the dead count. Default: in place with
	 * LK_GPU_TABLE, else the CPU pool. */
	int (*gather_distinct)(eht_lookup *lk, struct lk_piece *p, const struct lk_distinct *d);
};
/* The strategy of id (NULL: no such id). */
const struct lk_strategy *eht_lk_strategy(int id);
/* Runs st's init once per engine (and what it composes). Refused under capture (-EOPNOTSUPP: its
 * buffers cannot be made there). */
int eht_lk_strategy_ready(eht_lookup *lk, const struct lk_strategy *st, bool capturing);
/* st's fini for every strategy whose init ran. */
void eht_lk_strategies_fini(eht_lookup *lk);
/* Whether st can serve this engine at all (create: -ENODEV / -EINVAL naming what is missing) and
 * this call (run: -EINVAL). */
int eht_lk_check_create(const eht_lookup *lk, const struct lk_strategy *st);
int eht_lk_check_call(const eht_lookup *lk, const struct lk_strategy *st, const struct lk_call *c);

#endif
