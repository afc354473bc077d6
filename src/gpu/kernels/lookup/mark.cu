/* SPDX-License-Identifier: Apache-2.0 */
/* mark.cu: the mark pass of a deduplicating run: hot-set lookups, dedup of the misses into the
 * step's table, per-id codes for eht_lk_expand_codes, sampling for an adapting hot set. */
#include "rows.cuh"

/* ------------------------------------------------------------------------ hot-row cache */
/* Same index as src/table/hotset.h: keys (local rows, all ones where free), vals (slots), linear
 * probing from (key * 0x9E3779B97F4A7C15) >> shift; at most half full. */
__device__ __forceinline__ uint32_t hot_find(const unsigned long long *keys, const uint32_t *vals,
					     unsigned long long mask, int shift, unsigned long long loc)
{
	unsigned long long h = (loc * EHT_LK_HASH_MUL) >> shift;
	for (;; h = (h + 1) & mask) {
		unsigned long long k = keys[h];
		if (k == loc)
			return vals[h];
		if (k == ~0ull)
			return DEAD32;
	}
}

/* A step's codes (eht_lk_dedup_mark -> eht_lk_expand_codes): DEAD32 for a dead id, HOT | slot for a
 * hot-set hit, else the entry of the step's dedup table whose value is the row's place in the compact
 * rows. Entries are below 2^31 (the table has at most 2^31 entries), hot slots below 2^31 - 1. */
#define HOT EHT_LK_HOT

/* Mark pass of a deduplicating run (src/lookup/hot/hot.c): each live id is looked up in the hot set
 * (hkeys NULL: none), and a miss is inserted into the dedup table dkeys/dvals (local row -> index;
 * empty entries all ones, left empty again by eht_lk_expand_codes). The first inserter of a row takes
 * the next index (counters[1], zero before; one atomic per warp) and writes the row there in uniq;
 * code[p] gets what eht_lk_expand_codes needs. counters[0] += dead ids. Lanes of a warp walk the ids
 * together so the index can be taken by warp. With hits (an adapting hot set): every 16th position is a
 * sample: a hit counts into hits[slot], a miss's local row goes into the ring (ring_head counts). */
extern "C" __global__ void __launch_bounds__(EHT_LK_THREADS)
eht_lk_dedup_mark(const void *ids, int id64, long long off, unsigned long long n, long long lo, long long hi,
		  const unsigned long long *hkeys, const uint32_t *hvals, unsigned long long hmask, int hshift,
		  unsigned long long *dkeys, uint32_t *dvals, unsigned long long dmask, int dshift, uint32_t *uniq,
		  uint32_t *code, unsigned long long *counters, uint32_t *hits, unsigned long long *ring,
		  unsigned long long *ring_head, unsigned long long ring_mask)
{
	const int lane = threadIdx.x & (WARP - 1);
	const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
	unsigned dead = 0;
	for (unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x + (threadIdx.x & ~(WARP - 1));
	     base < n; base += stride) {
		const unsigned long long i = base + lane;
		bool won = false;
		unsigned long long loc = 0, h = 0;
		if (i < n) {
			uint32_t c;
			if (!to_local(load_id(ids, id64, i), off, lo, hi, &loc)) {
				c = DEAD32;
				dead++;
			} else if (hkeys && (c = hot_find(hkeys, hvals, hmask, hshift, loc)) != DEAD32) {
				if (hits && (i & 15) == 0)
					atomicAdd(&hits[c], 1u);
				c |= HOT;
			} else {
				if (hits && (i & 15) == 0)
					ring[atomicAdd(ring_head, 1ull) & ring_mask] = loc;
				for (h = (loc * EHT_LK_HASH_MUL) >> dshift;; h = (h + 1) & dmask) {
					unsigned long long old = atomicCAS(&dkeys[h], ~0ull, loc);
					if (old == ~0ull) {
						won = true;
						break;
					}
					if (old == loc)
						break;
				}
				c = (uint32_t)h;
			}
			code[i] = c;
		}
		const unsigned mask = eht_ballot32(won);
		if (mask) {
			unsigned long long first = 0;
			if (lane == __ffs(mask) - 1)
				first = atomicAdd(&counters[1], (unsigned long long)__popc(mask));
			first = eht_shfl32(first, __ffs(mask) - 1);
			if (won) {
				const uint32_t idx = (uint32_t)(first + __popc(mask & ((1u << lane) - 1)));
				dvals[h] = idx;
				uniq[idx] = (uint32_t)loc;
			}
		}
	}
	for (int o = WARP / 2; o; o >>= 1)
		dead += eht_shfl_down32(dead, o);
	if (lane == 0 && dead)
		atomicAdd(&counters[0], (unsigned long long)dead);
}
