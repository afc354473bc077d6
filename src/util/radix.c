/* SPDX-License-Identifier: Apache-2.0 */
/* radix.c: LSD radix sort of 64-bit keys, 11 bits a pass (row numbers of 384M rows: 3 passes). */
#include "util/radix.h"

#include <string.h>

uint64_t *eht_radix_sort(uint64_t *a, uint64_t *b, size_t n, unsigned first_bit, uint64_t max_key)
{
	enum { BITS = 11, R = 1 << BITS };
	size_t cnt[R]; /* 16 KiB on the stack: callers' threads have MiBs */
	for (unsigned shift = first_bit; shift < 64 && (max_key >> (shift - first_bit)) != 0; shift += BITS) {
		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(a[i] >> shift) & (R - 1)]++;
		size_t sum = 0;
		for (size_t d = 0; d < R; d++) {
			size_t c = cnt[d];
			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[cnt[(a[i] >> shift) & (R - 1)]++] = a[i];
		uint64_t *x = a;
		a = b;
		b = x;
	}
	return a;
}
