/* SPDX-License-Identifier: Apache-2.0 */
/* layer.cu: the "layer" kernel image (loaded by src/gpu/gpu_layer.c): what an engine's own call hands
 * eht (a [T, H] view of its hash output, any strides; an output of any token stride) turned into
 * what the lookup engine takes (one flat id list; dense rows) and back. */
#include <stdint.h>

#include "gpu/kernels/compat.h"
#include "gpu/kernels/idview.h"

/* The rank's flat ids of an engine's [T, H] ids (idview.h): int64 or int32 (every live row below
 * 2^31: half the bytes a lookup moves for its ids). Where the lookup's doorbell kernel takes the view
 * itself (src/lookup/layer.c) this launch is not made. */
extern "C" __global__ void eht_layer_ids(struct eht_lk_idview v, void *out) { eht_idview_flatten(v, out); }

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
