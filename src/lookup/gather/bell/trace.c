/* SPDX-License-Identifier: Apache-2.0 */
/* trace.c: EHT_TEST_BELL_TRACE=1, where stream-triggered lookups spend their time (trace.h): the
 * stage-in kernel's GPU stamps, the CPU's marks it stamps too, and the sums printed when the engine
 * goes. */
#include <stdio.h>
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

/* EHT_TEST_BELL_TRACE: adds the GPU times of the last finished stage-in launch to the sums. Called as the
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
	int k = b->gclass;
	if (ok) {
		b->g_n[k]++;
		b->g_ring_s[k] += (double)(t[1] - t[0]) * 1e-9;  /* start -> ids copied, doorbell rung */
		b->g_first_s[k] += (double)(t[2] - t[1]) * 1e-9; /* ring -> chunk 0 ready (CPU noticed, gathered it) */
		b->g_span_s[k] += (double)(t[3] - t[1]) * 1e-9;  /* ring -> last chunk ready */
		b->g_tail_s[k] += (double)(t[4] - t[1]) * 1e-9;  /* ring -> kernel done */
		b->g_ans_s[k] += (double)(t[6] - t[1]) * 1e-9;   /* ring -> the GPU saw the poller's answer */
		b->g_pool_s[k] += (double)(t[8] - t[1]) * 1e-9;  /* ring -> the GPU saw the pool's start */
		b->g_copy0_s[k] += (double)(t[9] - t[2]) * 1e-9; /* chunk 0 ready -> copied */
		b->g_copyl_s[k] += (double)(t[10] - t[3]) * 1e-9; /* the last chunk ready -> copied */
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
	for (int k = 0; k < LK_AUTO_NCLASS; k++)
		if (b->g_n[k])
			fprintf(stderr, "eht: %s (%s): GPU side of %llu stage-in launches (class %s): start to doorbell %.1f us, "
				"doorbell to the poller's answer %.1f us, to the pool's start %.1f us, to chunk 0 ready %.1f us, "
				"to the last chunk ready %.1f us, to the kernel's end %.1f us; copying chunk 0 took %.1f us, "
				"the last chunk %.1f us\n", lk->ti.name, lk->st->name,
				(unsigned long long)b->g_n[k], k == 3 ? "prefill" : k == 2 ? "decode" : k == 1 ? "small" : "tiny", b->g_ring_s[k] / (double)b->g_n[k] * 1e6,
				b->g_ans_s[k] / (double)b->g_n[k] * 1e6, b->g_pool_s[k] / (double)b->g_n[k] * 1e6,
				b->g_first_s[k] / (double)b->g_n[k] * 1e6, b->g_span_s[k] / (double)b->g_n[k] * 1e6,
				b->g_tail_s[k] / (double)b->g_n[k] * 1e6, b->g_copy0_s[k] / (double)b->g_n[k] * 1e6,
				b->g_copyl_s[k] / (double)b->g_n[k] * 1e6);
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
