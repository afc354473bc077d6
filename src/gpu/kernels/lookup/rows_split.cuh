/* SPDX-License-Identifier: Apache-2.0 */
/* rows_split.cuh: the warp row movers of rows.cuh over vLLM's split layout: a row's weights at
 * W + loc * wb and its scales at S + loc * sb (two arrays) instead of one packed row at table + loc * rb.
 * Separate functions, not a parameter of the packed ones, so the packed kernels' code stays as it is. */
#ifndef EHT_GPU_KERNELS_LOOKUP_ROWS_SPLIT_CUH
#define EHT_GPU_KERNELS_LOOKUP_ROWS_SPLIT_CUH

#include "rows.cuh"

/* A position without a row (dead id, or past the group's end): a zero row. */
#define NO_ROW (~0ull)

/* warp_copy over split rows: the packed row of wb + sb bytes, word w of row r from the weights
 * (w < wb / V) or the scales; V divides wb, sb and both arrays' addresses. */
template <typename V>
__device__ __forceinline__ void warp_copy_split(const uint8_t *W, const uint8_t *S, uint32_t wb, uint32_t sb,
						const unsigned long long *loc, uint8_t *const *dst, int nrows, int lane)
{
	const uint32_t Ww = wb / sizeof(V), Rw = Ww + sb / sizeof(V), T = Rw * (uint32_t)nrows;
	const int U = 4;
	for (uint32_t base = 0; base < T; base += WARP * U) {
		V v[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			uint32_t j = base + u * WARP + lane;
			if (j < T) {
				uint32_t r = j / Rw, w = j - r * Rw;
				if (loc[r] == NO_ROW)
					memset(&v[u], 0, sizeof(V));
				else if (w < Ww)
					v[u] = reinterpret_cast<const V *>(W + loc[r] * wb)[w];
				else
					v[u] = reinterpret_cast<const V *>(S + loc[r] * sb)[w - Ww];
			}
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			uint32_t j = base + u * WARP + lane;
			if (j < T) {
				uint32_t r = j / Rw, w = j - r * Rw;
				reinterpret_cast<V *>(dst[r])[w] = v[u];
			}
		}
	}
}

/* warp_rows over split rows. FMT_BF16 needs wb 256 and sb 8 (the launcher checks): lane l dequantizes
 * weights 8l..8l+7 of each row with the row's 8-byte scale word, as warp_rows does from a packed row. */
__device__ __forceinline__ void warp_rows_split(const uint8_t *W, const uint8_t *S, uint32_t wb, uint32_t sb,
						const unsigned long long *loc, uint8_t *const *dst, int nrows, int fmt,
						int vec, int lane)
{
	if (fmt == FMT_BF16) {
		uint2 w[RPW], sc[RPW];
#pragma unroll
		for (int r = 0; r < RPW; r++) {
			if (r < nrows && loc[r] != NO_ROW) {
				w[r] = reinterpret_cast<const uint2 *>(W + loc[r] * 256)[lane];
				sc[r] = *reinterpret_cast<const uint2 *>(S + loc[r] * 8);
			} else {
				w[r] = make_uint2(0, 0);
				sc[r] = make_uint2(0, 0);
			}
		}
#pragma unroll
		for (int r = 0; r < RPW; r++) {
			if (r >= nrows)
				break;
			uint4 o = make_uint4(0, 0, 0, 0);
			if (loc[r] != NO_ROW)
				o = dq_lane(w[r], sc[r], lane);
			reinterpret_cast<uint4 *>(dst[r])[lane] = o;
		}
		return;
	}
	switch (vec) {
	case 16: warp_copy_split<uint4>(W, S, wb, sb, loc, dst, nrows, lane); break;
	case 8: warp_copy_split<uint2>(W, S, wb, sb, loc, dst, nrows, lane); break;
	case 4: warp_copy_split<uint32_t>(W, S, wb, sb, loc, dst, nrows, lane); break;
	default: warp_copy_split<uint8_t>(W, S, wb, sb, loc, dst, nrows, lane); break;
	}
}

/* for_rows over split rows: row(p, &loc, &dst) names position p's local row (NO_ROW: a zero row) and
 * its destination. */
template <typename Row>
__device__ __forceinline__ void for_rows_split(unsigned long long n, const uint8_t *W, const uint8_t *S, uint32_t wb,
					       uint32_t sb, int fmt, int vec, Row row)
{
	const int lane = threadIdx.x & (WARP - 1);
	warp_groups(0, n, grid_warp(), grid_warps(), [&](unsigned long long first, int nrows) {
		unsigned long long loc[RPW];
		uint8_t *dst[RPW];
#pragma unroll
		for (int r = 0; r < RPW; r++) {
			loc[r] = NO_ROW;
			dst[r] = NULL;
			if (r < nrows)
				row(first + r, &loc[r], &dst[r]);
		}
		warp_rows_split(W, S, wb, sb, loc, dst, nrows, fmt, vec, lane);
	});
}

#endif
