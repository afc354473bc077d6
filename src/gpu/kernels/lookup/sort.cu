/* SPDX-License-Identifier: Apache-2.0 */
/* sort.cu: GPU radix sort + dedup of a batch of ids (SORTED): one block for decode-sized batches,
 * LSD passes over tiles (keys, hist, scan, scatter) then dedup (count, scan, assign) for larger ones. */
#include "rows.cuh" /* with the CUB block headers */
/* ------------------------------------------------------------------------ sort + dedup */
/* Keys are local rows (u32), dead ids get the key dead_key = local_rows, which sorts after every live
 * key; values are positions in the batch. */
#define SMALL_THREADS EHT_LK_SMALL_THREADS
#define SMALL_ITEMS EHT_LK_SMALL_ITEMS
#define TILE_THREADS EHT_LK_TILE_THREADS
#define TILE_ITEMS EHT_LK_TILE_ITEMS
#define TILE EHT_LK_TILE
#define RADIX_BITS EHT_LK_RADIX_BITS
#define RADIX EHT_LK_RADIX

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
extern "C" __global__ void __launch_bounds__(EHT_LK_SCAN_THREADS) eht_lk_scan(uint32_t *data, unsigned len, uint32_t *total)
{
	typedef cub::BlockScan<uint32_t, EHT_LK_SCAN_THREADS> Scan;
	__shared__ typename Scan::TempStorage st;
	__shared__ uint32_t carry;
	if (threadIdx.x == 0)
		carry = 0;
	__syncthreads();
	for (unsigned base = 0; base < len; base += EHT_LK_SCAN_THREADS) {
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
