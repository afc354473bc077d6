/* SPDX-License-Identifier: Apache-2.0 */
/* adapt.h: choosing a hot set from the traffic itself (eht_lookup_hotset_adapt, hot.c). The
 * mark kernel samples every 16th id of a run: a hit counts into its slot, a miss's row goes into a
 * ring. Each period the counts decay into scores; a missed row replaces the coldest hot row when it
 * scores margin times more (frequency with memory, not recency: an LRU below one step's distinct
 * rows thrashes). CPU only, tested without a GPU. */
#ifndef EHT_LOOKUP_HOT_ADAPT_H_
#define EHT_LOOKUP_HOT_ADAPT_H_

#include <stddef.h>
#include <stdint.h>

struct eht_hot_adapt {
	uint64_t slots;
	float *slot_score;
	/* Missed local rows -> score (open addressing, 2^mbits entries, at most half full). */
	uint64_t *mkeys;
	float *mscore;
	uint32_t mbits;
	uint64_t mcount;
	float decay, margin;
	uint64_t period_hits, period_misses; /* samples of the last observe */
};

/* decay: scores are multiplied by it each period (0..1); margin: a missed row must score more than
 * margin x the slot it replaces. Returns 0, -ENOMEM. */
int eht_hot_adapt_init(struct eht_hot_adapt *a, uint64_t slots, float decay, float margin);
void eht_hot_adapt_fini(struct eht_hot_adapt *a);

/* One period's samples: hit counts per slot since the last period (slots entries), and nmiss missed
 * local rows (those >= local_rows are ignored: a torn read of the ring). */
void eht_hot_adapt_observe(struct eht_hot_adapt *a, const uint32_t *hit_delta, const uint64_t *miss, size_t nmiss,
			   uint64_t local_rows);

/* The next set from live (absolute row per slot, -1 free): out gets the live rows that stay (in slot
 * order), then the missed rows that come in (best first), as eht_hot_refresh_prepare wants them;
 * returns the count and sets *changed (rows that come in; 0: keep the set as it is). The scores move
 * with the rows: eht_hot_refresh_prepare puts the newcomers into the freed slots in ascending order.
 * Returns 0 with *changed 0 when out of memory. */
uint64_t eht_hot_adapt_choose(struct eht_hot_adapt *a, const int64_t *live, int64_t lo, int64_t *out,
			      uint64_t *changed);

#endif
