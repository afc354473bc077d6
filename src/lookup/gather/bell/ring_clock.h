/* SPDX-License-Identifier: Apache-2.0 */
/* ring_clock.h: when a captured request will ring next (ring_clock.c). A captured lookup rings once
 * per replay of its graph, and a model replays its step graph at a steady period, but nothing wakes
 * the poller for such a ring: an idle poller finds it at the end of a nap. With the request's period
 * known, the poller spins through the window where the next ring is due instead. */
#ifndef EHT_LOOKUP_GATHER_RING_CLOCK_H
#define EHT_LOOKUP_GATHER_RING_CLOCK_H

#include <stdbool.h>

/* One request's rings (seconds on eht_now_s's clock); all zero: none seen. The poller's alone. */
struct lk_ring_clock {
	double last;     /* when the last ring was seen */
	double period;   /* the interval before it */
	unsigned steady; /* intervals in a row within LK_RING_JITTER of the one before */
};

/* The shortest period predicted: below it the poller's spin after each ring already covers the next
 * (its spin follows the idle gaps up to 1 ms, poller.c). The longest: a request rarer than this is
 * not a model's step. */
#define LK_RING_PERIOD_MIN 1e-3
#define LK_RING_PERIOD_MAX 1.0
/* An interval within this fraction of the one before continues a steady run. */
#define LK_RING_JITTER 0.2
/* Intervals alike in a row before the next ring is predicted. */
#define LK_RING_STEADY 2

/* Records a ring seen at time t. */
void eht_lk_ring_seen(struct lk_ring_clock *c, double t);

/* The window [*from, *until] in which the next ring is due, when the rings have come at a steady
 * period in [LK_RING_PERIOD_MIN, LK_RING_PERIOD_MAX]; false otherwise. */
bool eht_lk_ring_window(const struct lk_ring_clock *c, double *from, double *until);

#endif
