/* SPDX-License-Identifier: Apache-2.0 */
/* bell_predict.c: a captured request's ring period, for the poller's sleeps (bell_predict.h). */
#include "lookup/strategy/bell_predict.h"

#define STEADY_MIN_S 1e-3 /* shorter periods leave few naps to save */
#define GUARD_MIN_S 300e-6

void bell_period_ring(struct bell_period *h, double t)
{
	if (h->last > 0 && t > h->last)
		h->p[h->n++ % BELL_PERIODS] = t - h->last;
	h->last = t;
}

void bell_period_reset(struct bell_period *h) { h->n = 0; }

int bell_period_wake(const struct bell_period *h, double now, double *wake)
{
	if (h->last <= 0 || now - h->last > 1.0)
		return 0;
	if (h->n < BELL_PERIODS)
		return -1;
	double lo = h->p[0], hi = h->p[0];
	for (unsigned i = 1; i < BELL_PERIODS; i++) {
		lo = h->p[i] < lo ? h->p[i] : lo;
		hi = h->p[i] > hi ? h->p[i] : hi;
	}
	if (lo < STEADY_MIN_S || hi - lo > 0.1 * lo)
		return -1;
	if (now > h->last + 2 * hi)
		return 0;
	double guard = 0.25 * lo;
	guard = guard > GUARD_MIN_S ? guard : GUARD_MIN_S;
	guard = 4 * (hi - lo) > guard ? 4 * (hi - lo) : guard;
	*wake = h->last + lo - guard;
	return 1;
}
