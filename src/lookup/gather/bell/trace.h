/* SPDX-License-Identifier: Apache-2.0 */
/* trace.h: EHT_TEST_BELL_TRACE=1 (trace.c): the stage-in kernel stamps GPU times into b->gtrace
 * (start, ring, chunk 0 ready, last chunk ready, end, the copies of chunk 0 and of the last one),
 * and waits at its ring for two CPU marks it stamps on its clock too; the poller sums them per
 * batch-size class, with the CPU's own times (waiting for free staging, the gather), and the sums
 * are printed when the engine goes. Tracing costs the ringing block a round trip. */
#ifndef EHT_LOOKUP_GATHER_TRACE_H
#define EHT_LOOKUP_GATHER_TRACE_H

#include "lookup/gather/bell/requests.h"

/* EHT_TEST_BELL_TRACE: when each worker of the pool took its first task of one gather, counted from
 * the gather's start: how long waking the sleeping pool takes (a worker that was spinning joins at
 * once). Workers past LK_JOIN_WORKERS are not counted. */
#define LK_JOIN_WORKERS 1025 /* the pool's 1024 threads and the caller */
struct lk_joins {
	double t0;
	atomic_uchar seen[LK_JOIN_WORKERS];
	atomic_uint n;
	atomic_uint_fast64_t last_ns, sum_ns;
};
/* Zeroes jn and starts its clock; returns jn. */
struct lk_joins *eht_lk_joins_start(struct lk_joins *jn);
/* Worker `worker` took a task: counted the first time. Safe from every worker at once. */
void eht_lk_joins_seen(struct lk_joins *jn, unsigned worker);
/* Adds jn's count and times to b's sums of class k. */
void eht_lk_joins_add(struct lk_bell *b, int k, const struct lk_joins *jn);

/* The CPU's mark i (EHT_LK_TRACE_SERVED: the poller serves the request, EHT_LK_TRACE_POOL: the pool
 * starts its gather); nothing without a trace. */
void eht_lk_trace_mark(struct lk_bell *b, int i);
/* Adds the GPU times of the last finished stage-in launch to the sums; started_next: a new launch
 * was served (its start and ring are kept for the next call). */
void eht_lk_trace_take(struct lk_bell *b, bool started_next);
/* The last launch's times taken, the sums printed on stderr (with a trace). */
void eht_lk_trace_report(eht_lookup *lk);

#endif
