/* SPDX-License-Identifier: Apache-2.0 */
/* stage.h: the CPU pool's gather into pinned staging (stage.c), for pieces of host ids read by the
 * calling thread: the pool gathers rows into staging chunk by chunk and each finished run of chunks
 * goes to the GPU while later ones are still being gathered. The state is made by the strategy that
 * uses it (HOST's init) and kept in lk->stage. */
#ifndef EHT_LOOKUP_GATHER_STAGE_H
#define EHT_LOOKUP_GATHER_STAGE_H

#include "lookup/core.h"

struct lk_stage {
	uint8_t *staging;                  /* lk->staging_rows rows (pinned with a GPU) */
	uint64_t *h_rows, *h_tmp, *h_uniq; /* max_batch, 2 x max_batch, max_batch */
	uint32_t *h_slot;                  /* max_batch */
	atomic_uint *chunk_done;           /* max_chunks each: a job's chunks done, and their dead ids */
	uint64_t *chunk_dead;
	eht_event ev_half[2], ev_stage;    /* the last copies out of each staging half, of the whole */
	bool half_used[2], stage_used;
};

/* The CPU-side geometry of an engine (eht_lookup_create): staging rows (staging_bytes, else one
 * max_batch of rows up to 256 MiB; at least 64 rows, and two slots of the widest chunk a
 * stream-triggered request can need) and the chunks of its largest piece at the smallest chunk. */
void eht_lk_stage_geom(uint64_t max_batch, uint32_t rb, uint64_t staging_bytes, size_t *staging_rows,
		       size_t *max_chunks);
/* lk->stage: staging and the per-piece host buffers (pinned with a GPU), the staging halves' events
 * and the GPU scratch (the sorted path and BF16 halves expand from it); and freeing it (NULL: none). */
int eht_lk_stage_init(eht_lookup *lk);
void eht_lk_stage_fini(eht_lookup *lk);

/* (a) Sorts and deduplicates rows[0..n) (local rows < 2^32, or LK_DEAD): uniq[0..*nu) ascending
 * distinct live rows, slot[p] = index into uniq or LK_SLOT_DEAD. tmp: 2n entries. Returns the number
 * of dead rows. n must be < 2^32. */
size_t eht_lk_sort_dedup(const uint64_t *rows, size_t n, uint64_t *tmp, uint64_t *uniq, uint32_t *slot,
			 size_t *nu);
/* (b) Gathers rows rows[0..n) into staging by the pool (from the host pointer, or with the table's
 * read_rows: `rows` are then absolute rows, else local), and when dma_dst is not 0 sends each
 * finished run of chunks to dma_dst (same layout) on stream s. Returns 0 or the first error. */
int eht_lk_gather_stage(eht_lookup *lk, const uint64_t *rows, size_t n, eht_dptr dma_dst, eht_stream s);

/* One piece (n <= min(max_batch, staging_rows)) the sorted way: ids -> local rows -> (a) -> (b) ->
 * (c) eht_gpu_expand into out (GPU when out_dev, else host memory, expanded by the CPU). Adds the
 * dead ids to *dead. */
int eht_lk_stage_sorted(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
			bool out_dev, eht_stream s, uint64_t *dead);
/* n <= max_batch ids in request order (no sort): rows copied (or dequantized) straight into host
 * out, or through staging halves into GPU out. Adds the dead ids to *dead. */
int eht_lk_stage_ids(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
		     bool out_dev, eht_stream s, uint64_t *dead);

#endif
