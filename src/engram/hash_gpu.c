/* SPDX-License-Identifier: Apache-2.0 */
/* hash_gpu.c: Engram hashing on the GPU (src/cuda/kernels/engram_hash.cu). */
#include "engram/engram_impl.h"
#include "util/err.h"

void engram_gpu_free(struct eht_engram_layout *l) { (void)l; }

int eht_engram_hash_gpu(const eht_engram_layout *l, const struct eht_engram_batch *b, int32_t *d_rows, void *stream)
{
	return eht_err(ENOTSUP, "eht_engram_hash_gpu: not built yet");
}

int eht_engram_hash_gpu_copy(const eht_engram_layout *l, const struct eht_engram_batch *b, int32_t *rows, int device)
{
	return eht_err(ENOTSUP, "eht_engram_hash_gpu_copy: not built yet");
}
