/* SPDX-License-Identifier: Apache-2.0 */
/* disk_copy.c: the disk tier's copies out of its file mappings under the SIGBUS guard (os/mem_guard.h):
 * rows of one part, and packed rows of every part in one pass. */
#include <errno.h>
#include <setjmp.h>
#include <string.h>

#include "os/mem_guard.h"
#include "table/disk/disk_impl.h"

#define PREFETCH_AHEAD 8

int disk_guarded_copy_rows(const uint8_t *base, const uint64_t *rows, size_t n, uint64_t first_row,
			   uint64_t row_bytes, uint8_t *dst, uint64_t dst_stride, size_t *fault_index)
{
	sigjmp_buf jb;
	volatile size_t i = 0;
	if (sigsetjmp(jb, 0)) {
		*fault_index = i;
		return -EIO;
	}
	eht_guard_arm(&jb);
	for (; i < n; i++) {
		/* Rows sit on different pages: start the next ones' misses early (a prefetch never faults). */
		if (i + PREFETCH_AHEAD < n) {
			const uint8_t *q = base + (rows[i + PREFETCH_AHEAD] - first_row) * row_bytes;
			for (uint64_t o = 0; o < row_bytes && o < 512; o += 64)
				__builtin_prefetch(q + o, 0, 0);
		}
		memcpy(dst + i * dst_stride, base + (rows[i] - first_row) * row_bytes, row_bytes);
	}
	eht_guard_disarm();
	return 0;
}

/* Copies n bytes; common row sizes as constant-size copies (inlined moves, no libc call a part). */
static inline void copy_part(uint8_t *dst, const uint8_t *src, uint64_t n)
{
	switch (n) {
	case 8:
		memcpy(dst, src, 8);
		break;
	case 16:
		memcpy(dst, src, 16);
		break;
	case 128:
		memcpy(dst, src, 128);
		break;
	case 256:
		memcpy(dst, src, 256);
		break;
	case 512:
		memcpy(dst, src, 512);
		break;
	default:
		memcpy(dst, src, n);
	}
}

static inline void prefetch_part(const struct disk_part *p, uint64_t rel)
{
	const uint8_t *q = p->data + rel * p->row_bytes;
	/* The bound computed first: gcc 12 deletes the whole loop under a two-part condition. */
	uint64_t lim = p->row_bytes < 512 ? p->row_bytes : 512;
	for (uint64_t o = 0; o < lim; o += 64)
		__builtin_prefetch(q + o, 0, 0);
}

int disk_guarded_copy_packed(const struct disk *d, const uint64_t *rows, size_t n, uint8_t *dst,
			     size_t *fault_index, unsigned *fault_part)
{
	sigjmp_buf jb;
	volatile size_t i = 0;
	volatile unsigned k = 0;
	const struct disk_part *p0 = &d->part[0], *p1 = &d->part[d->nparts > 1];
	const bool two = d->nparts > 1;
	if (sigsetjmp(jb, 0)) {
		*fault_index = i;
		*fault_part = k;
		return -EIO;
	}
	eht_guard_arm(&jb);
	/* One pass over both parts: the weight and scale misses of a row (two pages, each a TLB miss
	 * on a 4 KiB mapping) are in flight together, ahead of the copies. */
	for (size_t j = 0; j < n; j++) {
		if (j + PREFETCH_AHEAD < n) {
			uint64_t r = rows[j + PREFETCH_AHEAD] - d->first_row;
			prefetch_part(p0, r);
			if (two)
				prefetch_part(p1, r);
		}
		uint64_t r = rows[j] - d->first_row;
		uint8_t *o = dst + j * d->rb;
		i = j;
		k = 0;
		copy_part(o + p0->dst_off, p0->data + r * p0->row_bytes, p0->row_bytes);
		if (two) {
			k = 1;
			copy_part(o + p1->dst_off, p1->data + r * p1->row_bytes, p1->row_bytes);
		}
	}
	eht_guard_disarm();
	return 0;
}
