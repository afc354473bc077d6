/* SPDX-License-Identifier: Apache-2.0 */
/* adapt.c: hot-set choice from sampled hits and misses (see adapt.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/hot/adapt.h"
#include "table/hotset.h"
#include "util/err.h"

int eht_hot_adapt_init(struct eht_hot_adapt *a, uint64_t slots, float decay, float margin)
{
	memset(a, 0, sizeof(*a));
	a->slots = slots;
	a->decay = decay;
	a->margin = margin;
	a->mbits = 16;
	while ((1ull << a->mbits) < 4 * slots && a->mbits < 24)
		a->mbits++;
	uint64_t cap = 1ull << a->mbits;
	a->slot_score = calloc(slots ? slots : 1, sizeof(*a->slot_score));
	a->mkeys = malloc(cap * sizeof(*a->mkeys));
	a->mscore = calloc(cap, sizeof(*a->mscore));
	if (!a->slot_score || !a->mkeys || !a->mscore) {
		eht_hot_adapt_fini(a);
		return eht_err(ENOMEM, "hot set: out of memory for adapting %llu slots", (unsigned long long)slots);
	}
	memset(a->mkeys, 0xff, cap * sizeof(*a->mkeys));
	return 0;
}

void eht_hot_adapt_fini(struct eht_hot_adapt *a)
{
	free(a->slot_score);
	free(a->mkeys);
	free(a->mscore);
	memset(a, 0, sizeof(*a));
}

static float *miss_slot(struct eht_hot_adapt *a, uint64_t loc, int add)
{
	uint64_t mask = (1ull << a->mbits) - 1, h = (loc * EHT_HOT_MUL) >> (64 - a->mbits);
	for (;; h = (h + 1) & mask) {
		if (a->mkeys[h] == loc)
			return &a->mscore[h];
		if (a->mkeys[h] == EHT_HOT_EMPTY) {
			if (!add)
				return NULL;
			a->mkeys[h] = loc;
			a->mscore[h] = 0;
			a->mcount++;
			return &a->mscore[h];
		}
	}
}

/* Keeps the missed rows that score at least a threshold, doubled until the table is a quarter full. */
static void miss_prune(struct eht_hot_adapt *a)
{
	uint64_t cap = 1ull << a->mbits, n = 0;
	uint64_t *k = malloc(a->mcount * sizeof(*k));
	float *v = malloc(a->mcount * sizeof(*v));
	if (!k || !v) { /* keep going with an empty table rather than fail the period */
		memset(a->mkeys, 0xff, cap * sizeof(*a->mkeys));
		a->mcount = 0;
		free(k);
		free(v);
		return;
	}
	for (uint64_t h = 0; h < cap; h++)
		if (a->mkeys[h] != EHT_HOT_EMPTY) {
			k[n] = a->mkeys[h];
			v[n++] = a->mscore[h];
		}
	float thr = 1.0f;
	uint64_t keep;
	for (;; thr *= 2) {
		keep = 0;
		for (uint64_t i = 0; i < n; i++)
			keep += v[i] >= thr;
		if (keep <= cap / 4)
			break;
	}
	memset(a->mkeys, 0xff, cap * sizeof(*a->mkeys));
	a->mcount = 0;
	for (uint64_t i = 0; i < n; i++)
		if (v[i] >= thr)
			*miss_slot(a, k[i], 1) = v[i];
	free(k);
	free(v);
}

void eht_hot_adapt_observe(struct eht_hot_adapt *a, const uint32_t *hit_delta, const uint64_t *miss, size_t nmiss,
			   uint64_t local_rows)
{
	a->period_hits = a->period_misses = 0;
	for (uint64_t s = 0; s < a->slots; s++) {
		a->slot_score[s] = a->slot_score[s] * a->decay + (float)hit_delta[s];
		a->period_hits += hit_delta[s];
	}
	uint64_t cap = 1ull << a->mbits;
	for (uint64_t h = 0; h < cap; h++)
		a->mscore[h] *= a->decay;
	for (size_t i = 0; i < nmiss; i++) {
		if (miss[i] >= local_rows)
			continue;
		if (a->mcount >= cap / 2)
			miss_prune(a);
		*miss_slot(a, miss[i], 1) += 1.0f;
		a->period_misses++;
	}
}

struct cand {
	uint64_t loc;
	float score;
};

static int by_score_desc(const void *x, const void *y)
{
	float a = ((const struct cand *)x)->score, b = ((const struct cand *)y)->score;
	return a < b ? 1 : a > b ? -1 : 0;
}

static int by_score_asc(const void *x, const void *y)
{
	return by_score_desc(y, x);
}

uint64_t eht_hot_adapt_choose(struct eht_hot_adapt *a, const int64_t *live, int64_t lo, int64_t *out,
			      uint64_t *changed)
{
	*changed = 0;
	const uint64_t S = a->slots, cap = 1ull << a->mbits;
	uint32_t lbits = 1;
	while ((1ull << lbits) < 2 * (S ? S : 1))
		lbits++;
	struct cand *slots = malloc((S ? S : 1) * sizeof(*slots)), *miss = malloc((a->mcount ? a->mcount : 1) * sizeof(*miss));
	uint64_t *lkeys = malloc((1ull << lbits) * sizeof(*lkeys));
	uint32_t *lvals = malloc((1ull << lbits) * sizeof(*lvals));
	uint8_t *freed = calloc(S ? S : 1, 1);
	uint64_t n = 0;
	if (!slots || !miss || !lkeys || !lvals || !freed)
		goto out;
	/* Slots coldest first (free ones before all); the live rows, to skip misses loaded since. */
	memset(lkeys, 0xff, (1ull << lbits) * sizeof(*lkeys));
	for (uint64_t s = 0; s < S; s++) {
		slots[s] = (struct cand){.loc = s, .score = live[s] < 0 ? -1.0f : a->slot_score[s]};
		uint32_t old;
		if (live[s] >= 0)
			eht_hot_insert(lkeys, lvals, lbits, (uint64_t)(live[s] - lo), (uint32_t)s, &old);
	}
	qsort(slots, S, sizeof(*slots), by_score_asc);
	uint64_t m = 0;
	for (uint64_t h = 0; h < cap; h++)
		if (a->mkeys[h] != EHT_HOT_EMPTY && a->mscore[h] >= 2.0f &&
		    eht_hot_probe(lkeys, lvals, lbits, a->mkeys[h]) == EHT_HOT_NONE)
			miss[m++] = (struct cand){.loc = a->mkeys[h], .score = a->mscore[h]};
	qsort(miss, m, sizeof(*miss), by_score_desc);
	/* Best misses against coldest slots, while each clearly wins. */
	uint64_t j = 0;
	while (j < m && j < S && (slots[j].score < 0 || miss[j].score > a->margin * slots[j].score))
		freed[slots[j++].loc] = 1;
	for (uint64_t s = 0; s < S; s++)
		if (live[s] >= 0 && !freed[s])
			out[n++] = live[s];
	for (uint64_t i = 0; i < j; i++)
		out[n++] = lo + (int64_t)miss[i].loc;
	/* The scores follow the rows: newcomers into the freed and free slots in ascending order. */
	uint64_t i = 0;
	for (uint64_t s = 0; s < S; s++)
		if (freed[s] || live[s] < 0) {
			a->slot_score[s] = i < j ? miss[i].score : 0.0f;
			if (i < j)
				*miss_slot(a, miss[i].loc, 0) = 0.0f;
			i++;
		}
	*changed = j;
out:
	free(slots);
	free(miss);
	free(lkeys);
	free(lvals);
	free(freed);
	return n;
}
