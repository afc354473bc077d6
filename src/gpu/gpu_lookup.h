/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_lookup.h: launch wrappers for the lookup kernels (src/gpu/kernels/lookup/), on the device layer.
 * Every wrapper enqueues on `s` without host synchronization (so all of them can be graph-captured)
 * and returns 0 or the driver's error as -errno. */
#ifndef EHT_GPU_GPU_LOOKUP_H
#define EHT_GPU_GPU_LOOKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu/dev.h"
#include "gpu/kernels/idview.h"
#include "gpu/kernels/lookup_const.h"

/* Largest batch eht_gpu_sort_dedup sorts inside one block (one launch). */
#define EHT_GPU_SMALL_TILE ((unsigned)EHT_LK_SMALL_TILE)
/* Tile of the multi-block radix passes. */
#define EHT_GPU_TILE ((unsigned)EHT_LK_TILE)
#define EHT_GPU_RADIX ((unsigned)EHT_LK_RADIX)

struct eht_gpu_lookup {
	eht_module mod;
	eht_kernel direct, direct_split, expand, gather_uniq, gather_uniq_split, sort_small, keys, hist, scan, scatter, dedup_count,
		dedup_assign, stage_in, ring, dedup_mark, expand_codes, expand_wide, expand_after;
	int sms;
	unsigned sm_cap; /* 0: none; else no launch has more than sm_cap blocks (set after load) */
	bool urgent;     /* every launch EHT_LAUNCH_URGENT (gpu/dev.h; set after load) */
};

/* Loads the module on the current context of `device`. Returns 0, -ENOTSUP (no kernels built), or a
 * driver error. */
int eht_gpu_lookup_load(int device, struct eht_gpu_lookup *g);
void eht_gpu_lookup_unload(struct eht_gpu_lookup *g);

/* Ids -> local rows: an id (int32/int64) plus off is live when in [lo, hi). */
struct eht_gpu_ids {
	eht_dptr ids;
	int id64;
	int64_t off, lo, hi;
};

/* Widest load (16, 8, 4 or 1 bytes) that divides rb and the given addresses. */
int eht_gpu_vec(uint32_t rb, uint64_t a, uint64_t b);

/* A table as the in-place kernels read it: packed rows of rb bytes (local row r at base + r * rb), or,
 * with scales not 0, vLLM's split layout: row r's weights at base + r * wb, its scales at
 * scales + r * (rb - wb); the rows they make are the packed ones, bit for bit. */
struct eht_gpu_table {
	eht_dptr base, scales;
	uint32_t rb, wb;
};

/* Whether the kernels dequantize t's rows in place: packed rows, or split rows of 256 weight and 8
 * scale bytes with both arrays 8-byte aligned (they read 8-byte words of each). */
static inline bool eht_gpu_table_bf16_ok(const struct eht_gpu_table *t)
{
	return !t->scales || (t->wb == 256 && t->rb - t->wb == 8 && t->base % 8 == 0 && t->scales % 8 == 0);
}

/* DIRECT: out[i] = row(ids[i]) in place from t, zero for dead; counters[0] += dead ids (u64). fmt:
 * enum eht_lookup_format (bf16 from a split table: wb 256, both arrays 8-byte aligned, else -EINVAL).
 * view (not NULL): ids are its flat ids, read from the engine's [T, H] ids on the way. h_dead (not 0,
 * host-mapped): the launch publishes its dead count there itself, through counters[2..3] (4 u64,
 * zero between launches: the kernel leaves them so), and leaves counters[0] alone. */
int eht_gpu_direct(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_ids *ids, uint64_t n,
		   const struct eht_gpu_table *t, eht_dptr out, int fmt, eht_dptr counters,
		   const struct eht_lk_idview *view, eht_dptr h_dead);

/* Expand: out[p] = compact[slot[p]] (slot 0: identity; slot UINT32_MAX: zero row) for p < n. */
int eht_gpu_expand(const struct eht_gpu_lookup *g, eht_stream s, eht_dptr slot, uint64_t n,
		   eht_dptr compact, uint32_t rb, eht_dptr out, int fmt);

/* eht_gpu_expand of n rows (slot 0) once the GPU word at done is 1, on every SM whatever the engine's
 * SM cap (at most 4 blocks an SM): a split request's wait and dequant in one kernel (lookup/split.h). */
int eht_gpu_expand_after(const struct eht_gpu_lookup *g, eht_stream s, eht_dptr done, uint64_t n, eht_dptr compact,
			 uint32_t rb, eht_dptr out, int fmt);

/* Scatter: rows[dslot[i]] = src[i] for i < n, raw (a hot-set refresh's new rows into their slots). */
int eht_gpu_scatter_rows(const struct eht_gpu_lookup *g, eht_stream s, eht_dptr dslot, uint64_t n, eht_dptr src,
			 uint32_t rb, eht_dptr rows);

/* Device buffers of the sort; sizes for max_n ids from eht_gpu_sort_sizes. */
struct eht_gpu_sort_bufs {
	eht_dptr keys[2], vals[2]; /* u32 x max_n each */
	eht_dptr hist;             /* u32 x RADIX x tiles(max_n) */
	eht_dptr heads;            /* u32 x tiles(max_n) + 1 (the last holds the total) */
};
/* Bytes of the four kinds of buffer above for max_n ids. */
void eht_gpu_sort_sizes(uint64_t max_n, uint64_t *keys_bytes, uint64_t *hist_bytes, uint64_t *heads_bytes);

/* Sort + dedup of n ids (n <= max_n of bufs; n < 2^32): uniq[0..u) ascending distinct live local rows,
 * slot[p] = index into uniq or UINT32_MAX for dead, counters[0] += dead, counters[1] = u.
 * dead_key = hi - lo (must be < UINT32_MAX). */
int eht_gpu_sort_dedup(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_ids *ids, uint32_t n,
		       const struct eht_gpu_sort_bufs *b, eht_dptr uniq, eht_dptr slot,
		       eht_dptr counters);

/* compact[u] = raw row uniq[u] of t for u < counters[1] (read on the GPU), or only for the GPU's share of
 * a split (the first counters[1] x share; share >= 1: all); max_n bounds the grid. */
int eht_gpu_gather_uniq(const struct eht_gpu_lookup *g, eht_stream s, eht_dptr uniq, eht_dptr counters,
			float share, uint64_t max_n, const struct eht_gpu_table *t, eht_dptr compact);

/* The GPU half of a stream-triggered CPU gather (kernel eht_lk_stage_in): rings *bell (host-mapped),
 * then for each chunk c of n rows waits for ready[c % nslots] == c + 1, copies that staging slot into
 * out (raw rows), adds chunk_dead[c] to counters[0] and frees the slot. staging, ready, chunk_dead and bell
 * are device addresses of host-mapped pinned memory; sync: two device words, zero. See the kernel. */
struct eht_gpu_stage_in {
	eht_dptr ids, h_ids;  /* ids copied by the kernel into host-mapped h_ids first (0: none) */
	uint64_t id_bytes;       /* multiple of 4 */
	eht_dptr staging, ready, chunk_dead, bell, sync;
	eht_dptr h_dead;      /* host-mapped: counters[0] when the kernel ends (0: none) */
	eht_dptr trace;       /* host-mapped: 5 GPU timestamps of the launch (0: none) */
	/* A compact request (ucount not 0): ids are the u32 distinct rows of eht_gpu_dedup_mark, this
	 * launch takes those after the GPU's share (see eht_gpu_gather_uniq) of *ucount, n bounds it;
	 * out is the compact buffer (raw); their number goes to h_count (host-mapped) for the CPU. */
	eht_dptr ucount, h_count;
	float share;
	uint32_t chunk, nslots, tag;
	/* GPU memory of nslots words, zero between launches: one relay block copies the ready words
	 * there and the others poll it instead of host memory (0, or more than EHT_LK_RELAY_SLOTS slots:
	 * every block polls host memory). */
	eht_dptr mirror;
	/* EHT_LOOKUP_BF16: each chunk's raw rows, once copied into out, are dequantized into xout
	 * (512-byte rows) by the block that copied them; out is then scratch. 0 (raw): out only. */
	int fmt;
	eht_dptr xout;
	/* GPU memory of nslots words, zero between launches: a chunk larger than one block's round trip
	 * of loads is cut into parts copied by several blocks, and the last to finish frees its slot
	 * (0: every chunk one block's). */
	eht_dptr parts_done;
	/* An engine's [T, H] ids (view.ids not 0): the kernel writes their flat ids into h_ids instead of
	 * copying ids (id_bytes: the flat ids' bytes). */
	struct eht_lk_idview view;
};
int eht_gpu_stage_in(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_stage_in *a, uint64_t n,
		     uint32_t rb, eht_dptr out, eht_dptr counters);

/* The doorbell of a pushed background request (kernel eht_lk_ring; src/lookup/gather/bell/bg.c):
 * copies id_words u32 words of ids into h_ids (or, with ucount, the first min(*ucount, n) u32 distinct
 * rows, their number to h_count), *dead to h_dead (when both are set), clears *done, then rings *bell.
 * h_ids, h_count, h_dead, done and bell are device addresses of host-mapped memory; sync: one device
 * word, zero between launches. */
struct eht_gpu_ring {
	eht_dptr ids, h_ids;
	uint64_t id_words;
	eht_dptr ucount, h_count;
	uint64_t n;
	eht_dptr dead, h_dead, done, bell, sync;
	struct eht_lk_idview view; /* view.ids not 0: its flat ids (id_words words) instead of ids' */
};
int eht_gpu_ring(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_ring *a);

/* A deduplicating run (src/lookup/hot/hot.c): the hot set's index keys/vals (2^bits entries,
 * src/table/hotset.h; keys 0: no hot set) and rows (raw, slot order); the step's dedup table
 * dkeys/dvals (2^dbits entries, keys all ones between steps); per-id codes and the distinct rows uniq
 * (u32 x max_batch each). */
struct eht_gpu_hot {
	eht_dptr keys, vals, rows;
	uint32_t bits;
	eht_dptr dkeys, dvals, uniq, code;
	uint32_t dbits;
	/* Sampling for an adapting hot set (hits 0: off): u32 hit count per slot, a ring of 2^k sampled
	 * missed local rows and its u64 head. */
	eht_dptr hits, ring, ring_head;
	uint64_t ring_mask;
};
/* Mark: ids that are hot-set hits, dead, or misses; the distinct misses into uniq[0..counters[1])
 * (counters[1] zero before), counters[0] += dead. Local rows must fit 31 bits. */
int eht_gpu_dedup_mark(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_ids *ids, uint64_t n,
		       const struct eht_gpu_hot *h, eht_dptr counters);
/* Expand: out[p] in fmt from the hot rows, the compact rows (distinct misses in uniq order) or zeros,
 * emptying the dedup table for the next run. */
int eht_gpu_expand_codes(const struct eht_gpu_lookup *g, eht_stream s, const struct eht_gpu_hot *h, uint64_t n,
			 eht_dptr compact, uint32_t rb, eht_dptr out, int fmt);

#endif
