/* SPDX-License-Identifier: Apache-2.0 */
/* lookup.cu: the lookup kernels: in-place gather (DIRECT), GPU radix sort + dedup + gather of the
 * distinct rows in address order (SORTED), and the expand kernel that writes rows in request order
 * from a compact buffer (SORTED, HOST, the disk tier), each with optional fused bf16 dequantization.
 * Launched through the driver API (src/cuda/gpu_lookup.c): extern "C" names, no runtime API. */
#include <stdint.h>

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#define WARP 32
/* Rows a warp has in flight at once: every load of those rows is issued before the first store. */
#define RPW 4
#define DEAD32 0xffffffffu

/* Output formats: must match enum eht_lookup_format. */
#define FMT_RAW 0
#define FMT_BF16 1

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

/* 8 weights (one 8-byte word) with their group's scale into 8 bf16 (one 16-byte word). */
__device__ __forceinline__ uint4 dq8(uint2 w, uint32_t s)
{
	uint4 r;
	r.x = dq1(w.x & 0xff, s) | (dq1((w.x >> 8) & 0xff, s) << 16);
	r.y = dq1((w.x >> 16) & 0xff, s) | (dq1(w.x >> 24, s) << 16);
	r.z = dq1(w.y & 0xff, s) | (dq1((w.y >> 8) & 0xff, s) << 16);
	r.w = dq1((w.y >> 16) & 0xff, s) | (dq1(w.y >> 24, s) << 16);
	return r;
}

/* ------------------------------------------------------------------------ warp row movers */
/* Copies RPW rows (src[r] NULL: zero row) of rb bytes with V-byte words: lane j of the warp takes
 * words j, j+32, ... of the concatenated rows; U loads are issued before their stores. */
/* Loads of rows the CPU rewrites between launches (pinned staging) bypass the GPU's caches (CV). */
template <typename V, bool CV>
__device__ __forceinline__ V ld_row(const V *p)
{
	if (CV)
		return __ldcv(p);
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
			if (src[r]) {
				int g = lane >> 2; /* 32 weights per scale = 4 lanes */
				uint32_t s = ((g < 4 ? sc[r].x : sc[r].y) >> ((g & 3) * 8)) & 0xffu;
				o = dq8(w[r], s);
			}
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

/* The row movers' grid-stride loop: each warp takes RPW positions of [0, n) at a time; row(p, &src,
 * &dst) names position p's source (NULL: a zero row) and destination, warp_rows moves them, then
 * after(first, nrows) runs (per-group bookkeeping; may do nothing). */
template <bool CV = false, typename Row, typename After>
__device__ __forceinline__ void for_rows(unsigned long long n, uint32_t rb, int fmt, int vec, Row row, After after)
{
	const int lane = threadIdx.x & (WARP - 1);
	const unsigned long long warps = (unsigned long long)gridDim.x * (blockDim.x / WARP);
	unsigned long long wid = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / WARP;
	for (unsigned long long first = wid * RPW; first < n; first += warps * RPW) {
		const uint8_t *src[RPW];
		uint8_t *dst[RPW];
		int nrows = (int)min((unsigned long long)RPW, n - first);
#pragma unroll
		for (int r = 0; r < RPW; r++) {
			src[r] = NULL;
			dst[r] = NULL;
			if (r < nrows)
				row(first + r, &src[r], &dst[r]);
		}
		warp_rows<CV>(src, dst, rb, nrows, fmt, vec, lane);
		after(first, nrows);
	}
}

__device__ __forceinline__ void no_after(unsigned long long, int) {}

/* ------------------------------------------------------------------------------ DIRECT */
/* In-place gather in request order: one warp per RPW ids, grid-stride. counters[0] += dead ids. */
extern "C" __global__ void eht_lk_direct(const void *ids, int id64, long long off, unsigned long long n,
					 long long lo, long long hi, const uint8_t *table, uint32_t rb,
					 uint8_t *out, int fmt, int vec, unsigned long long *counters)
{
	const bool lane0 = (threadIdx.x & (WARP - 1)) == 0;
	const uint32_t ob = out_bytes(rb, fmt);
	unsigned dead = 0;
	for_rows(n, rb, fmt, vec,
		 [&](unsigned long long p, const uint8_t **src, uint8_t **dst) {
			 unsigned long long loc;
			 if (to_local(load_id(ids, id64, p), off, lo, hi, &loc))
				 *src = table + loc * rb;
			 else if (lane0)
				 dead++;
			 *dst = out + p * ob;
		 },
		 no_after);
	if (dead)
		atomicAdd(&counters[0], (unsigned long long)dead);
}

/* ------------------------------------------------------------------------------ expand */
/* out[p] = compact[slot[p]] (slot NULL: compact[p]; slot DEAD32: zeros), in the output format; with
 * dslot, out[dslot[p]] instead (a hot-set refresh scattering its new rows into their slots). */
extern "C" __global__ void eht_lk_expand(const uint32_t *slot, unsigned long long n, const uint8_t *compact,
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

/* Distinct rows uniq[0..split_at(counters[1], share)) (local rows) into compact, raw. Launched for the
 * largest possible count; warps past the real count (read on the GPU: no host sync) return. */
extern "C" __global__ void eht_lk_gather_uniq(const uint32_t *uniq, const unsigned long long *counters,
					      float share, const uint8_t *table, uint32_t rb, uint8_t *compact, int vec)
{
	for_rows(split_at(counters[1], share), rb, FMT_RAW, vec,
		 [&](unsigned long long u, const uint8_t **src, uint8_t **dst) {
			 *src = table + (unsigned long long)uniq[u] * rb;
			 *dst = compact + u * rb;
		 },
		 no_after);
}

/* ------------------------------------------------------------------------ sort + dedup */
/* Keys are local rows (u32), dead ids get the key dead_key = local_rows, which sorts after every live
 * key; values are positions in the batch. */
#define SMALL_THREADS 256
#define SMALL_ITEMS 32
#define SMALL_TILE (SMALL_THREADS * SMALL_ITEMS)
#define TILE_THREADS 256
#define TILE_ITEMS 8
#define TILE (TILE_THREADS * TILE_ITEMS)
#define RADIX_BITS 8
#define RADIX (1 << RADIX_BITS)

__device__ __forceinline__ uint32_t key_of(const void *ids, int id64, long long off, unsigned long long i,
					   long long lo, long long hi, uint32_t dead_key)
{
	unsigned long long loc;
	return to_local(load_id(ids, id64, i), off, lo, hi, &loc) ? (uint32_t)loc : dead_key;
}

/* Dedup of a sorted run, shared by both sort paths: thread-local flags of live heads, block offsets
 * from a BlockScan, then uniq[] and slot[] written. keys/vals: this thread's ITEMS sorted items at
 * ranks rank0..rank0+ITEMS (blocked); prev: key of rank rank0-1 (or a value != any key for rank 0). */
template <int THREADS, int ITEMS>
__device__ __forceinline__ void dedup_items(const uint32_t *k, const uint32_t *v, uint32_t prev,
					    unsigned long long rank0, unsigned long long n, uint32_t dead_key,
					    uint32_t block_offset, typename cub::BlockScan<uint32_t, THREADS>::TempStorage &st,
					    uint32_t *uniq, uint32_t *slot, unsigned long long *counters,
					    uint32_t *block_total)
{
	uint32_t cnt = 0, dead = 0;
#pragma unroll
	for (int i = 0; i < ITEMS; i++) {
		uint32_t pk = i ? k[i - 1] : prev;
		bool valid = rank0 + i < n;
		if (valid && k[i] == dead_key)
			dead++;
		cnt += valid && k[i] != dead_key && k[i] != pk;
	}
	uint32_t excl, total;
	cub::BlockScan<uint32_t, THREADS>(st).ExclusiveSum(cnt, excl, total);
	uint32_t u = block_offset + excl; /* index of the next head */
#pragma unroll
	for (int i = 0; i < ITEMS; i++) {
		uint32_t pk = i ? k[i - 1] : prev;
		if (rank0 + i >= n)
			break;
		if (k[i] == dead_key) {
			slot[v[i]] = DEAD32;
			continue;
		}
		if (k[i] != pk)
			uniq[u++] = k[i];
		slot[v[i]] = u - 1;
	}
	if (dead)
		atomicAdd(&counters[0], (unsigned long long)dead);
	if (block_total)
		*block_total = total;
}

/* A whole batch of n <= SMALL_TILE ids in one block (decode-sized): keys, sort, dedup in one launch.
 * Writes uniq[0..u), slot[0..n), counters[0] += dead ids, counters[1] = u. */
extern "C" __global__ void __launch_bounds__(SMALL_THREADS)
eht_lk_sort_small(const void *ids, int id64, long long off, unsigned n, long long lo, long long hi,
		  uint32_t dead_key, int nbits, uint32_t *uniq, uint32_t *slot, unsigned long long *counters)
{
	typedef cub::BlockRadixSort<uint32_t, SMALL_THREADS, SMALL_ITEMS, uint32_t> Sort;
	typedef cub::BlockScan<uint32_t, SMALL_THREADS> Scan;
	__shared__ union {
		typename Sort::TempStorage sort;
		typename Scan::TempStorage scan;
	} tmp;
	__shared__ uint32_t last_key[SMALL_THREADS];
	__shared__ uint32_t total;
	uint32_t k[SMALL_ITEMS], v[SMALL_ITEMS];
	const unsigned t = threadIdx.x;
	/* Blocked input: padding (rank >= n) comes last and keeps last (the sort is stable); its key's low
	 * nbits bits are all ones, >= dead_key > every live key. */
#pragma unroll
	for (int i = 0; i < SMALL_ITEMS; i++) {
		unsigned p = t * SMALL_ITEMS + i;
		k[i] = p < n ? key_of(ids, id64, off, p, lo, hi, dead_key) : 0xffffffffu;
		v[i] = p;
	}
	Sort(tmp.sort).Sort(k, v, 0, nbits);
	last_key[t] = k[SMALL_ITEMS - 1];
	__syncthreads();
	uint32_t prev = t ? last_key[t - 1] : ~k[0];
	dedup_items<SMALL_THREADS, SMALL_ITEMS>(k, v, prev, (unsigned long long)t * SMALL_ITEMS, n, dead_key, 0,
						tmp.scan, uniq, slot, counters, t == 0 ? &total : NULL);
	__syncthreads();
	if (t == 0)
		counters[1] = total;
}

/* Larger batches: LSD radix sort over tiles, RADIX_BITS per pass (hist, scan, scatter), then dedup. */

/* keys[i], vals[i] = i. (Dead ids are counted once, by the dedup that follows.) */
extern "C" __global__ void eht_lk_keys(const void *ids, int id64, long long off, unsigned n, long long lo,
				       long long hi, uint32_t dead_key, uint32_t *keys, uint32_t *vals)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		keys[i] = key_of(ids, id64, off, i, lo, hi, dead_key);
		vals[i] = i;
	}
}

/* hist[d * gridDim.x + tile] = number of keys of the tile with digit d at `shift`. */
extern "C" __global__ void __launch_bounds__(TILE_THREADS)
eht_lk_hist(const uint32_t *keys, unsigned n, int shift, uint32_t *hist)
{
	__shared__ uint32_t h[RADIX];
	for (int d = threadIdx.x; d < RADIX; d += blockDim.x)
		h[d] = 0;
	__syncthreads();
	unsigned base = blockIdx.x * TILE;
	for (unsigned i = threadIdx.x; i < TILE && base + i < n; i += blockDim.x)
		atomicAdd(&h[(keys[base + i] >> shift) & (RADIX - 1)], 1u);
	__syncthreads();
	for (int d = threadIdx.x; d < RADIX; d += blockDim.x)
		hist[d * gridDim.x + blockIdx.x] = h[d];
}

/* In-place exclusive prefix sum of data[0..len) by one block of 1024 threads; *total (may be NULL)
 * gets the sum. */
extern "C" __global__ void __launch_bounds__(1024) eht_lk_scan(uint32_t *data, unsigned len, uint32_t *total)
{
	typedef cub::BlockScan<uint32_t, 1024> Scan;
	__shared__ typename Scan::TempStorage st;
	__shared__ uint32_t carry;
	if (threadIdx.x == 0)
		carry = 0;
	__syncthreads();
	for (unsigned base = 0; base < len; base += 1024) {
		unsigned i = base + threadIdx.x;
		uint32_t x = i < len ? data[i] : 0, y, sum;
		Scan(st).ExclusiveSum(x, y, sum);
		uint32_t c = carry;
		if (i < len)
			data[i] = y + c;
		__syncthreads();
		if (threadIdx.x == 0)
			carry = c + sum;
		__syncthreads();
	}
	if (threadIdx.x == 0 && total)
		*total = carry;
}

/* One LSD pass: each tile sorts its keys on digit `shift` (stable, CUB block radix sort), then item
 * of tile rank q with digit d goes to offs[d * tiles + tile] + (q - first rank of d in the tile). */
extern "C" __global__ void __launch_bounds__(TILE_THREADS)
eht_lk_scatter(const uint32_t *kin, const uint32_t *vin, unsigned n, int shift, const uint32_t *offs,
	       uint32_t *kout, uint32_t *vout)
{
	typedef cub::BlockRadixSort<uint32_t, TILE_THREADS, TILE_ITEMS, uint32_t> Sort;
	typedef cub::BlockScan<uint32_t, TILE_THREADS> Scan;
	__shared__ typename Sort::TempStorage sst;
	__shared__ typename Scan::TempStorage cst;
	__shared__ uint32_t start[RADIX];
	const unsigned base = blockIdx.x * TILE, t = threadIdx.x;
	const unsigned valid = min((unsigned)TILE, n - base);
	uint32_t k[TILE_ITEMS], v[TILE_ITEMS];
	/* Padding keys have digit RADIX-1 and come last in input order, so stably last in the tile. */
#pragma unroll
	for (int i = 0; i < TILE_ITEMS; i++) {
		unsigned q = t * TILE_ITEMS + i;
		k[i] = q < valid ? kin[base + q] : 0xffffffffu;
		v[i] = q < valid ? vin[base + q] : 0;
	}
	/* Digit counts of this tile -> first rank of each digit (RADIX == TILE_THREADS). */
	start[t] = 0;
	__syncthreads();
#pragma unroll
	for (int i = 0; i < TILE_ITEMS; i++)
		if (t * TILE_ITEMS + i < valid)
			atomicAdd(&start[(k[i] >> shift) & (RADIX - 1)], 1u);
	__syncthreads();
	uint32_t c = start[t], ex;
	Scan(cst).ExclusiveSum(c, ex);
	__syncthreads();
	start[t] = ex;
	Sort(sst).Sort(k, v, shift, shift + RADIX_BITS);
	__syncthreads();
#pragma unroll
	for (int i = 0; i < TILE_ITEMS; i++) {
		unsigned q = t * TILE_ITEMS + i;
		if (q < valid) {
			unsigned d = (k[i] >> shift) & (RADIX - 1);
			unsigned dst = offs[d * gridDim.x + blockIdx.x] + (q - start[d]);
			kout[dst] = k[i];
			vout[dst] = v[i];
		}
	}
}

/* Dedup over sorted keys, tile by tile: first the live heads per tile ... */
extern "C" __global__ void __launch_bounds__(TILE_THREADS)
eht_lk_dedup_count(const uint32_t *keys, unsigned n, uint32_t dead_key, uint32_t *tile_heads)
{
	typedef cub::BlockReduce<uint32_t, TILE_THREADS> Red;
	__shared__ typename Red::TempStorage st;
	const unsigned base = blockIdx.x * TILE;
	uint32_t cnt = 0;
	for (unsigned i = threadIdx.x; i < TILE && base + i < n; i += blockDim.x) {
		unsigned q = base + i;
		uint32_t k = keys[q];
		cnt += k != dead_key && (q == 0 || keys[q - 1] != k);
	}
	uint32_t s = Red(st).Sum(cnt);
	if (threadIdx.x == 0)
		tile_heads[blockIdx.x] = s;
}

/* ... then, after eht_lk_scan over tile_heads (total into counters-adjacent u32), uniq and slot. */
extern "C" __global__ void __launch_bounds__(TILE_THREADS)
eht_lk_dedup_assign(const uint32_t *keys, const uint32_t *vals, unsigned n, uint32_t dead_key,
		    const uint32_t *tile_offs, const uint32_t *total, uint32_t *uniq, uint32_t *slot,
		    unsigned long long *counters)
{
	typedef cub::BlockScan<uint32_t, TILE_THREADS> Scan;
	__shared__ typename Scan::TempStorage st;
	const unsigned base = blockIdx.x * TILE, t = threadIdx.x;
	uint32_t k[TILE_ITEMS], v[TILE_ITEMS];
	unsigned q0 = base + t * TILE_ITEMS;
#pragma unroll
	for (int i = 0; i < TILE_ITEMS; i++) {
		k[i] = q0 + i < n ? keys[q0 + i] : dead_key;
		v[i] = q0 + i < n ? vals[q0 + i] : 0;
	}
	uint32_t prev = q0 == 0 ? ~k[0] : (q0 < n ? keys[q0 - 1] : dead_key);
	dedup_items<TILE_THREADS, TILE_ITEMS>(k, v, prev, q0, n, dead_key, tile_offs[blockIdx.x], st, uniq,
					      slot, counters, NULL);
	if (blockIdx.x == 0 && t == 0)
		counters[1] = *total;
}

/* ------------------------------------------------------------------ stream-triggered CPU gather */
__device__ __forceinline__ unsigned long long gtime(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* The GPU half of HOST with ids the CPU cannot see when the call is made (ids in GPU memory, or a
 * CUDA-graph replay; src/lookup/lk_bell.c). Every block first copies its share of the ids into pinned
 * host memory h_ids (when ids is not NULL: no separate copy on the stream); the last block to finish
 * that rings the doorbell (a host-mapped word) that the CPU side polls. The CPU pool then gathers
 * chunk c (rows [c*chunk, ...)) into staging slot c % nslots and publishes it with
 * ready[slot] = tag | (c + 1) (tag: the request, so that runs on two streams never take each other's
 * chunks; and its dead ids in chunk_dead[c]). Each block takes chunks blockIdx.x,
 * blockIdx.x + gridDim.x, ...: waits for its chunk, copies it from the pinned staging in place
 * (cache-volatile loads: the CPU rewrites staging between launches) into out in the output format,
 * then frees the slot (ready[slot] = 0) for the CPU's next chunk. The last block to finish writes
 * counters[0] to *h_dead (host-mapped; when not NULL). Every value written is a function of the
 * launch's arguments only, so a captured graph replays it unchanged. sync[0..1]: device words, zero
 * between launches (the last block resets them). The grid must fit on the GPU at once beside other
 * work (the caller keeps it at most one block per SM): blocks wait on the CPU. A compact request (ucount
 * not NULL) gathers the distinct rows of a dedup pass (eht_lk_dedup_mark): ids are its u32 local rows,
 * of which this launch takes [split_at(*ucount, share), *ucount) into out (the compact rows) at the
 * same positions; that count exists only on the GPU, so the ringing block writes it to *h_count (host-
 * mapped) for the CPU first. */
extern "C" __global__ void __launch_bounds__(256)
eht_lk_stage_in(const uint32_t *ids, unsigned long long id_words, uint32_t *h_ids, const uint8_t *staging,
		unsigned *ready, unsigned tag, const unsigned long long *chunk_dead, unsigned chunk, unsigned nslots,
		unsigned long long n, uint32_t rb, uint8_t *out, int fmt, int vec, unsigned long long *counters,
		unsigned long long *h_dead, unsigned *bell, unsigned *sync, unsigned long long *trace,
		const unsigned long long *ucount, float share, unsigned long long *h_count)
{
	const int lane = threadIdx.x & (WARP - 1);
	const unsigned warp = threadIdx.x / WARP, nwarps = blockDim.x / WARP;
	if (trace && blockIdx.x == 0 && threadIdx.x == 0)
		trace[0] = gtime();
	if (ucount) {
		const unsigned long long u = *ucount, first = split_at(u, share);
		n = min(n, u - first);
		id_words = n;
		ids += first;
		out += first * out_bytes(rb, fmt);
	}
	if (ids) {
		for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < id_words;
		     i += (unsigned long long)gridDim.x * blockDim.x)
			h_ids[i] = ids[i];
		__threadfence_system();
	}
	__syncthreads();
	if (threadIdx.x == 0 && atomicAdd(&sync[0], 1u) == gridDim.x - 1) {
		if (h_count)
			*(volatile unsigned long long *)h_count = n;
		__threadfence_system();
		*(volatile unsigned *)bell = 1u;
		__threadfence_system();
		if (trace)
			trace[1] = gtime();
	}
	const unsigned long long nchunks = (n + chunk - 1) / chunk;
	const uint32_t ob = out_bytes(rb, fmt);
	for (unsigned long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
		const unsigned slot = (unsigned)(c % nslots);
		if (threadIdx.x == 0) {
			volatile unsigned *r = ready + slot;
			unsigned ns = 64;
			while (*r != (tag | (unsigned)(c + 1))) {
				__nanosleep(ns);
				if (ns < 1024)
					ns *= 2;
			}
			__threadfence_system();
			unsigned long long d = ((volatile const unsigned long long *)chunk_dead)[c];
			if (d)
				atomicAdd(&counters[0], d);
			if (trace && c == 0)
				trace[2] = gtime();
			if (trace && c == nchunks - 1)
				trace[3] = gtime();
		}
		__syncthreads();
		const unsigned long long b = c * chunk, e = min(n, b + chunk);
		const uint8_t *base = staging + (unsigned long long)slot * chunk * rb;
		for (unsigned long long f = b + (unsigned long long)warp * RPW; f < e; f += (unsigned long long)nwarps * RPW) {
			const uint8_t *src[RPW];
			uint8_t *dst[RPW];
			int nrows = (int)min((unsigned long long)RPW, e - f);
#pragma unroll
			for (int r = 0; r < RPW; r++) {
				src[r] = NULL;
				dst[r] = out;
				if (r < nrows) {
					src[r] = base + (f + r - b) * rb;
					dst[r] = out + (f + r) * ob;
				}
			}
			warp_rows<true>(src, dst, rb, nrows, fmt, vec, lane);
		}
		__syncthreads(); /* every load of the slot has completed (its values were stored) */
		if (threadIdx.x == 0) {
			__threadfence_system();
			*(volatile unsigned *)(ready + slot) = 0u;
		}
	}
	if (threadIdx.x == 0) {
		__threadfence();
		if (atomicAdd(&sync[1], 1u) == gridDim.x - 1) {
			if (h_dead) {
				*(volatile unsigned long long *)h_dead = atomicAdd(&counters[0], 0ull);
				__threadfence_system();
			}
			if (trace) {
				trace[4] = gtime();
				__threadfence_system();
			}
			atomicExch(&sync[0], 0u);
			atomicExch(&sync[1], 0u);
		}
	}
}

/* ------------------------------------------------------------------------ hot-row cache */
/* Same index as src/lookup/lk_hot.h: keys (local rows, all ones where free), vals (slots), linear
 * probing from (key * 0x9E3779B97F4A7C15) >> shift; at most half full. */
__device__ __forceinline__ uint32_t hot_find(const unsigned long long *keys, const uint32_t *vals,
					     unsigned long long mask, int shift, unsigned long long loc)
{
	unsigned long long h = (loc * 0x9E3779B97F4A7C15ull) >> shift;
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
#define HOT 0x80000000u

/* Mark pass of a deduplicating run (src/lookup/lk_hot.c): each live id is looked up in the hot set
 * (hkeys NULL: none), and a miss is inserted into the dedup table dkeys/dvals (local row -> index;
 * empty entries all ones, left empty again by eht_lk_expand_codes). The first inserter of a row takes
 * the next index (counters[1], zero before; one atomic per warp) and writes the row there in uniq;
 * code[p] gets what eht_lk_expand_codes needs. counters[0] += dead ids. Lanes of a warp walk the ids
 * together so the index can be taken by warp. With hits (an adapting hot set): every 16th position is a
 * sample: a hit counts into hits[slot], a miss's local row goes into the ring (ring_head counts). */
extern "C" __global__ void __launch_bounds__(256)
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
				for (h = (loc * 0x9E3779B97F4A7C15ull) >> dshift;; h = (h + 1) & dmask) {
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
		const unsigned mask = __ballot_sync(0xffffffffu, won);
		if (mask) {
			unsigned long long first = 0;
			if (lane == __ffs(mask) - 1)
				first = atomicAdd(&counters[1], (unsigned long long)__popc(mask));
			first = __shfl_sync(0xffffffffu, first, __ffs(mask) - 1);
			if (won) {
				const uint32_t idx = (uint32_t)(first + __popc(mask & ((1u << lane) - 1)));
				dvals[h] = idx;
				uniq[idx] = (uint32_t)loc;
			}
		}
	}
	for (int o = WARP / 2; o; o >>= 1)
		dead += __shfl_down_sync(0xffffffffu, dead, o);
	if (lane == 0 && dead)
		atomicAdd(&counters[0], (unsigned long long)dead);
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
			 else if (c & HOT)
				 *src = hot_rows + (unsigned long long)(c & ~HOT) * rb;
			 else
				 *src = compact + (unsigned long long)dvals[c] * rb;
			 *dst = out + p * ob;
		 },
		 [&](unsigned long long first, int nrows) {
			 if (lane < nrows) {
				 const uint32_t c = code[first + lane];
				 if (c != DEAD32 && !(c & HOT))
					 dkeys[c] = ~0ull;
			 }
		 });
}
