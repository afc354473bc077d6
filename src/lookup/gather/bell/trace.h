/* SPDX-License-Identifier: Apache-2.0 */
/* trace.h: EHT_TEST_BELL_TRACE=1 (trace.c): the stage-in kernel stamps GPU times into b->gtrace
 * (start, ring, chunk 0 ready, last chunk ready, end, the copies of chunk 0 and of the last one),
 * and waits at its ring for two CPU marks it stamps on its clock too; the poller sums them per
 * batch-size class, with the CPU's own times (waiting for free staging, the gather), and the sums
 * are printed when the engine goes. Tracing costs the ringing block a round trip. */
#ifndef EHT_LOOKUP_GATHER_TRACE_H
#define EHT_LOOKUP_GATHER_TRACE_H

#include "lookup/gather/bell/requests.h"

/* The CPU's mark i (EHT_LK_TRACE_SERVED: the poller serves the request, EHT_LK_TRACE_POOL: the pool
 * starts its gather); nothing without a trace. */
void eht_lk_trace_mark(struct lk_bell *b, int i);
/* Adds the GPU times of the last finished stage-in launch to the sums; started_next: a new launch
 * was served (its start and ring are kept for the next call). */
void eht_lk_trace_take(struct lk_bell *b, bool started_next);
/* The last launch's times taken, the sums printed on stderr (with a trace). */
void eht_lk_trace_report(eht_lookup *lk);

#endif
