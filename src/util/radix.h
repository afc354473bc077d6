/* SPDX-License-Identifier: Apache-2.0 */
/* radix.h: the LSD radix sort of 64-bit keys that the host-side sort + dedup of ids uses. */
#ifndef EHT_UTIL_RADIX_H
#define EHT_UTIL_RADIX_H

#include <stddef.h>
#include <stdint.h>

/* Sorts a[0..n) stably by the key bits at and above first_bit, using b[0..n) as scratch, with only
 * as many 11-bit passes as max_key (the largest a[i] >> first_bit) needs. Bits below first_bit ride
 * along (e.g. a position, keeping equal keys in input order). Returns a or b: where the result is. */
uint64_t *eht_radix_sort(uint64_t *a, uint64_t *b, size_t n, unsigned first_bit, uint64_t max_key);

#endif
