/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_layer.c: loading the "layer" kernels and launching them through the device layer. */
#include "gpu/gpu_layer.h"

#include <string.h>

#include "gpu/fatbin.h"
#include "util/err.h"

#define LAYER_THREADS 256

int eht_gpu_layer_load(int device, struct eht_gpu_layer *g)
{
	memset(g, 0, sizeof(*g));
	if (!eht_fatbin_find("layer"))
		return eht_err(ENOTSUP, "engram layer: this build of libeht has no GPU kernels (nvcc was not found)");
	int rc = eht_dev_use(device);
	if (!rc)
		rc = eht_dev_attr(device, EHT_DEV_ATTR_SM_COUNT, &g->sms);
	if (!rc)
		rc = eht_dev_module_load(&g->mod, "layer");
	if (!rc && !(rc = eht_dev_kernel(&g->ids, g->mod, "eht_layer_ids")))
		rc = eht_dev_kernel(&g->restride, g->mod, "eht_layer_restride");
	if (rc) {
		eht_gpu_layer_unload(g);
		return eht_err_prefix(rc, "loading the engram layer kernels on GPU %d", device);
	}
	return 0;
}

void eht_gpu_layer_unload(struct eht_gpu_layer *g)
{
	if (g->mod)
		eht_dev_module_unload(g->mod);
	memset(g, 0, sizeof(*g));
}

/* Enough blocks for n items, at most four per SM: these kernels are short and sit beside the model. */
static unsigned grid_for(const struct eht_gpu_layer *g, uint64_t n)
{
	uint64_t b = (n + LAYER_THREADS - 1) / LAYER_THREADS, cap = 4 * (uint64_t)(g->sms > 0 ? g->sms : 1);
	return (unsigned)(b == 0 ? 1 : b < cap ? b : cap);
}

int eht_gpu_layer_ids(const struct eht_gpu_layer *g, eht_stream s, const struct eht_lk_idview *v, eht_dptr out)
{
	void *args[] = {(void *)v, &out};
	return eht_dev_launch(g->ids, grid_for(g, v->tokens * v->part), LAYER_THREADS, 0, s, args, 0);
}

int eht_gpu_layer_restride(const struct eht_gpu_layer *g, eht_stream s, eht_dptr src, uint64_t tokens, uint64_t w,
			   eht_dptr dst, uint64_t dst_stride)
{
	unsigned long long t = tokens, ww = w, ds = dst_stride;
	void *args[] = {&src, &t, &ww, &dst, &ds};
	return eht_dev_launch(g->restride, grid_for(g, tokens * w / 16 + 1), LAYER_THREADS, 0, s, args, 0);
}
