/* SPDX-License-Identifier: Apache-2.0 */
/* direct.c: the DIRECT strategy: one GPU kernel reads each row in place from the GPU-readable table,
 * in the given order. No state of its own: host ids pass through the engine's ids copy (parts.c). */
#include "lookup/lookup_impl.h"

int eht_lk_direct_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			eht_dptr out, eht_stream s)
{
	eht_dptr d;
	int rc = eht_lk_piece_ids_dev(lk, ids, ids_dev, id64 ? 8 : 4, n, s, &d);
	if (rc)
		return rc;
	struct eht_gpu_ids gi = {.ids = d, .id64 = id64, .off = off, .lo = lk->lo, .hi = lk->hi};
	return eht_gpu_direct(&lk->g, s, &gi, n, lk->ti.device_ptr, lk->rb, out, lk->fmt, lk->d_counters);
}

static int direct_gpu(eht_lookup *lk, struct lk_piece *p)
{
	return eht_lk_direct_piece(lk, p->ids, p->ids_dev, p->id64, p->off, p->n, (eht_dptr)(uintptr_t)p->out, p->s);
}

const struct lk_strategy eht_lk_direct = {
	.id = EHT_LOOKUP_DIRECT,
	.name = "direct",
	.caps = LK_GPU_TABLE | LK_CAPTURABLE,
	.gpu_piece = direct_gpu,
};
