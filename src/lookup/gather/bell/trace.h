/* SPDX-License-Identifier: Apache-2.0 */
/* trace.h: EHT_TEST_BELL_TRACE=1 (trace.c): the stage-in kernel stamps GPU times into b->gtrace
 * (start, ring, chunk 0 ready, last chunk ready, end, the copies of chunk 0 and of the last one),
 * and waits at its ring for two CPU marks it stamps on its clock too; the poller keeps them per
 * batch-size class, with the CPU's own times (waiting for free staging, the gather), and their
 * medians (the GPU's) and means (the CPU's) are printed when the engine goes. Tracing costs the
 * ringing block a round trip. */
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

/* Each class's GPU times of its last LK_TRACE_KEEP launches, in microseconds, for medians: a mean is
 * the steady launches' time plus a few outliers' (a ring found at the end of a poller's 1 ms nap
 * after a pause weighs 500 us), and hid which was which. */
enum {
	LK_TR_RING,  /* start -> ids copied, doorbell rung */
	LK_TR_ANS,   /* ring -> the GPU saw the poller's answer */
	LK_TR_POOL,  /* ring -> the GPU saw the pool's start */
	LK_TR_FIRST, /* ring -> chunk 0 ready */
	LK_TR_SPAN,  /* ring -> the last chunk ready */
	LK_TR_END,   /* ring -> the kernel's end */
	LK_TR_COPY0, /* chunk 0 ready -> copied */
	LK_TR_COPYL, /* the last chunk ready -> copied */
	LK_TR_METRICS
};
#define LK_TRACE_KEEP 1024
struct lk_trace_samples {
	uint64_t n[LK_AUTO_NCLASS]; /* launches taken (the last LK_TRACE_KEEP kept) */
	float us[LK_AUTO_NCLASS][LK_TR_METRICS][LK_TRACE_KEEP];
};
/* Keeps one launch's times us[LK_TR_METRICS] in class k (over the oldest once LK_TRACE_KEEP are kept). */
void eht_lk_trace_sample(struct lk_trace_samples *s, int k, const double us[LK_TR_METRICS]);
/* The median and the mean of metric m over class k's kept launches; 0 with none. */
double eht_lk_trace_median(const struct lk_trace_samples *s, int k, int m);
double eht_lk_trace_mean(const struct lk_trace_samples *s, int k, int m);

/* The CPU's mark i (EHT_LK_TRACE_SERVED: the poller serves the request, EHT_LK_TRACE_POOL: the pool
 * starts its gather); nothing without a trace. */
void eht_lk_trace_mark(struct lk_bell *b, int i);
/* Adds the GPU times of the last finished stage-in launch to the sums; started_next: a new launch
 * was served (its start and ring are kept for the next call). */
void eht_lk_trace_take(struct lk_bell *b, bool started_next);
/* The last launch's times taken, the sums printed on stderr (with a trace). */
void eht_lk_trace_report(eht_lookup *lk);

#endif
