/* SPDX-License-Identifier: Apache-2.0 */
/* bell_predict.h: when the idle doorbell poller may sleep through most of the wait for a graph
 * replay's next ring (EHT_BELL_PREDICT=1; host_bell.c). A captured request rings without waking the
 * poller (a host node that would wake it costs a replay 40-90 us), so the idle poller naps 50 us at
 * a time, and each nap costs 15-25 us of CPU on a VM (its timer): ~0.8 ms of a 2.9 ms decode step,
 * ~12 ms of a 45 ms prefill one. A request replayed at a steady period rings about when expected:
 * the poller sleeps until a guard before the earliest expected ring, then naps as before. A ring
 * found when such a sleep ends came early (a miss): every request's history starts again. */
#ifndef EHT_LOOKUP_BELL_PREDICT_H
#define EHT_LOOKUP_BELL_PREDICT_H

#include <stdbool.h>

#define BELL_PERIODS 4 /* periods a request's prediction rests on */

/* One captured request's rings as the poller saw them (zeroed: none yet). */
struct bell_period {
	double last;            /* when its last ring was seen (s, eht_now_s); 0: never */
	double p[BELL_PERIODS]; /* the periods between its last rings, a ring buffer */
	unsigned n;             /* periods recorded since the last reset */
};

/* A ring of the request seen at t. */
void bell_period_ring(struct bell_period *h, double t);
/* Starts the request's history again from its last ring (after a miss). */
void bell_period_reset(struct bell_period *h);
/* What the request says about sleeping at `now`: 1 and *wake (when its next ring is expected, less
 * a guard: the larger of 300 us, a quarter of its period and four times its periods' spread) when
 * its period is steady (BELL_PERIODS of them, at least 1 ms, spread within a tenth of the
 * shortest); 0 when it says nothing (never rang, or silent for over a second, or steady but two
 * periods overdue: its graph is no longer replayed); -1 when it may ring any time (rang in the last
 * second, no steady period). */
int bell_period_wake(const struct bell_period *h, double now, double *wake);

#endif
