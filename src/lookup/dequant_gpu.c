/* SPDX-License-Identifier: Apache-2.0 */
/* dequant_gpu.c: eht_lookup_dequant, raw Engram rows to bf16 on the caller's stream (the engine's expand
 * kernel over the whole GPU), for engines that look rows up raw beside the model and dequantize them
 * between their own kernels. */
#include <errno.h>
#include <stdint.h>

#include "eht.h"
#include "gpu/dev.h"
#include "gpu/gpu_lookup.h"
#include "lookup/core.h"
#include "util/err.h"

int eht_lookup_dequant(eht_lookup *lk, const void *raw, uint64_t count, void *out, void *stream)
{
	if (!lk)
		return eht_err(EINVAL, "eht_lookup_dequant: NULL engine");
	if (count == 0)
		return 0;
	if (!raw || !out)
		return eht_err(EINVAL, "eht_lookup_dequant: NULL %s", raw ? "out" : "raw");
	if (lk->rb != EHT_ENGRAM_ROW_BYTES)
		return eht_err(EINVAL, "eht_lookup_dequant: table %s has %u-byte rows; bf16 needs packed Engram rows of %d",
			       lk->ti.name, (unsigned)lk->rb, EHT_ENGRAM_ROW_BYTES);
	if (!lk->gpu || !lk->kernels)
		return eht_err(ENOTSUP, "eht_lookup_dequant: engine of table %s has no GPU kernels", lk->ti.name);
	if (count > UINT32_MAX)
		return eht_err(EINVAL, "eht_lookup_dequant: %llu rows in one call (at most 2^32-1)",
			       (unsigned long long)count);
	if ((uintptr_t)out & 15)
		return eht_err(EINVAL, "eht_lookup_dequant: out must be 16-byte aligned");
	if (eht_dev_use(lk->device))
		return -ENODEV;
	if (!eht_dev_is_device_ptr(raw) || !eht_dev_is_device_ptr(out))
		return eht_err(EINVAL, "eht_lookup_dequant: %s is not GPU memory",
			       eht_dev_is_device_ptr(raw) ? "out" : "raw");
	/* No SM cap and no priority: on the caller's stream the kernel runs between the caller's
	 * kernels, not beside them, and the whole GPU gets it over soonest. */
	struct eht_gpu_lookup g = lk->g;
	g.sm_cap = 0;
	g.urgent = false;
	return eht_gpu_expand(&g, (eht_stream)stream, 0, count, (eht_dptr)(uintptr_t)raw, lk->rb,
			      (eht_dptr)(uintptr_t)out, EHT_LOOKUP_BF16);
}
