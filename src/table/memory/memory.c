/* SPDX-License-Identifier: Apache-2.0 */
/* memory.c: the memory tier (eht_table_wrap): caller-owned memory, optionally pinned for one GPU. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gpu/pin.h"
#include "os/pagesize.h"
#include "table/table_impl.h"
#include "util/err.h"
#include "util/log.h"

struct memory_impl {
	void *host;
	size_t bytes;
	bool pinned;
	int device;
	uint64_t dptr;
	uint64_t page_size; /* what smaps said at wrap */
};

static int memory_close(eht_table *t)
{
	struct memory_impl *m = t->impl;
	int rc = 0;
	if (m && m->pinned)
		rc = eht_gpu_unpin(m->host, m->bytes);
	free(m);
	return rc;
}

static void memory_describe(const eht_table *t, struct eht_table_info *info)
{
	const struct memory_impl *m = t->impl;
	info->tier = EHT_TIER_MEMORY;
	info->host = m->host;
	info->device_ptr = m->pinned ? m->dptr : 0;
	info->device = m->pinned ? m->device : -1;
	info->numa_node = -1; /* the caller's memory: wherever its pages happen to lie */
	info->page_size = m->page_size;
}

/* No export_to: the memory is the caller's, another process cannot map it. */
static const struct eht_table_ops memory_ops = {.describe = memory_describe, .close = memory_close};

int eht_table_wrap(void *host, uint64_t rows, uint64_t row_bytes, int device, const char *name,
		   eht_table **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_table_wrap: NULL out");
	*out = NULL;
	if (!host || row_bytes == 0)
		return eht_err(EINVAL, "eht_table_wrap: %s", host ? "row_bytes is 0" : "NULL memory");
	if (rows > SIZE_MAX / row_bytes)
		return eht_err(EOVERFLOW, "eht_table_wrap: %llu rows x %llu bytes overflows",
			       (unsigned long long)rows, (unsigned long long)row_bytes);
	struct memory_impl *m = calloc(1, sizeof(*m));
	if (!m)
		return eht_err(ENOMEM, "table: out of memory");
	struct eht_table_info info = {
		.size = sizeof(info), .rows = rows, .row_bytes = row_bytes, .local_rows = rows,
		.name = name ? name : "memory",
	};
	m->host = host;
	m->bytes = rows * row_bytes;
	/* Huge pages halve the CPU gather's translation misses: advise THP on the whole 2 MiB pages
	 * inside the caller's memory (a hint; pages faulted in already stay as they are until khugepaged
	 * gets to them), then record what the memory is mapped with now. */
	uintptr_t lo = ((uintptr_t)host + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1);
	uintptr_t hi = ((uintptr_t)host + m->bytes) & ~(uintptr_t)((2u << 20) - 1);
	if (hi > lo && madvise((void *)lo, hi - lo, MADV_HUGEPAGE) != 0)
		eht_debug("table %s: MADV_HUGEPAGE: %s", info.name, strerror(errno));
	struct eht_page_stat ps;
	m->page_size = m->bytes && eht_page_stat(host, m->bytes, &ps) == 0 ? eht_page_stat_size(&ps) : 0;
	if (!m->page_size)
		m->page_size = 4096;
	if (device >= 0 && rows > 0) {
		if (eht_gpu_pin_reads(host, rows * row_bytes, device, &m->dptr) == 0) {
			m->pinned = true;
			m->device = device;
		} else {
			eht_warn("table %s: cannot pin %llu bytes for GPU %d (%s); CPU gathers only",
				 info.name, (unsigned long long)(rows * row_bytes), device, eht_last_error());
		}
	}
	int rc = eht_table_new(&info, &memory_ops, m, out);
	if (rc) {
		if (m->pinned)
			eht_gpu_unpin(host, rows * row_bytes);
		free(m);
	}
	return rc;
}
