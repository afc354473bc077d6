/* SPDX-License-Identifier: Apache-2.0 */
/* hot.h: GPU dedup and the hot-row cache of an engine (hot.c), around any strategy's gather of the
 * distinct misses. */
#ifndef EHT_LOOKUP_HOT_HOT_H
#define EHT_LOOKUP_HOT_HOT_H

#include "lookup/core.h"

/* A GPU piece through GPU dedup and the hot-row cache: mark, the strategy's gather of the distinct
 * misses (its gather_distinct op), expand. */
int eht_lk_hot_piece(eht_lookup *lk, struct lk_piece *p);
/* Frees the dedup and hot-set state (lk->hot). */
void eht_lk_hot_free(eht_lookup *lk);
/* The dedup state alone (EHT_LOOKUP_GPU_DEDUP without a hot set). */
int eht_lk_dedup_init(eht_lookup *lk);
/* A step boundary of an eager run on s: a pending hot-set refresh is applied there. */
int eht_lk_hot_boundary(eht_lookup *lk, eht_stream s);
/* At create: the hot set of the options, else the table's (its server's) unless
 * EHT_LOOKUP_NO_HOTSET, capped to hotset_max_bytes. */
int eht_lk_hot_create(eht_lookup *lk);

#endif
