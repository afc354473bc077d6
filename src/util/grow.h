/* SPDX-License-Identifier: Apache-2.0 */
/* grow.h: room for one more element in a growable array (the one doubling rule the lists of eht use:
 * clients, workers, regions, shard names, per-request state). */
#ifndef EHT_UTIL_GROW_H
#define EHT_UTIL_GROW_H

#include <stddef.h>

/* The first capacity of an array that grows. */
#define EHT_GROW_FIRST 16

/* An array v of *cap elements of elem bytes, n of them used, with room for n + 1: v itself while
 * n < *cap, else v reallocated to twice *cap (EHT_GROW_FIRST at first) and *cap updated. NULL when
 * out of memory or the size would overflow: v is then unchanged and still the caller's, *cap too,
 * and no error text is set (the caller says what ran out). */
void *eht_grow(void *v, size_t *cap, size_t n, size_t elem);

#endif
