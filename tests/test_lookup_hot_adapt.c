/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_hot_adapt.c: the adapting hot set's choice (src/lookup/hot/adapt.c) on the CPU, through the real
 * refresh hand-off (hot/refresh.c): a cache that starts with rows nobody asks for, fed sampled hits and
 * misses of a skewed stream, must within a few periods hold (nearly) the stream's hot rows, then stay
 * put (a miss must clearly beat the slot it takes: no churn once right); samples outside the table
 * are ignored; a stream whose hot rows change is followed. */
#include <string.h>

#include "lookup/hot/adapt.h"
#include "lookup/hot/refresh.h"
#include "table/hotset.h"
#include "testutil.h"

#define SLOTS 100
#define ROWS 10000
#define LO 7
#define BITS 8 /* 256 >= 2 x SLOTS */

static void *m_alloc(void *c, size_t b) { (void)c; return malloc(b); }
static void m_free(void *c, void *p) { (void)c; free(p); }
static int gather(void *c, const int64_t *r, size_t n, uint8_t *d) { (void)c; (void)r; memset(d, 0, n * 8); return 0; }
static int apply(void *c, const struct eht_hot_plan *p) { (void)c; (void)p; return 0; }

/* Hot rows of the stream: [hot0, hot0 + SLOTS). 85 % of ids from them, the rest uniform. */
static int64_t draw(uint64_t *rs, int64_t hot0)
{
	uint64_t x = t_rand(rs);
	return LO + (x % 100 < 85 ? hot0 + (int64_t)(t_rand(rs) % SLOTS) : (int64_t)(t_rand(rs) % ROWS));
}

/* Periods of sampled traffic; returns rows changed in the last period. */
static uint64_t periods(struct eht_hot_adapt *a, struct eht_hot_refresh *r, int n, int64_t hot0, uint64_t *rs)
{
	static uint32_t hits[SLOTS];
	static uint64_t miss[4000];
	static int64_t next[SLOTS];
	uint64_t changed = 0;
	for (int p = 0; p < n; p++) {
		memset(hits, 0, sizeof(hits));
		size_t nm = 0;
		for (int k = 0; k < 3000; k++) {
			int64_t row = draw(rs, hot0);
			int64_t s = -1;
			for (uint64_t i = 0; i < SLOTS; i++)
				if (r->live[i] == row)
					s = (int64_t)i;
			if (s >= 0)
				hits[s]++;
			else
				miss[nm++] = (uint64_t)(row - LO);
		}
		miss[nm++] = ROWS + 5; /* a torn sample: outside the table, ignored */
		eht_hot_adapt_observe(a, hits, miss, nm, ROWS);
		uint64_t n2 = eht_hot_adapt_choose(a, r->live, LO, next, &changed);
		CHECK(n2 <= SLOTS);
		if (changed) {
			CHECK_RC(eht_hot_refresh_prepare(r, next, n2, gather, NULL), 0);
			CHECK_RC(eht_hot_refresh_take(r, apply, NULL), 1);
		}
	}
	return changed;
}

static int held(const struct eht_hot_refresh *r, int64_t hot0)
{
	int k = 0;
	for (uint64_t s = 0; s < SLOTS; s++)
		k += r->live[s] >= LO + hot0 && r->live[s] < LO + hot0 + SLOTS;
	return k;
}

int main(void)
{
	uint64_t rs = 5;
	int64_t live[SLOTS];
	for (int s = 0; s < SLOTS; s++)
		live[s] = LO + ROWS - 1 - s; /* rows the stream rarely asks for */
	struct eht_hot_mem mem = {.alloc = m_alloc, .free = m_free};
	struct eht_hot_refresh r;
	struct eht_hot_adapt a;
	CHECK_RC(eht_hot_refresh_init(&r, live, SLOTS, BITS, LO, LO + ROWS, 8, &mem), 0);
	CHECK_RC(eht_hot_adapt_init(&a, SLOTS, 0.7f, 2.0f), 0);
	CHECK(held(&r, 1000) == 0);
	periods(&a, &r, 8, 1000, &rs);
	fprintf(stderr, "after 8 periods: %d of %d hot rows held\n", held(&r, 1000), SLOTS);
	CHECK(held(&r, 1000) >= 95);
	uint64_t churn = periods(&a, &r, 5, 1000, &rs);
	fprintf(stderr, "settled: %llu rows changed in the last period\n", (unsigned long long)churn);
	CHECK(churn <= 3);
	CHECK(held(&r, 1000) >= 95);
	/* The stream's hot rows move: the cache follows. */
	periods(&a, &r, 12, 5000, &rs);
	fprintf(stderr, "after the shift: %d of %d new hot rows held\n", held(&r, 5000), SLOTS);
	CHECK(held(&r, 5000) >= 90);
	/* Rows listed are distinct and inside the table (prepare checked them) and no row is lost: the
	 * live set has every slot used. */
	for (int s = 0; s < SLOTS; s++)
		CHECK(r.live[s] >= LO && r.live[s] < LO + ROWS);
	eht_hot_adapt_fini(&a);
	eht_hot_refresh_fini(&r);
	return t_done();
}
