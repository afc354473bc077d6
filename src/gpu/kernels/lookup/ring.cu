/* SPDX-License-Identifier: Apache-2.0 */
/* ring.cu: the doorbell of a pushed background request (src/lookup/gather/bell/bg.c), one small
 * kernel instead of the stream's copy of the ids and its memory-op write: on the lent H200 a graph's
 * launch call pays about 1.7 us for each copy node that touches host memory and 1.3 us for each
 * memory op, and next to nothing for a kernel node. */

/* Copies the request's ids into pinned host memory h_ids (id_words words; with a view (view.ids not
 * 0: an engine's [T, H] ids, idview.h) its flat ids instead; or, for a compact request (ucount not
 * NULL), the first min(*ucount, n) u32 distinct rows, their number going to *h_count),
 * writes *dead to *h_dead (both not NULL: a compact request's dead count is its dedup pass's), clears
 * the request's done word (which the CPU's copies set once the rows are in GPU memory, and which the
 * stream waits for after this kernel), then rings *bell. The last block to finish its share rings:
 * sync is a device word, zero between launches (that block resets it). Every value written depends
 * only on the arguments, so a captured graph replays it as is. Block 0 writes the done word and the
 * counts first, so each block's one system fence covers them too and the ring follows the last
 * block's count with no fence of its own: a split request's ring kernel is on the model's stream
 * (lookup/split.h), where with three fences in a row (and 4 ids a thread) it took 7.7 us of a decode
 * step on an H100 (CUPTI); with one fence (and one id a thread) the split pieces' decode step paid
 * 36 us over the pieces without lookups back to back against 47 (docs/BENCHMARKS.md, round 48). */
extern "C" __global__ void __launch_bounds__(EHT_LK_THREADS)
eht_lk_ring(const uint32_t *ids, unsigned long long id_words, uint32_t *h_ids, const unsigned long long *ucount,
	    unsigned long long n, unsigned long long *h_count, const unsigned long long *dead,
	    unsigned long long *h_dead, unsigned *done, unsigned *bell, unsigned *sync, struct eht_lk_idview view)
{
	unsigned long long words = id_words, u = 0;
	if (ucount) {
		u = min(*ucount, n);
		words = u;
	}
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		if (h_count)
			*(volatile unsigned long long *)h_count = u;
		if (h_dead)
			*(volatile unsigned long long *)h_dead = *(volatile const unsigned long long *)dead;
		*(volatile unsigned *)done = 0u;
	}
	if (view.ids)
		eht_idview_flatten(view, h_ids);
	else
		for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < words;
		     i += (unsigned long long)gridDim.x * blockDim.x)
			h_ids[i] = ids[i];
	__threadfence_system(); /* this block's ids (block 0: and the words above) before its count */
	__syncthreads();
	if (threadIdx.x == 0 && atomicAdd(sync, 1u) == gridDim.x - 1) {
		__threadfence(); /* every block counted after its fence: all of it is visible before the ring */
		*(volatile unsigned *)bell = 1u;
		atomicExch(sync, 0u);
	}
}
