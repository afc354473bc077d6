/* SPDX-License-Identifier: Apache-2.0 */
/* layer.cu: the "layer" kernel image (loaded by src/gpu/gpu_layer.c): what an engine's own call hands
 * eht (a [T, H] view of its hash output, any strides; an output of any token stride) turned into
 * what the lookup engine takes (one flat id list; dense rows) and back. */
#include <stdint.h>

#include "gpu/kernels/compat.h"

/* out[t * part + j] = the row of ids[t, head_start + j], or -1 (a dead id: a zero row) where the column
 * is a padded head (>= n_heads) or the id lies outside [vocab_start, vocab_end). shift moves a live
 * id onto the table's rows (a table that stores only the rank's range from its row 0). out holds int64
 * (out64) or int32 ids (every live row below 2^31: half the bytes a lookup moves for its ids). */
extern "C" __global__ void eht_layer_ids(const void *ids, int id64, unsigned long long tokens, long long s_tok,
					 long long s_head, unsigned head_start, unsigned part, unsigned n_heads,
					 long long vocab_start, long long vocab_end, long long shift, void *out, int out64)
{
	const unsigned long long n = tokens * part;
	for (unsigned long long p = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; p < n;
	     p += (unsigned long long)gridDim.x * blockDim.x) {
		const unsigned long long t = p / part;
		const unsigned c = head_start + (unsigned)(p - t * part);
		long long r = -1;
		if (c < n_heads) {
			const long long at = (long long)t * s_tok + (long long)c * s_head;
			const long long v = id64 ? ((const long long *)ids)[at] : (long long)((const int *)ids)[at];
			if (v >= vocab_start && v < vocab_end)
				r = v + shift;
		}
		if (out64)
			((long long *)out)[p] = r;
		else
			((int *)out)[p] = (int)r;
	}
}

/* Token t's w bytes from src + t * w to dst + t * dst_stride (a strided output, e.g. PACKED rows of
 * one rank inside a wider buffer); 16-byte words where every address and length allows. */
extern "C" __global__ void eht_layer_restride(const unsigned char *src, unsigned long long tokens,
					      unsigned long long w, unsigned char *dst, unsigned long long dst_stride)
{
	const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
	const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	if (((w | dst_stride | (unsigned long long)src | (unsigned long long)dst) & 15) == 0) {
		const unsigned long long words = w / 16, n = tokens * words;
		for (unsigned long long i = first; i < n; i += step) {
			const unsigned long long t = i / words, k = i - t * words;
			((uint4 *)(dst + t * dst_stride))[k] = ((const uint4 *)(src + t * w))[k];
		}
		return;
	}
	const unsigned long long n = tokens * w;
	for (unsigned long long i = first; i < n; i += step) {
		const unsigned long long t = i / w, k = i - t * w;
		dst[t * dst_stride + k] = src[t * w + k];
	}
}
