/* SPDX-License-Identifier: Apache-2.0 */
/* trace.c: EHT_TEST_BELL_TRACE=1, where stream-triggered lookups spend their time (trace.h): the
 * stage-in kernel's GPU stamps, the CPU's marks it stamps too, and what is printed when the engine
 * goes (the GPU times' medians, the CPU times' means). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/kernels/lookup_const.h"
#include "lookup/gather/bell/trace.h"
#include "util/clock.h"

/* EHT_TEST_BELL_TRACE: the CPU's marks (gtrace[EHT_LK_TRACE_SERVED]: the poller serves the request,
 * [EHT_LK_TRACE_POOL]: the pool starts its gather), which the ringing block waits for and stamps (in
 * the word after each) on the GPU's clock. */
static bool trace_cpu_mark(int i) { return i == EHT_LK_TRACE_SERVED || i == EHT_LK_TRACE_POOL; }

struct lk_joins *eht_lk_joins_start(struct lk_joins *jn)
{
	memset(jn, 0, sizeof(*jn));
	jn->t0 = eht_now_s();
	return jn;
}

void eht_lk_joins_seen(struct lk_joins *jn, unsigned worker)
{
	if (worker >= LK_JOIN_WORKERS || atomic_load_explicit(&jn->seen[worker], memory_order_relaxed) ||
	    atomic_exchange_explicit(&jn->seen[worker], 1, memory_order_relaxed))
		return;
	double dt = eht_now_s() - jn->t0;
	uint64_t ns = dt > 0 ? (uint64_t)(dt * 1e9) : 0, last = atomic_load_explicit(&jn->last_ns, memory_order_relaxed);
	while (ns > last && !atomic_compare_exchange_weak_explicit(&jn->last_ns, &last, ns, memory_order_relaxed,
								    memory_order_relaxed))
		;
	atomic_fetch_add_explicit(&jn->sum_ns, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&jn->n, 1, memory_order_relaxed);
}

void eht_lk_joins_add(struct lk_bell *b, int k, const struct lk_joins *jn)
{
	b->st_joined[k] += atomic_load(&jn->n);
	b->st_join_last_s[k] += (double)atomic_load(&jn->last_ns) * 1e-9;
	b->st_join_sum_s[k] += (double)atomic_load(&jn->sum_ns) * 1e-9;
}

void eht_lk_trace_mark(struct lk_bell *b, int i)
{
	if (b->gtrace)
		((volatile uint64_t *)b->gtrace)[i] = 1;
}

void eht_lk_trace_sample(struct lk_trace_samples *s, int k, const double us[LK_TR_METRICS])
{
	size_t at = (size_t)(s->n[k]++ % LK_TRACE_KEEP);
	for (int m = 0; m < LK_TR_METRICS; m++)
		s->us[k][m][at] = (float)us[m];
}

static size_t kept(const struct lk_trace_samples *s, int k)
{
	return s->n[k] < LK_TRACE_KEEP ? (size_t)s->n[k] : LK_TRACE_KEEP;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

double eht_lk_trace_median(const struct lk_trace_samples *s, int k, int m)
{
	size_t n = kept(s, k);
	if (!n)
		return 0;
	float v[LK_TRACE_KEEP];
	memcpy(v, s->us[k][m], n * sizeof(float));
	qsort(v, n, sizeof(float), cmp_float);
	return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + (double)v[n / 2]);
}

double eht_lk_trace_mean(const struct lk_trace_samples *s, int k, int m)
{
	size_t n = kept(s, k);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += s->us[k][m][i];
	return n ? sum / (double)n : 0;
}

/* EHT_TEST_BELL_TRACE: keeps the GPU times of the last finished stage-in launch. Called as the
 * next launch is served (started_next) or at teardown. By the time a launch rings it has already
 * stamped its own start and ring over the previous launch's, so those two are kept here when it is
 * served, and matched with its chunk and end stamps (g[2..4]) one launch later. */
void eht_lk_trace_take(struct lk_bell *b, bool started_next)
{
	volatile uint64_t *g = b->gtrace;
	if (!g)
		return;
	uint64_t t[11] = {b->gprev[0], b->gprev[1], g[2], g[3], g[4], 0, g[6], 0, g[8], g[9], g[10]};
	/* Every stamp is taken from the ring on (chunk 0 and the last chunk may be ready in either
	 * order); a launch with a stamp missing or before its ring (block 0 starting late) is skipped. */
	bool ok = t[0] && t[1] >= t[0];
	for (int i = 2; i < 11; i++)
		ok = ok && (trace_cpu_mark(i) || t[i] >= t[1]);
	if (ok && b->gs) {
		const double us[LK_TR_METRICS] = {
			[LK_TR_RING] = (double)(t[1] - t[0]) * 1e-3,  [LK_TR_ANS] = (double)(t[6] - t[1]) * 1e-3,
			[LK_TR_POOL] = (double)(t[8] - t[1]) * 1e-3,  [LK_TR_FIRST] = (double)(t[2] - t[1]) * 1e-3,
			[LK_TR_SPAN] = (double)(t[3] - t[1]) * 1e-3,  [LK_TR_END] = (double)(t[4] - t[1]) * 1e-3,
			[LK_TR_COPY0] = (double)(t[9] - t[2]) * 1e-3, [LK_TR_COPYL] = (double)(t[10] - t[3]) * 1e-3};
		eht_lk_trace_sample(b->gs, b->gclass, us);
	}
	b->gprev[0] = started_next ? g[0] : 0;
	b->gprev[1] = started_next ? g[1] : 0;
	for (int i = 2; i < 11; i++)
		if (!trace_cpu_mark(i))
			g[i] = 0;
}

void eht_lk_trace_report(eht_lookup *lk)
{
	struct lk_bell *b = lk->bell;
	eht_lk_trace_take(b, false);
	static const char *const cls[LK_AUTO_NCLASS] = {"tiny", "small", "decode", "prefill"};
	for (int k = 0; k < LK_AUTO_NCLASS && b->gs; k++) {
		const struct lk_trace_samples *g = b->gs;
		if (!g->n[k])
			continue;
		double md[LK_TR_METRICS];
		for (int m = 0; m < LK_TR_METRICS; m++)
			md[m] = eht_lk_trace_median(g, k, m);
		fprintf(stderr, "eht: %s (%s): GPU side of %llu stage-in launches (class %s), medians: start to doorbell %.1f us, "
			"doorbell to the poller's answer %.1f us, to the pool's start %.1f us, to chunk 0 ready %.1f us, "
			"to the last chunk ready %.1f us, to the kernel's end %.1f us; copying chunk 0 took %.1f us, "
			"the last chunk %.1f us (means: the answer %.1f us, the end %.1f us)\n", lk->ti.name, lk->st->name,
			(unsigned long long)g->n[k], cls[k], md[LK_TR_RING], md[LK_TR_ANS], md[LK_TR_POOL], md[LK_TR_FIRST],
			md[LK_TR_SPAN], md[LK_TR_END], md[LK_TR_COPY0], md[LK_TR_COPYL], eht_lk_trace_mean(g, k, LK_TR_ANS),
			eht_lk_trace_mean(g, k, LK_TR_END));
	}
	for (int k = 0; k < LK_AUTO_NCLASS; k++)
		if (b->st_reqs[k] && b->trace)
			fprintf(stderr, "eht: %s (%s): %llu stream-triggered requests of %.0f rows on average: CPU waited "
				"%.1f us for free staging, gathered in %.1f us (%.1f M rows/s; chunk 0 after %.1f us); %.1f threads "
				"took tasks, the last %.1f us after the start (on average %.1f us)\n", lk->ti.name,
				lk->st->name, (unsigned long long)b->st_reqs[k],
				(double)b->st_rows[k] / (double)b->st_reqs[k], b->st_wait_s[k] / (double)b->st_reqs[k] * 1e6,
				b->st_gather_s[k] / (double)b->st_reqs[k] * 1e6,
				(double)b->st_rows[k] / b->st_gather_s[k] / 1e6, b->st_first_s[k] / (double)b->st_reqs[k] * 1e6,
				(double)b->st_joined[k] / (double)b->st_reqs[k], b->st_join_last_s[k] / (double)b->st_reqs[k] * 1e6,
				b->st_joined[k] ? b->st_join_sum_s[k] / (double)b->st_joined[k] * 1e6 : 0.0);
}
