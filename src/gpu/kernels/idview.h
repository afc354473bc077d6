/* SPDX-License-Identifier: Apache-2.0 */
/* idview.h: one rank's view of an engine's [tokens, n_heads] id array (the engine's own call,
 * src/lookup/layer.c), which the kernels that read ids turn into the rank's flat ids on the way: the
 * layer kernel into GPU memory (eht_layer_ids), the doorbell kernels straight into the pinned ids the
 * CPU gathers from (eht_lk_ring, eht_lk_stage_in), one launch less per lookup. Plain C and CUDA C:
 * the struct is a kernel parameter, so host and device must lay it out alike (8-byte fields first). */
#ifndef EHT_GPU_KERNELS_IDVIEW_H
#define EHT_GPU_KERNELS_IDVIEW_H

struct eht_lk_idview {
	unsigned long long ids;      /* device address of ids[0][0]; 0: no view (flat ids as given) */
	long long s_tok, s_head;     /* strides in elements */
	long long vocab_start, vocab_end, shift;
	unsigned long long tokens;
	unsigned head_start, part, n_heads;
	int id64;  /* the engine's ids are int64 (else int32) */
	int out64; /* the flat ids are int64 (else int32) */
	int pad_;
};

#if defined(__CUDACC__) || defined(__HIPCC__)
/* Flat id p (token p / part, column head_start + p % part): the live row, shifted onto the table's
 * rows, or -1 (a dead id: a zero row) for a padded head (column >= n_heads) or an id outside
 * [vocab_start, vocab_end). */
__device__ __forceinline__ long long eht_idview_row(const struct eht_lk_idview &v, unsigned long long p)
{
	const unsigned long long t = p / v.part;
	const unsigned c = v.head_start + (unsigned)(p - t * v.part);
	if (c >= v.n_heads)
		return -1;
	const long long at = (long long)t * v.s_tok + (long long)c * v.s_head;
	const long long x = v.id64 ? ((const long long *)v.ids)[at] : (long long)((const int *)v.ids)[at];
	return x >= v.vocab_start && x < v.vocab_end ? x + v.shift : -1;
}

/* Every flat id of the view into out (int64 or int32 as v.out64 says), grid-stride over the launch. */
__device__ __forceinline__ void eht_idview_flatten(const struct eht_lk_idview &v, void *out)
{
	const unsigned long long n = v.tokens * v.part, step = (unsigned long long)gridDim.x * blockDim.x;
	for (unsigned long long p = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; p < n; p += step) {
		const long long r = eht_idview_row(v, p);
		if (v.out64)
			((long long *)out)[p] = r;
		else
			((int *)out)[p] = (int)r;
	}
}
#endif

#endif
