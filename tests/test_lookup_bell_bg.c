/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_bell_bg.c: the CPU side of background-mode requests (gather/bell/serve_bg.c) on the CPU
 * alone, run under TSan by `make tsan`: this thread plays the stream's memory operations (ring the doorbell,
 * wait for each group's ready value, copy the group out of staging, write 0), the process's poller and
 * pool gather. Eager requests and a "captured" one replayed with new ids, one to LK_BG_GROUPS groups,
 * dead ids (zero rows, counted into h_dead before the last group is ready), requests back to back reusing the
 * staging. And compact ones (the distinct misses of a dedup pass, their count known only to the GPU,
 * which copies it to h_count before it rings): every group of the bound is published, those past the
 * count (all of them for a count of zero) empty, and h_dead is left to the stream. Each of them also
 * pushed (the CPU copies every group to the request's destination itself and then sets the request's
 * done word, the one thing the stream waits for; no ready word is touched), and a pushed bf16 request of
 * Engram rows whose groups the CPU also dequantizes (push_out) before the done word. */
#include <math.h>
#include <string.h>

#include "lookup/gather/bell/bell.h"
#include "lookup/gather/bell/poller.h"
#include "lookup/gather/bell/requests.h"
#include "lookup/gather/bell/trace.h"
#include "testutil.h"
#include "util/cpu.h"
#include "util/pool.h"

#define RB 40

static uint8_t *g_table;
static const uint64_t g_rows = 7000;

static void join_task(void *arg, size_t t, unsigned worker)
{
	(void)t;
	eht_lk_joins_seen(arg, worker);
	eht_lk_joins_seen(arg, worker);
}

/* Plays the stream's side of background request idx of n rows: rings the doorbell, then per group
 * waits for its ready value, copies it out of staging into out and writes 0. Returns h_dead as read
 * when the last group was ready (the CPU writes a plain request's dead count before that). */
static uint64_t play_stream(eht_lookup *lk, unsigned idx, size_t n, uint8_t *out)
{
	struct lk_bell *b = lk->bell;
	uint32_t groups, grows;
	eht_lk_bell_bg_geom(lk, n, &groups, &grows);
	CHECK(groups >= 1 && (size_t)groups * grows >= n && (size_t)(groups - 1) * grows < n);
	atomic_store_explicit(&b->words[idx], 1, memory_order_release); /* cuStreamWriteValue32(bell, 1) */
	uint64_t dead_seen = UINT64_MAX;
	for (uint32_t g = 0; g < groups; g++) {
		while (atomic_load_explicit(&b->words[LK_REQS + g], memory_order_acquire) != LK_READY(idx, g))
			eht_cpu_relax();
		if (g + 1 == groups)
			dead_seen = *(volatile uint64_t *)lk->h_dead;
		size_t r0 = (size_t)g * grows, m = n - r0 < grows ? n - r0 : grows;
		memcpy(out + r0 * RB, b->staging + r0 * RB, m * RB);
		atomic_store_explicit(&b->words[LK_REQS + g], 0, memory_order_release);
	}
	return dead_seen;
}

/* Plays the stream's side of pushed request idx: the ring kernel clears the done word and rings,
 * then the stream waits for done. Returns h_dead as read then. The rows are in out (the CPU's). */
static uint64_t play_stream_push(eht_lookup *lk, unsigned idx)
{
	struct lk_bell *b = lk->bell;
	_Atomic uint32_t *done = eht_lk_bell_done(b, lk, idx);
	atomic_store_explicit(done, 0, memory_order_relaxed);
	atomic_store_explicit(&b->words[idx], 1, memory_order_release);
	while (atomic_load_explicit(done, memory_order_acquire) != 1)
		eht_cpu_relax();
	uint64_t dead_seen = *(volatile uint64_t *)lk->h_dead;
	for (size_t s = 0; s < lk->max_chunks; s++) /* no ready word is the pushed way's */
		CHECK(atomic_load(&b->words[LK_REQS + s]) == 0);
	return dead_seen;
}

/* Prepares (and, eager, arms) a background request for ids (id64) or local rows (compact), pushed
 * into out when out is not NULL. */
static unsigned prepare_bg(eht_lookup *lk, const void *ids, int id64, size_t n, bool compact, bool captured,
			   uint8_t *out)
{
	unsigned idx = 0;
	CHECK_RC(eht_lk_bell_prepare(lk, ids, false, id64, 0, n, compact, true, (eht_dptr)(uintptr_t)out, 0, captured,
				     &idx),
		 0);
	if (!captured)
		eht_lk_bell_arm(lk, idx);
	return idx;
}

static void run_bg(eht_lookup *lk, const int64_t *ids, size_t n, bool captured, bool push)
{
	uint8_t *out = malloc(n * RB + 1);
	unsigned idx = prepare_bg(lk, ids, 1, n, false, captured, push ? out : NULL);
	uint64_t dead_seen = push ? play_stream_push(lk, idx) : play_stream(lk, idx, n, out);
	uint64_t want_dead = 0;
	CHECK(t_rows_compare(g_table, g_rows, RB, ids, n, out, &want_dead) == 0);
	CHECK(dead_seen == want_dead); /* the dead count is written before the last group is ready */
	CHECK_RC(eht_lk_bell_take_error(lk), 0);
	free(out);
}

static void run_bg_compact(eht_lookup *lk, const uint32_t *rows, size_t n, size_t count, bool captured, bool push)
{
	uint8_t *out = malloc(n * RB + 1);
	unsigned idx = prepare_bg(lk, rows, 0, n, true, captured, push ? out : NULL);
	*(volatile uint64_t *)lk->h_dead = 12345;  /* the stream's to write, not the CPU's */
	lk->bell->h_count[idx] = count; /* the stream's copy of the GPU's count */
	if (push)
		play_stream_push(lk, idx);
	else
		play_stream(lk, idx, n, out);
	uint64_t bad = 0;
	for (size_t i = 0; i < count; i++)
		bad += memcmp(out + i * RB, g_table + (size_t)rows[i] * RB, RB) != 0;
	CHECK(bad == 0);
	CHECK(*(volatile uint64_t *)lk->h_dead == 12345);
	CHECK_RC(eht_lk_bell_take_error(lk), 0);
	free(out);
}

/* Pushed requests with push_out over Engram rows: every group's rows dequantized into push_out (and
 * the raw rows in push_dst) before the done word, dead ids as zero rows. */
static void pushed_dequant(uint64_t *rs)
{
	const uint64_t nrows = 3000;
	uint8_t *rows = t_rand_rows(nrows, EHT_ENGRAM_ROW_BYTES, rs);
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(rows, nrows, EHT_ENGRAM_ROW_BYTES, -1, "bg-bf16", &t), 0);
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				    .format = EHT_LOOKUP_BF16, .device = -1, .numa_node = -1, .threads = 3,
				    .max_batch = 20000, .spin_us = 50};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk || eht_lk_bell_init(lk) != 0) {
		CHECK(0);
		eht_lookup_destroy(lk);
		eht_table_close(t);
		free(rows);
		return;
	}
	static int64_t ids[20000];
	static uint16_t want[256];
	const size_t n = 20000; /* LK_BG_GROUPS groups */
	uint8_t *raw = malloc(n * EHT_ENGRAM_ROW_BYTES);
	uint16_t *bf = malloc(n * 512);
	for (size_t i = 0; i < n; i++) {
		uint64_t x = t_rand(rs);
		ids[i] = x % 13 == 0 ? -1 : (int64_t)(x % nrows);
	}
	const uint64_t dq0 = atomic_load(&lk->bell->pushed_dequants);
	unsigned idx = 0;
	CHECK_RC(eht_lk_bell_prepare(lk, ids, false, 1, 0, n, false, true, (eht_dptr)(uintptr_t)raw,
				     (eht_dptr)(uintptr_t)bf, false, &idx),
		 0);
	eht_lk_bell_arm(lk, idx);
	play_stream_push(lk, idx);
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < 0)
			memset(want, 0, sizeof(want));
		else
			eht_engram_dequant_row(rows + (size_t)ids[i] * EHT_ENGRAM_ROW_BYTES, want);
		bad += memcmp(bf + i * 256, want, sizeof(want)) != 0;
	}
	CHECK(bad == 0);
	uint32_t groups, grows;
	eht_lk_bell_bg_geom(lk, n, &groups, &grows);
	CHECK(atomic_load(&lk->bell->pushed_dequants) - dq0 == groups);
	CHECK_RC(eht_lk_bell_take_error(lk), 0);
	free(raw);
	free(bf);
	eht_lookup_destroy(lk);
	eht_table_close(t);
	free(rows);
}

/* EHT_TEST_BELL_TRACE's count of the workers that joined a gather: each worker once, however many of
 * the job's tasks it takes; none past LK_JOIN_WORKERS; the last join no earlier than the mean. */
static void pool_joins(void)
{
	eht_pool *pool = NULL;
	CHECK_RC(eht_pool_create(4, -1, 0, &pool), 0);
	if (!pool)
		return;
	static struct lk_joins jn;
	for (int rep = 0; rep < 3; rep++) {
		eht_lk_joins_start(&jn);
		eht_pool_run(pool, 1000, join_task, &jn);
		eht_lk_joins_seen(&jn, LK_JOIN_WORKERS); /* not counted */
		unsigned flags = 0;
		for (unsigned w = 0; w < LK_JOIN_WORKERS; w++)
			flags += atomic_load(&jn.seen[w]);
		unsigned n = atomic_load(&jn.n);
		CHECK(n >= 1 && n <= 5 && n == flags);
		CHECK(atomic_load(&jn.sum_ns) <= (uint64_t)n * atomic_load(&jn.last_ns));
	}
	struct lk_bell b = {0};
	eht_lk_joins_add(&b, 3, &jn);
	eht_lk_joins_add(&b, 3, &jn);
	CHECK(b.st_joined[3] == 2u * atomic_load(&jn.n) && b.st_joined[0] == 0);
	CHECK(b.st_join_last_s[3] > 0 || atomic_load(&jn.last_ns) == 0);
	eht_pool_destroy(pool);
}

/* EHT_TEST_BELL_TRACE's GPU times: medians and means per class over the last LK_TRACE_KEEP launches. */
static void trace_medians(void)
{
	static struct lk_trace_samples g;
	CHECK(eht_lk_trace_median(&g, 2, LK_TR_ANS) == 0 && eht_lk_trace_mean(&g, 2, LK_TR_ANS) == 0);
	const double ans[] = {4, 5, 500, 4.5, 6};
	for (int i = 0; i < 5; i++) {
		double us[LK_TR_METRICS] = {0};
		us[LK_TR_ANS] = ans[i];
		us[LK_TR_END] = 70 + i;
		eht_lk_trace_sample(&g, 2, us);
	}
	CHECK(g.n[2] == 5 && g.n[3] == 0);
	CHECK(eht_lk_trace_median(&g, 2, LK_TR_ANS) == 5.0);        /* the outlier does not move it */
	CHECK(fabs(eht_lk_trace_mean(&g, 2, LK_TR_ANS) - 103.9) < 1e-9); /* the mean it does */
	CHECK(eht_lk_trace_median(&g, 2, LK_TR_END) == 72.0);
	CHECK(eht_lk_trace_median(&g, 1, LK_TR_END) == 0);          /* another class: none */
	/* past LK_TRACE_KEEP launches the oldest go: the kept are 10 .. LK_TRACE_KEEP + 9 */
	for (int i = 0; i < LK_TRACE_KEEP + 10; i++) {
		double us[LK_TR_METRICS] = {0};
		us[LK_TR_SPAN] = i;
		eht_lk_trace_sample(&g, 3, us);
	}
	CHECK(g.n[3] == LK_TRACE_KEEP + 10);
	CHECK(eht_lk_trace_median(&g, 3, LK_TR_SPAN) == 9.5 + LK_TRACE_KEEP / 2.0);
	CHECK(fabs(eht_lk_trace_mean(&g, 3, LK_TR_SPAN) - (9.5 + LK_TRACE_KEEP / 2.0)) < 1e-9);
}

int main(void)
{
	trace_medians();
	pool_joins();
	uint64_t rs = 11;
	g_table = t_rand_rows(g_rows, RB, &rs);
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(g_table, g_rows, RB, -1, "bg", &t), 0);
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				    .device = -1, .numa_node = -1, .threads = 3, .max_batch = 20000, .spin_us = 50};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk)
		return t_done();
	CHECK_RC(eht_lk_bell_init(lk), 0);
	static int64_t ids[20000];
	static const size_t ns[] = {1, 17, 2048, 2049, 6144, 16384, 20000};
	const uint64_t nns = sizeof(ns) / sizeof(ns[0]);
	for (int push = 0; push < 2; push++) {
	const uint64_t reqs0 = atomic_load(&lk->bell->bg_reqs);
	for (int rep = 0; rep < 3; rep++)
		for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
			for (size_t i = 0; i < ns[k]; i++) {
				uint64_t x = t_rand(&rs);
				ids[i] = x % 11 == 0 ? -(int64_t)(x % 5) - 1 : x % 19 == 0 ? (int64_t)g_rows + 1 : (int64_t)(x % g_rows);
			}
			run_bg(lk, ids, ns[k], false, push);
		}
	uint32_t groups, grows;
	eht_lk_bell_bg_geom(lk, 20000, &groups, &grows);
	CHECK(groups == LK_BG_GROUPS);
	/* A "captured" request: the same ids buffer, new ids before each replay; traced (the pool's joins
	 * counted: at least one thread, at most the 3 workers and the serving one, each request; the
	 * count is added before the request is done, so it is read here without a race). */
	const int k9000 = LK_AUTO_CLASS(9000);
	const uint64_t joined0 = lk->bell->st_joined[k9000];
	lk->bell->trace = true;
	for (int replay = 0; replay < 4; replay++) {
		for (size_t i = 0; i < 9000; i++)
			ids[i] = (int64_t)((t_rand(&rs) + (uint64_t)replay) % (g_rows + 10)) - 5;
		run_bg(lk, ids, 9000, true, push);
	}
	lk->bell->trace = false;
	const uint64_t joined = lk->bell->st_joined[k9000] - joined0;
	CHECK(joined >= 4 && joined <= 4 * 4);
	CHECK(atomic_load(&lk->bell->bg_reqs) - reqs0 == 3 * nns + 4);
	/* Compact requests: bound n, count rows (0, a part of one group, several groups, all). */
	static uint32_t rows[20000];
	static const size_t cs[][2] = {{6144, 0}, {6144, 100}, {6144, 4500}, {6144, 6144}, {20000, 13001}};
	for (size_t k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
		for (size_t i = 0; i < cs[k][0]; i++)
			rows[i] = (uint32_t)(t_rand(&rs) % g_rows);
		run_bg_compact(lk, rows, cs[k][0], cs[k][1], k == 2, push);
	}
	CHECK(atomic_load(&lk->bell->bg_reqs) - reqs0 == 3 * nns + 4 + 5);
	CHECK(atomic_load(&lk->bell->bg_compact_reqs) == 5 * (uint64_t)(push + 1));
	CHECK(lk->bell->pushed_reqs == (push ? 3 * nns + 4 + 5 : 0));
	}
	CHECK(atomic_load(&lk->bell->pushed_dequants) == 0); /* no push_out, no dequant */
	eht_lookup_destroy(lk);
	eht_table_close(t);
	free(g_table);
	pushed_dequant(&rs);
	return t_done();
}
