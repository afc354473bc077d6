/* SPDX-License-Identifier: Apache-2.0 */
/* distinct.h: the distinct misses of a dedup pass, read into the compact buffer (distinct.c): the
 * mechanism under every strategy's gather_distinct op (core.h). */
#ifndef EHT_LOOKUP_GATHER_DISTINCT_H
#define EHT_LOOKUP_GATHER_DISTINCT_H

#include "lookup/core.h"

/* The first share of d's distinct rows in place on the GPU (share > 0: the table GPU-readable), the
 * rest by the CPU pool through the doorbell (share < 1: lk->bell made), both at once on the fork
 * when 0 < share < 1; all on p's stream. Sets p->dead_published when the doorbell publishes the
 * pass's dead count (p->publish_dead and a CPU share). */
int eht_lk_gather_distinct(eht_lookup *lk, struct lk_piece *p, const struct lk_distinct *d, float share);

#endif
