/* SPDX-License-Identifier: Apache-2.0 */
/* inplace.c: the GPU's in-place gather of a piece (inplace.h). */
#include "lookup/gather/gather.h"
#include "lookup/gather/inplace.h"
#include "lookup/view.h"

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
	return eht_gpu_direct(&lk->g, s, &gi, n, &lk->tab, out, lk->fmt, lk->d_counters, NULL, 0);
}

/* The run's only piece (p->publish_dead): one kernel in all. It reads the engine's view itself (no
 * flatten kernel), and publishes its dead count to lk->h_dead (no memset before, no copy after). On
 * the lent H200 those were three of an eager decode call's four driver calls (xprof, a tp-4 rank's
 * T = 8: flatten 6.3 us, memset 2.3, copy 3.4, the gather 6.3) and three of its graph's four nodes. */
int eht_lk_inplace_whole(eht_lookup *lk, struct lk_piece *p)
{
	if (!p->publish_dead) {
		int rc = eht_lk_piece_flatten(p);
		return rc ? rc : eht_lk_inplace_piece(lk, p->ids, p->ids_dev, p->id64, p->off, p->n,
						      (eht_dptr)(uintptr_t)p->out, p->s);
	}
	const struct eht_lk_view *v = p->view;
	eht_dptr d = 0;
	int rc = v ? 0 : eht_lk_piece_ids_dev(lk, p->ids, p->ids_dev, p->id64 ? 8 : 4, p->n, p->s, &d);
	if (rc)
		return rc;
	struct eht_gpu_ids gi = {.ids = d, .id64 = v ? v->k.out64 : p->id64, .off = p->off, .lo = lk->lo, .hi = lk->hi};
	rc = eht_gpu_direct(&lk->g, p->s, &gi, p->n, &lk->tab, (eht_dptr)(uintptr_t)p->out, lk->fmt, lk->d_counters,
			    v ? &v->k : NULL, lk->d_h_dead);
	p->view = NULL;
	p->dead_published = rc == 0;
	return rc;
}
