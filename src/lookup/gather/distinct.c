/* SPDX-License-Identifier: Apache-2.0 */
/* distinct.c: the distinct misses of a dedup pass into the compact buffer (distinct.h): the GPU's
 * share read in place (on the fork's side stream when the CPU takes the rest at the same time), the
 * CPU's through a compact doorbell request, whose row count exists only on the GPU. */
#include "lookup/gather/bell/bell.h"
#include "lookup/gather/distinct.h"
#include "lookup/gather/gather.h"

int eht_lk_gather_distinct(eht_lookup *lk, struct lk_piece *p, const struct lk_distinct *d, float share)
{
	eht_stream s = p->s;
	bool split = share > 0.0f && share < 1.0f;
	eht_stream gs = split ? lk->fork.side : s;
	int rc = eht_lk_counters_zero(lk, s); /* (the dedup pass zeroed them: a no-op) */
	if (!rc && split)
		rc = eht_lk_fork(lk, s);
	if (!rc && share > 0.0f)
		rc = eht_gpu_gather_uniq(&lk->g, gs, d->uniq, lk->d_counters, share, p->n, &lk->tab, d->compact);
	if (!rc && split)
		rc = eht_dev_event_record(lk->fork.ev_join, lk->fork.side);
	if (!rc && share < 1.0f) {
		p->dead_published = p->publish_dead;
		rc = eht_lk_bell_compact(lk, d->uniq, d->ucount, d->compact, share, p->n, s, p->capture, p->publish_dead);
	}
	if (!rc && split)
		rc = eht_lk_join(lk, s);
	return rc;
}
