/* SPDX-License-Identifier: Apache-2.0 */
/* memory_split.c: the memory tier over an engine's own split storage (eht_table_wrap_split): weights
 * [rows, wb] and scales [rows, sb] as two arrays (vLLM's layout: one allocation or two), caller-owned,
 * never copied or re-laid out. A row is read as the packed row its weights and scales make (wb bytes,
 * then sb), so every lookup path that reads rows through the tier sees packed rows. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "os/pagesize.h"
#include "table/table_impl.h"
#include "util/err.h"

/* Rows prefetched ahead of the copy: a row is two random accesses, both in flight early. */
#define SPLIT_PREFETCH 8

struct split_impl {
	const uint8_t *w, *s;
	uint32_t wb, sb;
	uint64_t page_size;
};

static void split_describe(const eht_table *t, struct eht_table_info *info)
{
	const struct split_impl *m = t->impl;
	info->tier = EHT_TIER_MEMORY;
	info->host = NULL; /* no packed rows to point at: rows come through read_rows */
	info->device_ptr = 0;
	info->device = -1;
	info->numa_node = -1;
	info->page_size = m->page_size;
}

static inline void split_prefetch(const struct split_impl *m, uint64_t r)
{
	for (uint32_t o = 0; o < m->wb; o += 64)
		__builtin_prefetch(m->w + r * m->wb + o, 0, 3);
	__builtin_prefetch(m->s + r * m->sb, 0, 3);
}

static int split_read_rows(eht_table *t, const uint64_t *rows, size_t n, void *dst, unsigned flags)
{
	const struct split_impl *m = t->impl;
	if (flags & EHT_ROWS_TO_DEVICE)
		return eht_err(EOPNOTSUPP, "table %s: split rows are read into host memory only", t->info.name);
	uint8_t *d = dst;
	const uint32_t rb = m->wb + m->sb;
	for (size_t i = 0; i < n && i < SPLIT_PREFETCH; i++)
		split_prefetch(m, rows[i]);
	for (size_t i = 0; i < n; i++) {
		if (i + SPLIT_PREFETCH < n)
			split_prefetch(m, rows[i + SPLIT_PREFETCH]);
		const uint64_t r = rows[i];
		memcpy(d + i * rb, m->w + r * m->wb, m->wb);
		memcpy(d + i * rb + m->wb, m->s + r * m->sb, m->sb);
	}
	return 0;
}

static int split_close(eht_table *t)
{
	free(t->impl);
	return 0;
}

/* No export_to: the memory is the caller's. */
static const struct eht_table_ops split_ops = {.describe = split_describe, .read_rows = split_read_rows,
					       .close = split_close};

int eht_table_wrap_split(const void *weights, uint64_t weight_bytes, const void *scales, uint64_t scale_bytes,
			 uint64_t rows, const char *name, eht_table **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_table_wrap_split: NULL out");
	*out = NULL;
	if (!weights || !scales || !weight_bytes || !scale_bytes)
		return eht_err(EINVAL, "eht_table_wrap_split: %s", !weights ? "NULL weights" : !scales ? "NULL scales"
								   : "zero weight or scale bytes per row");
	if (weight_bytes + scale_bytes > 65536 || rows > SIZE_MAX / (weight_bytes + scale_bytes))
		return eht_err(EOVERFLOW, "eht_table_wrap_split: %llu rows of %llu + %llu bytes (rows at most 64 KiB)",
			       (unsigned long long)rows, (unsigned long long)weight_bytes, (unsigned long long)scale_bytes);
	const uint8_t *w = weights, *s = scales;
	if ((s < w + rows * weight_bytes && w < s + rows * scale_bytes))
		return eht_err(EINVAL, "eht_table_wrap_split: the weights [%p, +%llu) and scales [%p, +%llu) overlap",
			       weights, (unsigned long long)(rows * weight_bytes), scales,
			       (unsigned long long)(rows * scale_bytes));
	struct split_impl *m = calloc(1, sizeof(*m));
	if (!m)
		return eht_err(ENOMEM, "table: out of memory");
	*m = (struct split_impl){.w = w, .s = s, .wb = (uint32_t)weight_bytes, .sb = (uint32_t)scale_bytes};
	struct eht_page_stat ps;
	m->page_size = rows && eht_page_stat(weights, rows * weight_bytes, &ps) == 0 ? eht_page_stat_size(&ps) : 0;
	if (!m->page_size)
		m->page_size = 4096;
	struct eht_table_info info = {.size = sizeof(info), .rows = rows, .row_bytes = weight_bytes + scale_bytes,
				      .local_rows = rows, .name = name ? name : "memory-split"};
	int rc = eht_table_new(&info, &split_ops, m, out);
	if (rc)
		free(m);
	return rc;
}
