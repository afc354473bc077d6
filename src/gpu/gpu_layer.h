/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_layer.h: the "layer" kernels (src/gpu/kernels/layer.cu) behind an engine's own call: its
 * strided [T, H] ids into one rank's flat ids, and dense rows into a strided output. Every launch is
 * asynchronous on `s` (capturable) and returns 0 or -errno. */
#ifndef EHT_GPU_GPU_LAYER_H
#define EHT_GPU_GPU_LAYER_H

#include <stdint.h>

#include "gpu/dev.h"
#include "gpu/kernels/idview.h"

struct eht_gpu_layer {
	eht_module mod;
	eht_kernel ids, restride;
	int sms;
};

/* Loads the image on the current context of `device`: 0, -ENOTSUP (no kernels built), driver errors. */
int eht_gpu_layer_load(int device, struct eht_gpu_layer *g);
void eht_gpu_layer_unload(struct eht_gpu_layer *g);
/* out[t * part + j] (int64 or int32, v->out64) = the live row of ids[t, head_start + j] or -1. */
int eht_gpu_layer_ids(const struct eht_gpu_layer *g, eht_stream s, const struct eht_lk_idview *v, eht_dptr out);
/* dst + t * dst_stride <- src + t * w for t < tokens. */
int eht_gpu_layer_restride(const struct eht_gpu_layer *g, eht_stream s, eht_dptr src, uint64_t tokens, uint64_t w,
			   eht_dptr dst, uint64_t dst_stride);

#endif
