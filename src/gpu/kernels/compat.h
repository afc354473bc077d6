/* SPDX-License-Identifier: Apache-2.0 */
/* compat.h: what the kernels use that CUDA and HIP spell differently, so that nvcc and hipcc build the
 * same .cu sources: the block primitives (CUB; on HIP rocPRIM's, behind CUB's names), the 32-lane
 * warp votes and shuffles, cache-bypassing loads, a nanosecond clock and a short sleep. Included first
 * by every kernel source. */
#ifndef EHT_GPU_KERNELS_COMPAT_H
#define EHT_GPU_KERNELS_COMPAT_H

#include <stdint.h>

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#define EHT_HIP 1
#include <hip/hip_runtime.h>
#else
#define EHT_HIP 0
#endif

#if EHT_HIP
/* ---- HIP (AMD). The kernels' warps are 32 lanes (EHT_LK_WARP: a bf16 row is 32 lanes x 8 weights);
 * on a wave64 GPU (gfx9: MI200, MI300) a wavefront holds two of them, on RDNA (gfx10-12: wave32)
 * one. Votes and shuffles act on this thread's 32-lane half. */
#ifndef __AMDGCN_WAVEFRONT_SIZE
#define __AMDGCN_WAVEFRONT_SIZE 64 /* the host pass: unused there */
#endif
__device__ __forceinline__ unsigned eht_ballot32(bool pred)
{
	unsigned long long m = __ballot(pred);
#if __AMDGCN_WAVEFRONT_SIZE == 64
	return (unsigned)(m >> (threadIdx.x & 32u));
#else
	return (unsigned)m;
#endif
}
template <typename T> __device__ __forceinline__ T eht_shfl32(T v, int src) { return __shfl(v, src, 32); }
template <typename T> __device__ __forceinline__ T eht_shfl_down32(T v, unsigned d) { return __shfl_down(v, d, 32); }

/* A load that sees what the CPU wrote since the last launch (pinned staging it rewrites): volatile
 * 32-bit loads, which the AMDGPU backend issues past the GPU's caches (glc/sc bits). */
template <typename V> __device__ __forceinline__ V eht_ldcv(const V *p)
{
	V v;
	if (sizeof(V) % 4 == 0) {
		const volatile uint32_t *s = (const volatile uint32_t *)(const void *)p;
		uint32_t *d = (uint32_t *)(void *)&v;
#pragma unroll
		for (unsigned i = 0; i < sizeof(V) / 4; i++)
			d[i] = s[i];
	} else {
		const volatile uint8_t *s = (const volatile uint8_t *)(const void *)p;
		uint8_t *d = (uint8_t *)(void *)&v;
		for (unsigned i = 0; i < sizeof(V); i++)
			d[i] = s[i];
	}
	return v;
}

/* Nanoseconds on the GPU's constant-rate clock: wall_clock64 counts at 100 MHz on gfx9 to gfx12
 * (hipDeviceAttributeWallClockRate). Only the EHT_BELL_TRACE trace reads it (differences). */
__device__ __forceinline__ unsigned long long eht_gtime(void) { return wall_clock64() * 10ull; }

/* s_sleep takes a constant: one unit is 64 clocks, about 30-40 ns at the shader clocks of these GPUs. */
__device__ __forceinline__ void eht_nanosleep(unsigned ns)
{
	for (unsigned i = 0; i <= ns / 32u; i++)
		__builtin_amdgcn_s_sleep(1);
}

/* CUB's block primitives as the kernels use them, on rocPRIM's (what hipCUB does; Debian packages
 * rocPRIM but not hipCUB). Arrangements are blocked in and out, as CUB's defaults; the radix sort is
 * stable, as CUB's. */
#include <rocprim/functional.hpp> /* first: the block headers of rocPRIM 5.3 use rocprim::min without it */
#include <rocprim/block/block_radix_sort.hpp>
#include <rocprim/block/block_reduce.hpp>
#include <rocprim/block/block_scan.hpp>
namespace cub {
template <typename K, int THREADS, int ITEMS, typename V> class BlockRadixSort {
	typedef rocprim::block_radix_sort<K, THREADS, ITEMS, V> impl;

public:
	typedef typename impl::storage_type TempStorage;
	__device__ __forceinline__ explicit BlockRadixSort(TempStorage &s) : s_(s) {}
	__device__ __forceinline__ void Sort(K (&k)[ITEMS], V (&v)[ITEMS], int begin_bit, int end_bit)
	{
		impl().sort(k, v, s_, (unsigned)begin_bit, (unsigned)end_bit);
	}

private:
	TempStorage &s_;
};
template <typename T, int THREADS> class BlockScan {
	typedef rocprim::block_scan<T, THREADS> impl;

public:
	typedef typename impl::storage_type TempStorage;
	__device__ __forceinline__ explicit BlockScan(TempStorage &s) : s_(s) {}
	__device__ __forceinline__ void ExclusiveSum(T in, T &out) { impl().exclusive_scan(in, out, T(0), s_); }
	__device__ __forceinline__ void ExclusiveSum(T in, T &out, T &total)
	{
		impl().exclusive_scan(in, out, T(0), total, s_);
	}

private:
	TempStorage &s_;
};
template <typename T, int THREADS> class BlockReduce {
	typedef rocprim::block_reduce<T, THREADS> impl;

public:
	typedef typename impl::storage_type TempStorage;
	__device__ __forceinline__ explicit BlockReduce(TempStorage &s) : s_(s) {}
	/* The sum, valid in thread 0 (as CUB's). */
	__device__ __forceinline__ T Sum(T in)
	{
		T out;
		impl().reduce(in, out, s_);
		return out;
	}

private:
	TempStorage &s_;
};
} // namespace cub

#else
/* ---- CUDA */
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

__device__ __forceinline__ unsigned eht_ballot32(bool pred) { return __ballot_sync(0xffffffffu, pred); }
template <typename T> __device__ __forceinline__ T eht_shfl32(T v, int src) { return __shfl_sync(0xffffffffu, v, src); }
template <typename T> __device__ __forceinline__ T eht_shfl_down32(T v, unsigned d)
{
	return __shfl_down_sync(0xffffffffu, v, d);
}
template <typename V> __device__ __forceinline__ V eht_ldcv(const V *p) { return __ldcv(p); }
/* The GPU's nanosecond global timer. */
__device__ __forceinline__ unsigned long long eht_gtime(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
__device__ __forceinline__ void eht_nanosleep(unsigned ns) { __nanosleep(ns); }
#endif

#endif
