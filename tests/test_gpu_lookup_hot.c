/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_lookup_hot.c: the GPU hot-row cache (eht_lookup_set_hotset). Every strategy on the memory,
 * host-NUMA and pinned-region tiers, raw and bf16: a hot set of a third of the rows is loaded, then the
 * table's copies of those rows are poisoned, so a hit served from anywhere but the cache differs from
 * the reference. Runs with hits, misses, repeats and dead ids (GPU ids, host ids, int32 ids with an
 * offset), eager and captured once then replayed with new ids; outputs poisoned before each run must
 * equal the CPU reference bit for bit, dead counts too. The same for GPU dedup without a hot set
 * (EHT_LOOKUP_GPU_DEDUP), and with AUTO's split of the distinct rows. Refreshes of the hot set (graph
 * replays across one, eager runs applying one, refreshes racing runs). Also the hot set's errors.
 * Exit 77 without a GPU. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_lookup_ref.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define NMAX 20000

/* The table as the CPU reference sees it (set by main). */
static struct t_lookup_ref g_lref;


static uint8_t *g_tab; /* the table's bytes (poisoned at hot rows while an engine runs) */
static int64_t *g_hot;
static size_t g_nhot;

static void poison_rows(const int64_t *rows, size_t n, int on)
{
	for (size_t i = 0; i < n; i++)
		if (on)
			memset(g_tab + (uint64_t)rows[i] * RB, 0x5a, RB);
		else
			memcpy(g_tab + (uint64_t)rows[i] * RB, g_lref.rows + (uint64_t)rows[i] * RB, RB);
}

static void poison_hot(int on) { poison_rows(g_hot, g_nhot, on); }

/* Eager runs with host ids and with int32 ids plus an offset. */
static void check_more(const char *tier, eht_lookup *lk, int strategy, int fmt, eht_stream s, uint64_t *rs)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB, n = 3000;
	int64_t *ids = malloc(n * 8);
	int32_t *ids32 = malloc(n * 4);
	eht_dptr d_out = 0, d_ids = 0;
	if (!ids || !ids32 || t_cu(eht_dev_alloc(&d_out, n * ob)) || t_cu(eht_dev_alloc(&d_ids, n * 4)))
		goto out;
	for (int k = 0; k < 2; k++) {
		t_lookup_ids(&g_lref, ids, n, rs);
		t_cu(eht_dev_memset8(d_out, 0xab, n * ob));
		t_cu(eht_dev_sync());
		int rc;
		if (k == 0) {
			rc = eht_lookup_run(lk, ids, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_out, s,
					    EHT_LOOKUP_RUN_STRATEGY(strategy) | EHT_LOOKUP_RUN_IDS_HOST, NULL);
		} else {
			for (size_t i = 0; i < n; i++)
				ids32[i] = (int32_t)(ids[i] - 7);
			t_cu(eht_dev_h2d(d_ids, ids32, n * 4));
			/* From pageable memory the copy may still be in flight when cuMemcpyHtoD returns, and
			 * s does not wait for the legacy stream: the ids must have landed first. */
			t_cu(eht_dev_sync());
			rc = eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT32, 7, n, (void *)(uintptr_t)d_out, s,
					    EHT_LOOKUP_RUN_STRATEGY(strategy), NULL);
		}
		if (rc) {
			fprintf(stderr, "%s %s fmt %d %s: %s\n", tier, eht_lookup_strategy_name(strategy), fmt,
				k ? "int32+offset" : "host ids", eht_last_error());
			t_failures++;
			continue;
		}
		t_cu(eht_dev_stream_sync(s));
		uint64_t dead = 0;
		size_t bad = t_lookup_compare(&g_lref, d_out, ids, n, fmt, &dead);
		if (bad || dead != eht_lookup_last_dead_count(lk))
			fprintf(stderr, "%s %s fmt %d %s: %zu rows differ, dead %llu want %llu\n", tier,
				eht_lookup_strategy_name(strategy), fmt, k ? "int32+offset" : "host ids", bad,
				(unsigned long long)eht_lookup_last_dead_count(lk), (unsigned long long)dead);
		CHECK(bad == 0);
		CHECK(dead == eht_lookup_last_dead_count(lk));
	}
out:
	if (d_out)
		eht_dev_free(d_out);
	if (d_ids)
		eht_dev_free(d_ids);
	free(ids);
	free(ids32);
}

/* mode 0: the hot set (its table copies poisoned); 1: EHT_LOOKUP_GPU_DEDUP alone; 2: the same, AUTO
 * forced to split the distinct rows between the GPU and the CPU (EHT_TEST_DEDUP_SHARE). */
static void check_table(const char *tier, eht_table *t, eht_stream s, uint64_t *rs)
{
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_table_get_info(t, &ti), 0);
	g_tab = ti.host;
	for (int mode = 0; mode < 3; mode++)
		for (int fmt = 0; fmt < 2; fmt++)
			for (int strategy = EHT_LOOKUP_AUTO; strategy < eht_lookup_strategy_count(); strategy++) {
				if ((strategy == EHT_LOOKUP_DIRECT || strategy == EHT_LOOKUP_SORTED) && !ti.device_ptr)
					continue;
				if (mode == 2 && (strategy != EHT_LOOKUP_AUTO || !ti.device_ptr))
					continue;
				if (mode == 2)
					t_setenv("EHT_TEST_DEDUP_SHARE", "0.4");
				struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strategy, .format = fmt, .device = 0,
							    .numa_node = -1, .threads = 4, .max_batch = 8192,
							    .flags = mode ? EHT_LOOKUP_GPU_DEDUP : 0};
				eht_lookup *lk = NULL;
				CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
				t_setenv("EHT_TEST_DEDUP_SHARE", NULL);
				if (!lk)
					continue;
				if (mode == 0) {
					CHECK_RC(eht_lookup_set_hotset(lk, g_hot, g_nhot), 0);
					CHECK(eht_lookup_hotset_rows(lk) == g_nhot);
					CHECK_RC(eht_lookup_set_hotset(lk, g_hot, g_nhot), -EBUSY);
					poison_hot(1);
				}
				char name[64];
				snprintf(name, sizeof(name), "%s/%s", tier, mode == 0 ? "hot" : mode == 1 ? "dedup" : "dedup-split");
				t_lookup_check_engine(&g_lref, name, lk, strategy, fmt, s, NMAX, true, rs);
				check_more(name, lk, strategy, fmt, s, rs);
				if (mode == 0)
					poison_hot(0);
				eht_lookup_destroy(lk);
			}
	fprintf(stderr, "tier %s done\n", tier);
}

/* One graph replay (or eager run) of n fresh ids into d_out, compared with the reference. */
static void run_compare(const char *what, eht_lookup *lk, eht_graph_exec ge, eht_stream s, int64_t *ids, eht_dptr d_ids,
			eht_dptr d_out, size_t n, uint64_t *rs)
{
	t_lookup_ids(&g_lref, ids, n, rs);
	t_cu(eht_dev_h2d(d_ids, ids, n * 8));
	t_cu(eht_dev_memset8(d_out, 0xab, n * RB));
	t_cu(eht_dev_sync());
	int rc = ge ? t_cu(eht_dev_graph_launch(ge, s))
		    : eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_out, s, 0, NULL);
	CHECK_RC(rc, 0);
	t_cu(eht_dev_stream_sync(s));
	uint64_t dead = 0;
	size_t bad = t_lookup_compare(&g_lref, d_out, ids, n, EHT_LOOKUP_RAW, &dead);
	if (bad)
		fprintf(stderr, "refresh %s: %zu rows differ\n", what, bad);
	CHECK(bad == 0);
}

struct updater {
	eht_lookup *lk;
	int64_t *rows;
	size_t n;
	atomic_bool stop;
	unsigned updates;
};

static void *updater_main(void *arg)
{
	struct updater *u = arg;
	uint64_t rs = 77;
	while (!atomic_load(&u->stop)) {
		size_t m = 1 + (size_t)(t_rand(&rs) % u->n);
		size_t at = (size_t)(t_rand(&rs) % (u->n - m + 1));
		if (eht_lookup_update_hotset(u->lk, u->rows + at, m) == 0)
			u->updates++;
	}
	return NULL;
}

/* A refresh (eht_lookup_update_hotset): a graph captured with the first set replays with the second
 * once it is applied between replays (the second set's table copies poisoned, the first's restored);
 * an eager run applies a pending refresh by itself; errors; and refreshes from another thread racing
 * eager runs, every output checked. */
static void check_refresh(eht_table *t, eht_stream s, uint64_t *rs)
{
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_table_get_info(t, &ti), 0);
	g_tab = ti.host;
	const size_t n = 5000;
	int64_t *ids = malloc(NMAX * 8), *h2 = malloc(g_lref.nrows * 8);
	size_t n2 = 0;
	for (uint64_t i = 0; i < g_lref.nrows; i++)
		if ((i * 7919) % 3 == 1 && n2 < g_nhot - 100)
			h2[n2++] = (int64_t)i;
	eht_dptr d_ids = 0, d_out = 0;
	if (t_cu(eht_dev_alloc(&d_ids, NMAX * 8)) || t_cu(eht_dev_alloc(&d_out, NMAX * RB)))
		goto out;
	static const int strategies[] = {EHT_LOOKUP_HOST, EHT_LOOKUP_AUTO, EHT_LOOKUP_DIRECT};
	for (size_t k = 0; k < sizeof(strategies) / sizeof(strategies[0]); k++) {
		struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strategies[k], .device = 0, .numa_node = -1,
					    .threads = 4, .max_batch = 8192};
		eht_lookup *lk = NULL;
		CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
		if (!lk)
			continue;
		CHECK_RC(eht_lookup_update_hotset(lk, h2, 10), -EINVAL); /* no hot set yet */
		CHECK_RC(eht_lookup_set_hotset(lk, g_hot, g_nhot), 0);
		poison_hot(1);
		eht_graph g = NULL;
		eht_graph_exec ge = NULL;
		t_lookup_ids(&g_lref, ids, n, rs);
		t_cu(eht_dev_h2d(d_ids, ids, n * 8));
		t_cu(eht_dev_sync());
		CHECK_RC(eht_dev_capture_begin(s, EHT_CAPTURE_GLOBAL), 0);
		int rc = eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_out, s, 0, NULL);
		CHECK_RC(eht_lookup_hotset_apply(lk, s), -EOPNOTSUPP);
		CHECK_RC(eht_dev_capture_end(s, &g), 0);
		CHECK_RC(rc, 0);
		if (rc || !g || t_cu(eht_dev_graph_instantiate(&ge, g))) {
			poison_hot(0);
			eht_lookup_destroy(lk);
			continue;
		}
		run_compare("before", lk, ge, s, ids, d_ids, d_out, n, rs);
		/* Too many rows, a row out of range: refused. */
		CHECK_RC(eht_lookup_update_hotset(lk, h2, g_nhot + 1), -EINVAL);
		int64_t far = (int64_t)g_lref.nrows;
		CHECK_RC(eht_lookup_update_hotset(lk, &far, 1), -EINVAL);
		CHECK_RC(eht_lookup_update_hotset(lk, h2, n2), 0); /* reads h2's rows now, before they are poisoned */
		CHECK(eht_lookup_hotset_rows(lk) == g_nhot);        /* not applied yet */
		poison_hot(0);
		poison_rows(h2, n2, 1);
		CHECK_RC(eht_lookup_hotset_apply(lk, s), 1);
		CHECK_RC(eht_lookup_hotset_apply(lk, s), 0);
		CHECK(eht_lookup_hotset_rows(lk) == n2);
		for (int r = 0; r < 3; r++)
			run_compare("replay after", lk, ge, s, ids, d_ids, d_out, n, rs);
		/* Back to the first set, applied by the next eager run itself. */
		CHECK_RC(eht_lookup_update_hotset(lk, g_hot, g_nhot), 0);
		poison_rows(h2, n2, 0);
		poison_hot(1);
		run_compare("eager after", lk, NULL, s, ids, d_ids, d_out, NMAX, rs);
		CHECK(eht_lookup_hotset_rows(lk) == g_nhot);
		run_compare("replay back", lk, ge, s, ids, d_ids, d_out, n, rs);
		poison_hot(0);
		eht_dev_graph_exec_destroy(ge);
		eht_dev_graph_destroy(g);
		/* Refreshes from another thread while this one runs (no poison: outputs must match). */
		if (strategies[k] == EHT_LOOKUP_HOST) {
			struct updater u = {.lk = lk, .rows = h2, .n = n2};
			pthread_t th;
			CHECK(pthread_create(&th, NULL, updater_main, &u) == 0);
			for (int r = 0; r < 40; r++)
				run_compare("racing", lk, NULL, s, ids, d_ids, d_out, (size_t)(1000 + t_rand(rs) % 8000), rs);
			atomic_store(&u.stop, true);
			pthread_join(th, NULL);
			fprintf(stderr, "refresh: %u updates raced 40 runs\n", u.updates);
			CHECK(u.updates > 0);
		}
		eht_lookup_destroy(lk);
	}
out:
	if (d_ids)
		eht_dev_free(d_ids);
	if (d_out)
		eht_dev_free(d_out);
	free(ids);
	free(h2);
}

/* Adapting (eht_lookup_hotset_adapt): the cache starts with rows the stream never asks for; a skewed
 * stream of eager runs (85 % of ids from 1,500 rows) must move it to those rows within a few periods
 * (refreshes applied, the sampled hit rate up), every output still bit-identical. */
static void check_adapt(eht_table *t, eht_stream s, uint64_t *rs)
{
	const size_t cap = 2000, n = 6000;
	int64_t *cold = malloc(cap * 8), *ids = malloc(n * 8);
	eht_dptr d_ids = 0, d_out = 0;
	struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_HOST, .device = 0, .numa_node = -1,
				    .threads = 4, .max_batch = 8192};
	eht_lookup *lk = NULL;
	if (t_cu(eht_dev_alloc(&d_ids, n * 8)) || t_cu(eht_dev_alloc(&d_out, n * RB)))
		goto out;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk)
		goto out;
	for (size_t i = 0; i < cap; i++)
		cold[i] = (int64_t)(g_lref.nrows - 1 - i);
	CHECK_RC(eht_lookup_hotset_adapt(lk, 20), -EINVAL); /* no hot set yet */
	CHECK_RC(eht_lookup_set_hotset(lk, cold, cap), 0);
	CHECK(eht_lookup_hotset_hit_rate(lk) < 0);
	CHECK_RC(eht_lookup_hotset_adapt(lk, 20), 0);
	double first = -1, last = -1;
	for (int step = 0; step < 150; step++) {
		for (size_t i = 0; i < n; i++) {
			uint64_t x = t_rand(rs);
			ids[i] = x % 100 < 85 ? 1000 + (int64_t)(t_rand(rs) % 1500) : (int64_t)(t_rand(rs) % g_lref.nrows);
		}
		t_cu(eht_dev_h2d(d_ids, ids, n * 8));
		t_cu(eht_dev_memset8(d_out, 0xab, n * RB));
		t_cu(eht_dev_sync());
		CHECK_RC(eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_out, s, 0, NULL), 0);
		t_cu(eht_dev_stream_sync(s));
		uint64_t dead = 0;
		size_t bad = t_lookup_compare(&g_lref, d_out, ids, n, EHT_LOOKUP_RAW, &dead);
		if (bad)
			fprintf(stderr, "adapt step %d: %zu rows differ\n", step, bad);
		CHECK(bad == 0);
		double hr = eht_lookup_hotset_hit_rate(lk);
		if (first < 0 && hr >= 0 && step > 3)
			first = hr;
		last = hr;
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "adapt: sampled hit rate %.2f early, %.2f after 150 steps, %llu refreshes\n", first, last,
		(unsigned long long)eht_lookup_hotset_refreshes(lk));
	CHECK(eht_lookup_hotset_refreshes(lk) > 0);
	CHECK(last > 0.6);
	CHECK_RC(eht_lookup_hotset_adapt(lk, 0), 0);
	CHECK(eht_lookup_hotset_hit_rate(lk) < 0);
out:
	eht_lookup_destroy(lk);
	if (d_ids)
		eht_dev_free(d_ids);
	if (d_out)
		eht_dev_free(d_out);
	free(cold);
	free(ids);
}

static void check_errors(eht_table *t, eht_stream s)
{
	struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_HOST, .device = 0, .numa_node = -1,
				    .threads = 2, .max_batch = 1024};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk)
		return;
	int64_t bad1[] = {1, 2, (int64_t)g_lref.nrows};
	CHECK_RC(eht_lookup_set_hotset(lk, bad1, 3), -EINVAL);
	CHECK(strstr(eht_last_error(), "outside") != NULL);
	int64_t bad2[] = {1, -1};
	CHECK_RC(eht_lookup_set_hotset(lk, bad2, 2), -EINVAL);
	int64_t bad3[] = {5, 9, 5};
	CHECK_RC(eht_lookup_set_hotset(lk, bad3, 3), -EINVAL);
	CHECK(strstr(eht_last_error(), "twice") != NULL);
	CHECK_RC(eht_lookup_set_hotset(lk, NULL, 3), -EINVAL);
	CHECK(eht_lookup_hotset_rows(lk) == 0);
	/* After a run: too late. */
	int64_t id = 3;
	uint8_t row[RB];
	CHECK_RC(eht_lookup_run(lk, &id, EHT_ID_INT64, 0, 1, row, s, EHT_LOOKUP_RUN_OUT_HOST | EHT_LOOKUP_RUN_IDS_HOST,
				NULL), 0);
	int64_t good[] = {3};
	CHECK_RC(eht_lookup_set_hotset(lk, good, 1), -EBUSY);
	eht_lookup_destroy(lk);
	/* The hot set in the create options, capped by bytes: the first rows that fit are taken. */
	o.hotset = g_hot;
	o.hotset_rows = g_nhot;
	o.hotset_max_bytes = 100 * (RB + 48) + 7;
	lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	CHECK(lk && eht_lookup_hotset_rows(lk) == 100);
	eht_lookup_destroy(lk);
	int64_t bad4[] = {5, 5};
	o.hotset = bad4;
	o.hotset_rows = 2;
	o.hotset_max_bytes = 0;
	lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), -EINVAL);
	CHECK(lk == NULL && strstr(eht_last_error(), "opts hotset") && strstr(eht_last_error(), "twice"));
}

int main(void)
{
	if (!t_have_gpu())
		t_skip("no GPU");
	/* Every batch through the hot set and dedup (the default keeps small ones off it). */
	t_setenv("EHT_LOOKUP_DEDUP_MIN", "1");
	if (eht_dev_use(0))
		t_skip("cannot use GPU 0");
	eht_stream s = NULL;
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), 0);
	uint64_t rs = 3;

	g_lref.nrows = 60000;
	uint8_t *ref = t_rand_rows(g_lref.nrows, RB, &rs), *tab = malloc(g_lref.nrows * RB);
	g_hot = malloc(g_lref.nrows * sizeof(*g_hot));
	memcpy(tab, ref, g_lref.nrows * RB);
	g_lref.rows = ref;
	/* A third of the rows, in a scrambled order. */
	for (uint64_t i = 0; i < g_lref.nrows; i++)
		if ((i * 7919) % 3 == 0)
			g_hot[g_nhot++] = (int64_t)i;
	for (size_t i = g_nhot - 1; i > 0; i--) {
		size_t j = (size_t)(t_rand(&rs) % (i + 1));
		int64_t x = g_hot[i];
		g_hot[i] = g_hot[j];
		g_hot[j] = x;
	}
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(tab, g_lref.nrows, RB, 0, "hot-mem", &t), 0);
	if (t) {
		check_errors(t, s);
		check_refresh(t, s, &rs);
		check_adapt(t, s, &rs);
		check_table("memory", t, s, &rs);
	}
	eht_table_close(t);

	t_lookup_shared_tiers(&g_lref, "eht-test-hot", s, &rs, check_table);
	free(ref);
	free(tab);
	free(g_hot);
	eht_dev_stream_destroy(s);
	return t_done();
}
