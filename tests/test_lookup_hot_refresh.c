/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_hot_refresh.c: replacing a hot set while lookups run, on the CPU alone (run under TSan by
 * `make tsan`). A "GPU" (an index and a row buffer in host memory) is updated only by the run thread at
 * step boundaries through eht_hot_refresh_take; two threads prepare new sets all the while. At every
 * step each probed id must be either a miss or a hit whose cached bytes are that row's bytes, and the
 * cache must hold exactly the last applied set. Also: rows that stay keep their slots and are not
 * copied again; bad sets are refused with a message and leave the pending plan alone; a failed gather
 * drops it; a failed apply keeps it for the next boundary. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "lookup/hot/refresh.h"
#include "table/hotset.h"
#include "testutil.h"

#define RB 24
#define ROWS 5000
#define LO 100 /* the engine holds rows [LO, LO + ROWS) */
#define SLOTS 600
#define BITS 11 /* 2048 >= 2 x SLOTS */

static uint8_t g_table[ROWS * RB];
/* The "GPU": what apply copies into. */
static uint64_t g_keys[1u << BITS];
static uint32_t g_vals[1u << BITS];
static uint8_t g_rows[SLOTS * RB];
static uint64_t g_nset, g_loaded;
static atomic_int g_fail_apply, g_fail_gather;
static atomic_bool g_stop;

static void row_bytes(int64_t row, uint8_t *dst)
{
	memcpy(dst, g_table + (size_t)(row - LO) * RB, RB);
}

static int gather(void *ctx, const int64_t *rows, size_t n, uint8_t *dst)
{
	(void)ctx;
	if (atomic_load(&g_fail_gather))
		return -EIO;
	for (size_t i = 0; i < n; i++)
		row_bytes(rows[i], dst + i * RB);
	return 0;
}

static int apply(void *ctx, const struct eht_hot_plan *p)
{
	(void)ctx;
	if (atomic_load(&g_fail_apply))
		return -EIO;
	memcpy(g_keys, p->keys, sizeof(g_keys));
	memcpy(g_vals, p->vals, sizeof(g_vals));
	for (uint64_t i = 0; i < p->nload; i++)
		memcpy(g_rows + (size_t)p->load_slot[i] * RB, p->load_bytes + i * RB, RB);
	g_loaded += p->nload;
	g_nset = p->rows;
	return 0;
}

static void *mem_alloc(void *ctx, size_t bytes)
{
	(void)ctx;
	return malloc(bytes);
}
static void mem_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

/* n distinct rows of the engine's range. */
static void random_set(int64_t *rows, uint64_t n, uint64_t *rs)
{
	static _Thread_local uint8_t used[ROWS];
	memset(used, 0, sizeof(used));
	for (uint64_t i = 0; i < n;) {
		uint64_t r = t_rand(rs) % ROWS;
		if (!used[r]) {
			used[r] = 1;
			rows[i++] = LO + (int64_t)r;
		}
	}
}

/* Every cached row has its own bytes; the cache holds the set's rows and no others. */
static size_t check_cache(uint64_t *rs)
{
	size_t bad = 0;
	uint64_t hits = 0;
	uint8_t want[RB];
	for (int k = 0; k < 2000; k++) {
		int64_t row = LO + (int64_t)(t_rand(rs) % ROWS);
		uint32_t s = eht_hot_probe(g_keys, g_vals, BITS, (uint64_t)(row - LO));
		if (s == EHT_HOT_NONE)
			continue;
		hits++;
		row_bytes(row, want);
		bad += s >= SLOTS || memcmp(g_rows + (size_t)s * RB, want, RB) != 0;
	}
	uint64_t members = 0;
	for (size_t h = 0; h < (1u << BITS); h++)
		members += g_keys[h] != EHT_HOT_EMPTY;
	bad += members != g_nset;
	return bad;
}

struct refresher {
	struct eht_hot_refresh *r;
	uint64_t seed, prepared;
};

static void *refresher_main(void *arg)
{
	struct refresher *f = arg;
	int64_t *rows = malloc(SLOTS * sizeof(*rows));
	/* At least one set prepared, however late this thread first runs. */
	while (!atomic_load(&g_stop) || f->prepared == 0) {
		uint64_t n = 1 + t_rand(&f->seed) % SLOTS;
		random_set(rows, n, &f->seed);
		if (eht_hot_refresh_prepare(f->r, rows, n, gather, NULL) == 0)
			f->prepared++;
	}
	free(rows);
	return NULL;
}

int main(void)
{
	uint64_t rs = 11;
	for (size_t i = 0; i < sizeof(g_table); i++)
		g_table[i] = (uint8_t)t_rand(&rs);
	/* The first set: SLOTS rows, loaded into the "GPU" as eht_lookup_set_hotset would. */
	int64_t live[SLOTS];
	random_set(live, SLOTS, &rs);
	memset(g_keys, 0xff, sizeof(g_keys));
	for (uint32_t s = 0; s < SLOTS; s++) {
		uint32_t old;
		eht_hot_insert(g_keys, g_vals, BITS, (uint64_t)(live[s] - LO), s, &old);
		row_bytes(live[s], g_rows + (size_t)s * RB);
	}
	g_nset = SLOTS;
	struct eht_hot_mem mem = {.alloc = mem_alloc, .free = mem_free};
	struct eht_hot_refresh r;
	CHECK_RC(eht_hot_refresh_init(&r, live, SLOTS, BITS, LO, LO + ROWS, RB, &mem), 0);
	CHECK(check_cache(&rs) == 0);

	/* Half the set stays, half is new: the staying rows keep their slots and are not copied. */
	int64_t next[SLOTS];
	memcpy(next, live, SLOTS / 2 * sizeof(*next));
	{
		uint8_t in[ROWS] = {0};
		for (int i = 0; i < SLOTS; i++)
			in[live[i] - LO] = 1;
		for (int i = SLOTS / 2, r0 = 0; i < SLOTS; r0++)
			if (!in[r0])
				next[i++] = LO + r0;
	}
	CHECK_RC(eht_hot_refresh_take(&r, apply, NULL), 0); /* nothing pending */
	CHECK_RC(eht_hot_refresh_prepare(&r, next, SLOTS, gather, NULL), 0);
	g_loaded = 0;
	CHECK_RC(eht_hot_refresh_take(&r, apply, NULL), 1);
	CHECK(g_loaded == SLOTS - SLOTS / 2);
	for (int i = 0; i < SLOTS / 2; i++)
		CHECK(eht_hot_probe(g_keys, g_vals, BITS, (uint64_t)(live[i] - LO)) == (uint32_t)i);
	for (int i = SLOTS / 2; i < SLOTS; i++)
		CHECK(eht_hot_probe(g_keys, g_vals, BITS, (uint64_t)(live[i] - LO)) == EHT_HOT_NONE);
	CHECK(check_cache(&rs) == 0);

	/* Bad sets: refused with a message; the pending plan (a smaller set) stays and is taken after. */
	CHECK_RC(eht_hot_refresh_prepare(&r, next, 10, gather, NULL), 0);
	int64_t bad_range[] = {LO, LO + ROWS};
	CHECK_RC(eht_hot_refresh_prepare(&r, bad_range, 2, gather, NULL), -EINVAL);
	CHECK(strstr(eht_last_error(), "outside") != NULL);
	int64_t bad_dup[] = {LO + 3, LO + 4, LO + 3};
	CHECK_RC(eht_hot_refresh_prepare(&r, bad_dup, 3, gather, NULL), -EINVAL);
	CHECK(strstr(eht_last_error(), "twice") != NULL);
	int64_t *many = malloc((SLOTS + 1) * sizeof(*many));
	random_set(many, SLOTS + 1, &rs);
	CHECK_RC(eht_hot_refresh_prepare(&r, many, SLOTS + 1, gather, NULL), -EINVAL);
	CHECK(strstr(eht_last_error(), "holds") != NULL);
	free(many);
	/* A failed apply keeps the plan for the next boundary. */
	atomic_store(&g_fail_apply, 1);
	CHECK_RC(eht_hot_refresh_take(&r, apply, NULL), -EIO);
	atomic_store(&g_fail_apply, 0);
	CHECK_RC(eht_hot_refresh_take(&r, apply, NULL), 1);
	CHECK(g_nset == 10);
	CHECK(check_cache(&rs) == 0);
	/* A failed gather drops what was pending. */
	CHECK_RC(eht_hot_refresh_prepare(&r, live, SLOTS, gather, NULL), 0);
	atomic_store(&g_fail_gather, 1);
	CHECK_RC(eht_hot_refresh_prepare(&r, next, SLOTS, gather, NULL), -EIO);
	atomic_store(&g_fail_gather, 0);
	CHECK_RC(eht_hot_refresh_take(&r, apply, NULL), 0);
	CHECK(g_nset == 10);
	/* An empty set empties the cache. */
	CHECK_RC(eht_hot_refresh_prepare(&r, NULL, 0, gather, NULL), 0);
	CHECK_RC(eht_hot_refresh_take(&r, apply, NULL), 1);
	CHECK(g_nset == 0 && check_cache(&rs) == 0);

	/* Two threads prepare sets while this one takes them at "step boundaries" and checks the cache. */
	struct refresher f[2] = {{.r = &r, .seed = 21}, {.r = &r, .seed = 22}};
	pthread_t th[2];
	for (int k = 0; k < 2; k++)
		CHECK(pthread_create(&th[k], NULL, refresher_main, &f[k]) == 0);
	size_t bad = 0;
	uint64_t taken = 0;
	/* At least 3,000 boundaries, and on until some plans were taken: on a loaded machine the two
	 * preparers can hold the plan through thousands of back-to-back boundaries (a real step boundary
	 * is milliseconds apart; the yield stands in for the step's work). */
	for (int step = 0; step < 3000 || (taken < 10 && step < 400000); step++) {
		if (step >= 3000)
			sched_yield();
		int rc = eht_hot_refresh_take(&r, apply, NULL);
		CHECK(rc == 0 || rc == 1);
		taken += rc == 1;
		bad += check_cache(&rs);
	}
	atomic_store(&g_stop, true);
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	/* Whether a boundary above found a plan is the scheduler's choice; the last plan prepared is
	 * taken at the next boundary, here, if none was. */
	int last = eht_hot_refresh_take(&r, apply, NULL);
	CHECK(last == 0 || last == 1);
	CHECK(last == 1 || taken > 0);
	taken += last == 1;
	bad += check_cache(&rs);
	fprintf(stderr, "prepared %llu + %llu, taken %llu\n", (unsigned long long)f[0].prepared,
		(unsigned long long)f[1].prepared, (unsigned long long)taken);
	CHECK(bad == 0);
	CHECK(taken > 0);
	eht_hot_refresh_fini(&r);
	return t_done();
}
