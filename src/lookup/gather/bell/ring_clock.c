/* SPDX-License-Identifier: Apache-2.0 */
/* ring_clock.c: a captured request's ring period and the window of its next ring (ring_clock.h). */
#include "lookup/gather/bell/ring_clock.h"

void eht_lk_ring_seen(struct lk_ring_clock *c, double t)
{
	if (c->last > 0 && t > c->last) {
		double iv = t - c->last, off = iv > c->period ? iv - c->period : c->period - iv;
		bool alike = c->period > 0 && off <= LK_RING_JITTER * c->period;
		c->steady = alike ? (c->steady < LK_RING_STEADY ? c->steady + 1 : c->steady) : 0;
		c->period = iv;
	} else {
		c->steady = 0;
		c->period = 0;
	}
	c->last = t;
}

bool eht_lk_ring_window(const struct lk_ring_clock *c, double *from, double *until)
{
	if (c->steady < LK_RING_STEADY || c->period < LK_RING_PERIOD_MIN || c->period > LK_RING_PERIOD_MAX)
		return false;
	/* A model's step varies by a few percent (a prefill step of 47 ms by about 1 ms on the lent
	 * H100), and the ring is seen up to a nap late: 3 % of the period either side, 0.1 to 2 ms. */
	double margin = 0.03 * c->period;
	margin = margin < 1e-4 ? 1e-4 : margin > 2e-3 ? 2e-3 : margin;
	double due = c->last + c->period;
	*from = due - margin;
	*until = due + margin;
	return true;
}
