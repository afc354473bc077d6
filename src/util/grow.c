/* SPDX-License-Identifier: Apache-2.0 */
/* grow.c: room for one more element (grow.h). */
#include "util/grow.h"

#include <stdint.h>
#include <stdlib.h>

void *eht_grow(void *v, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return v;
	size_t want = *cap ? *cap : EHT_GROW_FIRST / 2;
	if (elem == 0 || want > SIZE_MAX / 2 / elem)
		return NULL;
	want *= 2;
	void *nv = realloc(v, want * elem);
	if (nv)
		*cap = want;
	return nv;
}
