/* SPDX-License-Identifier: Apache-2.0 */
/* poller.h: the process's one doorbell poller (poller.c), and a request's arming around its
 * enqueue. The poller polls every doorbell while requests come and for EHT_BELL_SPIN_US after the
 * last, then sleeps until an eager call's kick wakes it, in naps while captured requests may ring
 * (nothing beside a replay wakes it: a host node that would costs the replay tens of microseconds),
 * spinning through the window where one that rings at a steady period is due. */
#ifndef EHT_LOOKUP_GATHER_POLLER_H
#define EHT_LOOKUP_GATHER_POLLER_H

#include "lookup/core.h"

/* lk's doorbells join the poller's list (the thread starts with the first engine); leave it (the
 * thread stops with the last). */
int eht_lk_poller_join(eht_lookup *lk);
void eht_lk_poller_leave(eht_lookup *lk);

/* The window in which the poller expects a captured request's next ring (ring_clock.h), as it last
 * chose it: false when it expects none. For the tests. */
bool eht_lk_poller_window(double *from, double *until);

/* Arms request idx (eager: a ring slot) for the poller and wakes it; a captured request is armed
 * once, when eht_lk_bell_prepare makes it. */
void eht_lk_bell_arm(eht_lookup *lk, unsigned idx);
/* The start of every stream-triggered request's enqueue: armed before the stream can ring. */
void eht_lk_bell_start(eht_lookup *lk, unsigned idx, bool capturing);
/* Its end, given what the enqueue returned (rc, returned): an eager request records its done event
 * on s; on an error the request is disarmed. */
int eht_lk_bell_finish(eht_lookup *lk, eht_stream s, unsigned idx, bool capturing, int rc);

#endif
