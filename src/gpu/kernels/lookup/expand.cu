/* SPDX-License-Identifier: Apache-2.0 */
/* expand.cu: rows from the compact buffer (or the hot set) written out in request order, in the
 * output format: after SORTED, HOST and the disk tier (slots), after a deduplicating run (codes). */
#include "rows.cuh"

/* ------------------------------------------------------------------------------ expand */
/* out[p] = compact[slot[p]] (slot NULL: compact[p]; slot DEAD32: zeros), in the output format; with
 * dslot, out[dslot[p]] instead (a hot-set refresh scattering its new rows into their slots). */
__device__ __forceinline__ void expand_rows(const uint32_t *slot, unsigned long long n, const uint8_t *compact,
					    uint32_t rb, uint8_t *out, int fmt, int vec, const uint32_t *dslot)
{
	const uint32_t ob = out_bytes(rb, fmt);
	for_rows(n, rb, fmt, vec,
		 [&](unsigned long long p, const uint8_t **src, uint8_t **dst) {
			 uint32_t s = slot ? slot[p] : (uint32_t)p;
			 *src = s == DEAD32 ? NULL : compact + (unsigned long long)s * rb;
			 *dst = out + (dslot ? (unsigned long long)dslot[p] : p) * ob;
		 },
		 no_after);
}

extern "C" __global__ void eht_lk_expand(const uint32_t *slot, unsigned long long n, const uint8_t *compact,
					 uint32_t rb, uint8_t *out, int fmt, int vec, const uint32_t *dslot)
{
	expand_rows(slot, n, compact, rb, out, fmt, vec, dslot);
}

/* The same in blocks of EHT_LK_WIDE_THREADS, for launches capped at sm_cap blocks (gpu_lookup.c). */
extern "C" __global__ void __launch_bounds__(EHT_LK_WIDE_THREADS)
	eht_lk_expand_wide(const uint32_t *slot, unsigned long long n, const uint8_t *compact, uint32_t rb, uint8_t *out,
			   int fmt, int vec, const uint32_t *dslot)
{
	expand_rows(slot, n, compact, rb, out, fmt, vec, dslot);
}

/* eht_lk_expand once *done is 1 (a split request's wait and dequant in one kernel: lookup/split.h).
 * Thread 0 of each block polls the word, which the CPU's push stream sets once its copies of the
 * rows are in; the fence after the poll makes it an acquire, so the rows read after it are the
 * copied ones. */
extern "C" __global__ void eht_lk_expand_after(const unsigned *done, unsigned long long n, const uint8_t *compact,
					       uint32_t rb, uint8_t *out, int fmt, int vec)
{
	if (threadIdx.x == 0) {
		while (*(const volatile unsigned *)done != 1u)
			eht_nanosleep(100);
		__threadfence();
	}
	__syncthreads();
	expand_rows(NULL, n, compact, rb, out, fmt, vec, NULL);
}

/* out[p] in fmt from code[p] (eht_lk_dedup_mark): zeros, the hot row, or the compact row of its dedup
 * entry, whose key is then emptied for the next step (every entry used has a position here; values
 * are only read, so a later reader of the same entry still finds its index). */
extern "C" __global__ void eht_lk_expand_codes(const uint32_t *code, unsigned long long n, const uint8_t *hot_rows,
					       unsigned long long *dkeys, const uint32_t *dvals,
					       const uint8_t *compact, uint32_t rb, uint8_t *out, int fmt, int vec)
{
	const int lane = threadIdx.x & (WARP - 1);
	const uint32_t ob = out_bytes(rb, fmt);
	for_rows(n, rb, fmt, vec,
		 [&](unsigned long long p, const uint8_t **src, uint8_t **dst) {
			 const uint32_t c = code[p];
			 if (c == DEAD32)
				 *src = NULL;
			 else if (c & EHT_LK_HOT)
				 *src = hot_rows + (unsigned long long)(c & ~EHT_LK_HOT) * rb;
			 else
				 *src = compact + (unsigned long long)dvals[c] * rb;
			 *dst = out + p * ob;
		 },
		 [&](unsigned long long first, int nrows) {
			 if (lane < nrows) {
				 const uint32_t c = code[first + lane];
				 if (c != DEAD32 && !(c & EHT_LK_HOT))
					 dkeys[c] = ~0ull;
			 }
		 });
}
