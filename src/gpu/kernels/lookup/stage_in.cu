/* SPDX-License-Identifier: Apache-2.0 */
/* stage_in.cu: the GPU half of a stream-triggered CPU gather (HOST with ids on the GPU, graph replays):
 * doorbell, wait for the CPU's staged chunks, copy them out. */
#include "rows.cuh"

/* ------------------------------------------------------------------ stream-triggered CPU gather */
__device__ __forceinline__ unsigned long long gtime(void) { return eht_gtime(); }

/* The GPU half of HOST with ids the CPU cannot see when the call is made (ids in GPU memory, or a
 * CUDA-graph replay; src/lookup/gather/bell/bell.c). Every block first copies its share of the ids into pinned
 * host memory h_ids (when ids is not NULL: no separate copy on the stream; with a view, view.ids not
 * 0, the flat ids of an engine's [T, H] ids, idview.h: no layer kernel before); the last block to finish
 * that rings the doorbell (a host-mapped word) that the CPU side polls. The CPU pool then gathers
 * chunk c (rows [c*chunk, ...)) into staging slot c % nslots and publishes it with
 * ready[slot] = tag | (c + 1) (tag: the request, so that runs on two streams never take each other's
 * chunks; and its dead ids in chunk_dead[c]). A chunk's rows are cut into `parts` (with parts_done:
 * GPU memory, nslots words, zero between launches); each block takes the items (chunk, part)
 * blockIdx.x, blockIdx.x + gridDim.x, ...: waits for the chunk, copies its part from the pinned
 * staging in place (cache-volatile loads: the CPU rewrites staging between launches) into out (raw
 * rows), and the chunk's last part to finish frees the slot (ready[slot] = 0) for the CPU's next
 * chunk; for a bf16 lookup (fmt) each block then dequantizes its part's raw rows from out (GPU
 * memory, in L2) into xout. The last block to finish moves counters[0] to *h_dead (host-mapped;
 * when not NULL: the run's last piece) and zeroes it, so that a count kept beside the sync words
 * (counters = sync + 2, a run's only piece) needs no memset before the next launch (nothing reads a
 * published count on the GPU, and every other run zeroes the shared counters first). Every value
 * written is a function of the launch's arguments only, so a captured graph replays it unchanged.
 * sync[0..1]: device words, zero between launches (the last block resets them). The grid must fit
 * on the GPU at once beside other work (the caller keeps it at most one block per SM): blocks wait
 * on the CPU. A compact request (ucount
 * not NULL) gathers the distinct rows of a dedup pass (eht_lk_dedup_mark): ids are its u32 local rows,
 * of which this launch takes [split_at(*ucount, share), *ucount) into out (the compact rows) at the
 * same positions; that count exists only on the GPU, so the ringing block writes it to *h_count (host-
 * mapped) for the CPU first.
 *
 * With mirror (GPU memory, nslots words, zero between launches), the last block is a relay: it polls
 * every slot's ready word in host memory and copies each new value of this launch into mirror, where
 * the other blocks wait for their chunks. One block's reads cross PCIe instead of every block's (on
 * the lent H200 a decode batch's chunk 0 was ready 33 us after the doorbell this way, 50-60 us with
 * its 119 blocks polling host memory). A block frees a slot in mirror before it frees it in host
 * memory, so that the relay's copy of the slot's next value is never overwritten. */
__device__ __forceinline__ void relay_ready(const unsigned *ready, unsigned *mirror, unsigned tag, unsigned nslots,
					    unsigned long long nchunks)
{
	extern __shared__ unsigned last[]; /* the value relayed last per slot */
	__shared__ unsigned long long seen;
	const unsigned used = (unsigned)min((unsigned long long)nslots, nchunks);
	for (unsigned s = threadIdx.x; s < used; s += blockDim.x)
		last[s] = 0;
	if (threadIdx.x == 0)
		seen = 0;
	__syncthreads();
	for (;;) {
		unsigned got = 0;
		for (unsigned s = threadIdx.x; s < used; s += blockDim.x) {
			unsigned v = ((volatile const unsigned *)ready)[s];
			/* this launch's chunk c has tag | (c + 1); every chunk comes once into its slot */
			if (v != last[s] && v - tag - 1u < nchunks) {
				last[s] = v;
				((volatile unsigned *)mirror)[s] = v;
				got++;
			}
		}
		if (got)
			atomicAdd(&seen, (unsigned long long)got);
		__syncthreads();
		const bool done = seen >= nchunks;
		__syncthreads();
		if (done)
			return;
		if (!got)
			eht_nanosleep(100);
	}
}

/* A staged chunk is contiguous in staging and in out: the whole block copies its bytes with U loads
 * in flight per thread before their stores. Every load of pinned host memory costs a PCIe round
 * trip of microseconds, so a chunk must take as few of them as possible: the warp row mover (4 rows
 * a warp in flight) took 5-11 us for a 48-row decode chunk and 36-80 us for a 256-row prefill chunk
 * on the lent H200, all of it after the CPU's last row for the last chunk. */
template <typename V, int U>
__device__ __forceinline__ void block_copy_cv(const uint8_t *src, uint8_t *dst, unsigned long long bytes)
{
	const V *s = reinterpret_cast<const V *>(src);
	V *d = reinterpret_cast<V *>(dst);
	const unsigned W = (unsigned)(bytes / sizeof(V)), step = blockDim.x; /* a chunk is < 4 GiB */
	for (unsigned base = threadIdx.x; base < W; base += step * U) {
		V v[U];
#pragma unroll
		for (int u = 0; u < U; u++)
			if (base + u * step < W)
				v[u] = eht_ldcv(s + base + u * step);
#pragma unroll
		for (int u = 0; u < U; u++)
			if (base + u * step < W)
				d[base + u * step] = v[u];
	}
}

/* vec: the widest word that divides the row size and aligns both (eht_gpu_vec), so every chunk's
 * bytes too. 16-byte words (rows of a multiple of 16 bytes) keep 8 in flight a thread, 32 KiB a
 * round trip for the block; narrower words 2, within the register cap below. Engram's 264-byte rows
 * take 8-byte words (4 KiB a round trip): 16-byte words for them (chunks and parts cut even) halved
 * a decode chunk's copy on an H100 (6.4 to 3.1 us) but moved no lookup's time (BENCHMARKS.md,
 * 2026-12-06). */
__device__ __forceinline__ void block_copy_chunk(const uint8_t *src, uint8_t *dst, unsigned long long bytes, int vec)
{
	switch (vec) {
	case 16: block_copy_cv<uint4, 8>(src, dst, bytes); break;
	case 8: block_copy_cv<uint2, 2>(src, dst, bytes); break;
	case 4: block_copy_cv<uint32_t, 2>(src, dst, bytes); break;
	default: block_copy_cv<uint8_t, 2>(src, dst, bytes); break;
	}
}

/* 64 registers a thread at most (4 blocks' worth per SM), as before the block copy: one block on
 * every SM waits for the CPU beside the model's kernels and must leave them the SM's registers. */
extern "C" __global__ void __launch_bounds__(EHT_LK_THREADS, 4)
eht_lk_stage_in(const uint32_t *ids, unsigned long long id_words, uint32_t *h_ids, const uint8_t *staging,
		unsigned *ready, unsigned tag, const unsigned long long *chunk_dead, unsigned chunk, unsigned nslots,
		unsigned long long n, uint32_t rb, uint8_t *out, int vec, uint8_t *xout, int fmt,
		unsigned long long *counters,
		unsigned long long *h_dead, unsigned *bell, unsigned *sync, unsigned long long *trace,
		const unsigned long long *ucount, float share, unsigned long long *h_count, unsigned *mirror,
		unsigned parts, unsigned *parts_done, struct eht_lk_idview view)
{
	const bool relay = mirror != NULL && gridDim.x > 1;
	const unsigned nblocks = relay ? gridDim.x - 1 : gridDim.x; /* blocks that copy chunks */
	if (trace && blockIdx.x == 0 && threadIdx.x == 0)
		trace[0] = gtime();
	if (ucount) {
		const unsigned long long u = *ucount, first = split_at(u, share);
		n = min(n, u - first);
		id_words = n;
		ids += first;
		out += first * rb;
	}
	if (view.ids) {
		eht_idview_flatten(view, h_ids);
		__threadfence_system();
	} else if (ids) {
		for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < id_words;
		     i += (unsigned long long)gridDim.x * blockDim.x)
			h_ids[i] = ids[i];
		__threadfence_system();
	}
	__syncthreads();
	if (threadIdx.x == 0 && atomicAdd(&sync[0], 1u) == gridDim.x - 1) {
		if (h_count)
			*(volatile unsigned long long *)h_count = n;
		if (trace) /* before the ring: the CPU reads it when it sees the bell */
			trace[1] = gtime();
		__threadfence_system();
		*(volatile unsigned *)bell = 1u;
		__threadfence_system();
		if (trace) { /* the CPU's marks (gather/bell/trace.c) on this clock; 1 ms at most each */
			volatile unsigned long long *m = trace;
			const int marks[2] = {EHT_LK_TRACE_SERVED, EHT_LK_TRACE_POOL};
			for (int k = 0; k < 2; k++) {
				const int i = marks[k];
				const unsigned long long t0 = gtime();
				while (!m[i] && gtime() - t0 < 1000000ull)
					;
				m[i + 1] = m[i] ? gtime() : 0;
				m[i] = 0;
			}
			__threadfence_system();
		}
	}
	const unsigned long long nchunks = (n + chunk - 1) / chunk;
	if (relay && blockIdx.x == nblocks)
		relay_ready(ready, mirror, tag, nslots, nchunks);
	/* Work items are (chunk, part): a chunk's rows are cut into parts copied by as many blocks, so the
	 * last chunks' copies take one round trip each instead of several after the CPU's last row
	 * (parts > 1 only with parts_done: the launcher sees to it). */
	for (unsigned long long w = blockIdx.x; blockIdx.x < nblocks && w < nchunks * parts; w += nblocks) {
		const unsigned long long c = w / parts;
		const unsigned part = (unsigned)(w - c * parts);
		const unsigned slot = (unsigned)(c % nslots);
		unsigned long long dead = 0;
		if (threadIdx.x == 0) {
			volatile unsigned *r = (relay ? mirror : ready) + slot;
			unsigned ns = relay ? 32 : 64, ns_max = relay ? 256 : 1024; /* GPU memory polls cost little */
			while (*r != (tag | (unsigned)(c + 1))) {
				eht_nanosleep(ns);
				if (ns < ns_max)
					ns *= 2;
			}
			__threadfence_system();
			/* its dead count is read now and added after the copy: the two round trips overlap */
			if (part == 0)
				dead = ((volatile const unsigned long long *)chunk_dead)[c];
			if (trace && part == 0 && c == 0)
				trace[2] = gtime();
			if (trace && part == 0 && c == nchunks - 1)
				trace[3] = gtime();
		}
		__syncthreads();
		const unsigned long long b = c * chunk, e = min(n, b + chunk), rp = (e - b + parts - 1) / parts;
		const unsigned long long pb = min(e, b + part * rp), pe = min(e, pb + rp);
		block_copy_chunk(staging + (unsigned long long)slot * chunk * rb + (pb - b) * rb, out + pb * rb,
				 (pe - pb) * rb, vec);
		__syncthreads(); /* every load of the slot has completed (its values were stored) */
		if (trace && threadIdx.x == 0 && part == 0 && (c == 0 || c == nchunks - 1)) /* chunk 0's / the last one's copy done */
			trace[c == 0 ? 9 : 10] = gtime();
		if (threadIdx.x == 0) {
			/* the chunk's last part to finish frees the slot (and zeroes the count for its next use) */
			bool last = parts == 1;
			if (!last) {
				__threadfence();
				last = atomicAdd(&parts_done[slot], 1u) == parts - 1;
				if (last)
					atomicExch(&parts_done[slot], 0u);
			}
			if (last) {
				if (relay) /* before the CPU can see the slot free and publish its next chunk */
					*(volatile unsigned *)(mirror + slot) = 0u;
				__threadfence_system();
				*(volatile unsigned *)(ready + slot) = 0u;
			}
			if (dead)
				atomicAdd(&counters[0], dead);
		}
		/* bf16: the part's raw rows dequantized from out, which this block has just written (the
		 * barrier above makes them visible to it), while the CPU gathers later chunks: no expand
		 * kernel after this one */
		if (fmt == FMT_BF16)
			for_rows_in(pb, pe, threadIdx.x / WARP, blockDim.x / WARP, rb, FMT_BF16, vec,
				    [&](unsigned long long p, const uint8_t **src, uint8_t **dst) {
					    *src = out + p * rb;
					    *dst = xout + p * 512ull;
				    },
				    no_after);
	}
	if (threadIdx.x == 0) {
		__threadfence();
		if (atomicAdd(&sync[1], 1u) == gridDim.x - 1) {
			if (h_dead) {
				*(volatile unsigned long long *)h_dead = atomicExch(&counters[0], 0ull);
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
