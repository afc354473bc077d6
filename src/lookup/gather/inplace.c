/* SPDX-License-Identifier: Apache-2.0 */
/* inplace.c: the GPU's in-place gather of a piece (inplace.h). */
#include "lookup/gather/gather.h"
#include "lookup/gather/inplace.h"

int eht_lk_inplace_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			 eht_dptr out, eht_stream s)
{
	eht_dptr d;
	int rc = eht_lk_piece_ids_dev(lk, ids, ids_dev, id64 ? 8 : 4, n, s, &d);
	if (!rc)
		rc = eht_lk_counters_zero(lk, s);
	if (rc)
		return rc;
	struct eht_gpu_ids gi = {.ids = d, .id64 = id64, .off = off, .lo = lk->lo, .hi = lk->hi};
	return eht_gpu_direct(&lk->g, s, &gi, n, &lk->tab, out, lk->fmt, lk->d_counters);
}
