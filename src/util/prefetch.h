/* SPDX-License-Identifier: Apache-2.0 */
/* prefetch.h: software prefetch of one row, every 64-byte line of it. */
#ifndef EHT_UTIL_PREFETCH_H
#define EHT_UTIL_PREFETCH_H

#include <stdint.h>

/* Prefetches bytes [p, p + len) for reading into every cache level (prefetcht0: faster than the
 * non-temporal hint for the lookup gather, docs/BENCHMARKS.md). */
static inline void eht_prefetch_row(const uint8_t *p, uint32_t len)
{
	for (uint32_t o = 0; o < len; o += 64)
		__builtin_prefetch(p + o, 0, 3);
}

#endif
