/* SPDX-License-Identifier: Apache-2.0 */
/* rows.h: copying rows the CPU way (rows.c): ids to rows into a buffer (memcpy, or the CPU's bf16
 * dequant, from the table's host pointer with software prefetch, or through the tier's read_rows),
 * and the gather's knobs: chunk sizes and the prefetch distance. Used by every CPU-side mechanism
 * (the staging's pool jobs, the doorbell's chunks and groups) and the hot set's loads. */
#ifndef EHT_LOOKUP_GATHER_ROWS_H
#define EHT_LOOKUP_GATHER_ROWS_H

#include <string.h>

#include "lookup/core.h"
#include "util/prefetch.h"

/* Rows a CPU thread reads ahead with software prefetch: enough to overlap a few DRAM misses, few
 * enough not to evict rows still being copied (8 measured a little faster than none). */
#define LK_PREFETCH 8
#define LK_CHUNK_MIN 16
#define LK_CHUNK_MAX 1024
/* The largest chunk unless EHT_LOOKUP_CHUNK_MAX says otherwise. */
#define LK_CHUNK_DEFAULT_MAX 256

/* Re-reads the gather's knobs (EHT_LOOKUP_PREFETCH, EHT_LOOKUP_CHUNK_MAX) from the environment: for
 * a bench that sweeps them between runs, never while a lookup runs. */
void eht_lk_knobs_reload(void);
/* The rows the pool's threads prefetch ahead (EHT_LOOKUP_PREFETCH, clamped): for benches that copy
 * rows the pool's way. */
unsigned eht_lk_prefetch_rows(void);
/* Chunk rows for an n-row job on this engine's pool. */
size_t eht_lk_chunk_for(const eht_lookup *lk, size_t n);

/* Copies (or dequantizes into fmt) the rows of ids [begin, end) into dst (row `begin` at dst, rows
 * stride bytes apart), zeros for dead ids (counted into *dead); tiers without a host pointer read
 * through read_rows (raw only). Returns 0 or the read error. */
int eht_lk_gather_ids(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t begin, size_t end,
		      uint8_t *dst, size_t stride, int fmt, uint64_t *dead);

static inline void eht_lk_prefetch(const uint8_t *p, uint32_t rb) { eht_prefetch_row(p, rb); }

/* One row of src (NULL: a dead id's zeros) into dst in fmt. */
static inline void eht_lk_put_row(uint8_t *dst, const uint8_t *src, uint32_t rb, int fmt)
{
	if (!src)
		memset(dst, 0, fmt == EHT_LOOKUP_BF16 ? 2 * EHT_ENGRAM_DIM : rb);
	else if (fmt == EHT_LOOKUP_BF16)
		eht_engram_dequant_row(src, (uint16_t *)(void *)dst);
	else
		memcpy(dst, src, rb);
}

#endif
