/* SPDX-License-Identifier: Apache-2.0 */
/* rows.cuh: what the lookup kernels share: exact bf16 dequantization, the warp row movers, id ->
 * local row, the row movers' loops (warp_groups, for_rows_in, for_rows) and the GPU/CPU split point
 * of a compact request. */
#ifndef EHT_GPU_KERNELS_LOOKUP_ROWS_CUH
#define EHT_GPU_KERNELS_LOOKUP_ROWS_CUH

#include <stdint.h>

/* CUDA/HIP spellings and the CUB block headers, before the short names below (WARP, RPW), which
 * CUB's own identifiers would take (sort.cu). */
#include "gpu/kernels/compat.h"

#include "gpu/kernels/lookup_const.h"
#include "gpu/kernels/idview.h"

#define WARP EHT_LK_WARP
#define RPW EHT_LK_RPW
#define DEAD32 EHT_LK_DEAD32
#define FMT_RAW EHT_LK_FMT_RAW
#define FMT_BF16 EHT_LK_FMT_BF16

/* ---------------------------------------------------------------- bf16 dequantization (exact) */
/* e4m3fn byte times the float with exponent bits s (s = 0: +0.0, s = 255: +inf), then bf16
 * round-to-nearest-even; NaN (e4m3 NaN, 0 * inf) -> 0x7fc0. Same integer steps as the CPU reference
 * (src/lookup/dequant.c), so results match bit for bit. */
__device__ __forceinline__ uint32_t dq1(uint32_t w, uint32_t s)
{
	if ((w & 0x7fu) == 0x7fu)
		return 0x7fc0u;
	uint32_t e = (w >> 3) & 15u, m = w & 7u;
	float v;
	if (e)
		v = __uint_as_float(((e + 120u) << 23) | (m << 20));
	else
		v = __fmul_rn((float)m, 0x1p-9f);
	uint32_t u = __float_as_uint(__fmul_rn(v, __uint_as_float(s << 23)));
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0x7fc0u;
	u |= (w & 0x80u) << 24;
	return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

#if !EHT_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
/* GPUs with e4m3 conversions (sm_89 on): two weights (the low 16 bits of w2) times the scale float f
 * into bf16x2 with the hardware's conversions instead of dq1's integer steps a weight: e4m3 -> f16
 * is exact (NaN stays NaN), f16 -> f32 exact, the same IEEE multiply as dq1 (no flush: subnormals
 * kept), then RNE to bf16, which is dq1's integer rounding for every non-NaN. A NaN half becomes
 * dq1's 0x7fc0. */
__device__ __forceinline__ uint32_t dq2_hw(uint32_t w2, float f)
{
	uint32_t r;
	asm("{\n\t.reg .b16 w, lo, hi;\n\t.reg .b32 h;\n\t.reg .f32 a, b;\n\t"
	    "cvt.u16.u32 w, %1;\n\tcvt.rn.f16x2.e4m3x2 h, w;\n\tmov.b32 {lo, hi}, h;\n\t"
	    "cvt.f32.f16 a, lo;\n\tcvt.f32.f16 b, hi;\n\tmul.rn.f32 a, a, %2;\n\tmul.rn.f32 b, b, %2;\n\t"
	    "cvt.rn.bf16x2.f32 %0, b, a;\n\t}"
	    : "=r"(r)
	    : "r"(w2), "f"(f));
	/* a half whose magnitude is above 0x7f80 is a NaN: 0x7fc0 as dq1 (no carry crosses the halves) */
	uint32_t nan = ((r & 0x7fff7fffu) + 0x007f007fu) & 0x80008000u;
	nan = (nan >> 15) * 0xffffu;
	return (r & ~nan) | (0x7fc07fc0u & nan);
}
#define EHT_LK_HW_E4M3 1
#else
#define EHT_LK_HW_E4M3 0
#endif

/* 8 weights (one 8-byte word) with their group's scale into 8 bf16 (one 16-byte word). */
__device__ __forceinline__ uint4 dq8(uint2 w, uint32_t s)
{
	uint4 r;
#if EHT_LK_HW_E4M3
	const float f = __uint_as_float(s << 23);
	r.x = dq2_hw(w.x, f);
	r.y = dq2_hw(w.x >> 16, f);
	r.z = dq2_hw(w.y, f);
	r.w = dq2_hw(w.y >> 16, f);
#else
	r.x = dq1(w.x & 0xff, s) | (dq1((w.x >> 8) & 0xff, s) << 16);
	r.y = dq1((w.x >> 16) & 0xff, s) | (dq1(w.x >> 24, s) << 16);
	r.z = dq1(w.y & 0xff, s) | (dq1((w.y >> 8) & 0xff, s) << 16);
	r.w = dq1((w.y >> 16) & 0xff, s) | (dq1(w.y >> 24, s) << 16);
#endif
	return r;
}

/* Lane l's 8 bf16 of a 256-weight row: weights 8l..8l+7 (the row's word w) with their group's scale
 * byte from the row's 8-byte scale word sc (32 weights per scale = 4 lanes). */
__device__ __forceinline__ uint4 dq_lane(uint2 w, uint2 sc, int lane)
{
	int g = lane >> 2;
	return dq8(w, ((g < 4 ? sc.x : sc.y) >> ((g & 3) * 8)) & 0xffu);
}

/* ------------------------------------------------------------------------ warp row movers */
/* Copies RPW rows (src[r] NULL: zero row) of rb bytes with V-byte words: lane j of the warp takes
 * words j, j+32, ... of the concatenated rows; U loads are issued before their stores. */
/* Loads of rows the CPU rewrites between launches (pinned staging) bypass the GPU's caches (CV). */
template <typename V, bool CV>
__device__ __forceinline__ V ld_row(const V *p)
{
	if (CV)
		return eht_ldcv(p);
	return *p;
}

template <typename V, bool CV = false>
__device__ __forceinline__ void warp_copy(const uint8_t *const *src, uint8_t *const *dst, uint32_t rb,
					  int nrows, int lane)
{
	const uint32_t W = rb / sizeof(V), T = W * (uint32_t)nrows;
	const int U = 4;
	for (uint32_t base = 0; base < T; base += WARP * U) {
		V v[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			uint32_t j = base + u * WARP + lane;
			if (j < T) {
				uint32_t r = j / W, w = j - r * W;
				if (src[r])
					v[u] = ld_row<V, CV>(reinterpret_cast<const V *>(src[r]) + w);
				else
					memset(&v[u], 0, sizeof(V));
			}
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			uint32_t j = base + u * WARP + lane;
			if (j < T) {
				uint32_t r = j / W, w = j - r * W;
				reinterpret_cast<V *>(dst[r])[w] = v[u];
			}
		}
	}
}

template <bool CV = false>
__device__ __forceinline__ void warp_rows(const uint8_t *const *src, uint8_t *const *dst, uint32_t rb,
					  int nrows, int fmt, int vec, int lane)
{
	if (fmt == FMT_BF16) {
		/* 264-byte rows: lane l dequantizes weights 8l..8l+7 of each row; scale bytes are the
		 * 8-byte word at 256 (same address for the warp: one transaction). */
		uint2 w[RPW], sc[RPW];
#pragma unroll
		for (int r = 0; r < RPW; r++) {
			if (r < nrows && src[r]) {
				w[r] = ld_row<uint2, CV>(reinterpret_cast<const uint2 *>(src[r]) + lane);
				sc[r] = ld_row<uint2, CV>(reinterpret_cast<const uint2 *>(src[r] + 256));
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
			if (src[r])
				o = dq_lane(w[r], sc[r], lane);
			reinterpret_cast<uint4 *>(dst[r])[lane] = o;
		}
		return;
	}
	switch (vec) {
	case 16: warp_copy<uint4, CV>(src, dst, rb, nrows, lane); break;
	case 8: warp_copy<uint2, CV>(src, dst, rb, nrows, lane); break;
	case 4: warp_copy<uint32_t, CV>(src, dst, rb, nrows, lane); break;
	default: warp_copy<uint8_t, CV>(src, dst, rb, nrows, lane); break;
	}
}

__device__ __forceinline__ uint32_t out_bytes(uint32_t rb, int fmt) { return fmt == FMT_BF16 ? 512u : rb; }

/* Absolute row id + offset -> local row, or DEAD. lo/hi: the rows this process holds. */
__device__ __forceinline__ long long load_id(const void *ids, int id64, unsigned long long i)
{
	return id64 ? reinterpret_cast<const long long *>(ids)[i] : (long long)reinterpret_cast<const int *>(ids)[i];
}
__device__ __forceinline__ bool to_local(long long id, long long off, long long lo, long long hi,
					 unsigned long long *local)
{
	long long r = (long long)((unsigned long long)id + (unsigned long long)off);
	if (r < lo || r >= hi)
		return false;
	*local = (unsigned long long)(r - lo);
	return true;
}

/* The row movers' loop shape: warp wid of `warps` takes the positions [first, first + RPW) of [b, e)
 * for first = b + wid * RPW, then every warps * RPW further; body(first, nrows) moves them. The whole
 * grid (grid_warp, grid_warps: for_rows) or one block (its warps: the stage-in kernel's dequant). */
template <typename Body>
__device__ __forceinline__ void warp_groups(unsigned long long b, unsigned long long e, unsigned long long wid,
					    unsigned long long warps, Body body)
{
	for (unsigned long long first = b + wid * RPW; first < e; first += warps * RPW)
		body(first, (int)min((unsigned long long)RPW, e - first));
}
__device__ __forceinline__ unsigned long long grid_warp(void)
{
	return ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / WARP;
}
__device__ __forceinline__ unsigned long long grid_warps(void)
{
	return (unsigned long long)gridDim.x * (blockDim.x / WARP);
}

/* warp_groups over rows: row(p, &src, &dst) names position p's source (NULL: a zero row) and
 * destination, warp_rows moves them, then after(first, nrows) runs (per-group bookkeeping; may do
 * nothing). */
template <bool CV = false, typename Row, typename After>
__device__ __forceinline__ void for_rows_in(unsigned long long b, unsigned long long e, unsigned long long wid,
					    unsigned long long warps, uint32_t rb, int fmt, int vec, Row row, After after)
{
	const int lane = threadIdx.x & (WARP - 1);
	warp_groups(b, e, wid, warps, [&](unsigned long long first, int nrows) {
		const uint8_t *src[RPW];
		uint8_t *dst[RPW];
#pragma unroll
		for (int r = 0; r < RPW; r++) {
			src[r] = NULL;
			dst[r] = NULL;
			if (r < nrows)
				row(first + r, &src[r], &dst[r]);
		}
		warp_rows<CV>(src, dst, rb, nrows, fmt, vec, lane);
		after(first, nrows);
	});
}

/* for_rows_in over [0, n) with the whole grid's warps. */
template <bool CV = false, typename Row, typename After>
__device__ __forceinline__ void for_rows(unsigned long long n, uint32_t rb, int fmt, int vec, Row row, After after)
{
	for_rows_in<CV>(0, n, grid_warp(), grid_warps(), rb, fmt, vec, row, after);
}

__device__ __forceinline__ void no_after(unsigned long long, int) {}

/* The in-place gathers' id p: flat ids as given, or (view.ids not 0) the flat id of an engine's
 * [T, H] ids (idview.h), so that the engine's call needs no flatten kernel before. */
__device__ __forceinline__ long long direct_id(const void *ids, int id64, const struct eht_lk_idview &view,
					       unsigned long long p)
{
	return view.ids ? eht_idview_row(view, p) : load_id(ids, id64, p);
}

/* A thread's dead ids. Without h_dead, added to counters[0] (zeroed before the launch, read after).
 * With h_dead, the run's only piece publishes its count itself, so the run needs no memset before
 * and no copy after: each block adds to counters[2], and the last block to finish writes the total
 * to *h_dead (host-mapped) and zeroes counters[2..3] for the next launch (a graph replays it as is).
 * Every thread of the block must call it. */
__device__ __forceinline__ void direct_dead(unsigned dead, unsigned long long *counters, unsigned long long *h_dead)
{
	if (!h_dead) {
		if (dead)
			atomicAdd(&counters[0], (unsigned long long)dead);
		return;
	}
	if (dead)
		atomicAdd(&counters[2], (unsigned long long)dead);
	__syncthreads();
	if (threadIdx.x == 0) {
		__threadfence();
		if (atomicAdd(&counters[3], 1ull) == gridDim.x - 1) {
			*(volatile unsigned long long *)h_dead = atomicExch(&counters[2], 0ull);
			__threadfence_system();
			atomicExch(&counters[3], 0ull);
		}
	}
}

/* The first split_at(u, share) of u distinct rows are gathered in place on the GPU (eht_lk_gather_uniq),
 * the rest by the CPU (eht_lk_stage_in): both kernels compute it with the same float steps. */
__device__ __forceinline__ unsigned long long split_at(unsigned long long u, float share)
{
	if (share >= 1.0f)
		return u;
	if (share <= 0.0f)
		return 0;
	unsigned long long k = (unsigned long long)((float)u * share);
	return k < u ? k : u;
}

#endif
