/* SPDX-License-Identifier: Apache-2.0 */
/* memory_split.c: the memory tier over an engine's own split storage (eht_table_wrap_split,
 * eht_table_wrap_split2): weights [rows, wb] and scales [rows, sb] as two arrays (vLLM's layout: one
 * allocation or two), caller-owned, never copied or re-laid out. A row is read as the packed row its
 * weights and scales make (wb bytes, then sb), so every lookup path that reads rows through the tier
 * sees packed rows; the GPU's in-place kernels read the two arrays where they lie (t->split). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/dev.h"
#include "gpu/pin.h"
#include "os/pagesize.h"
#include "table/table_impl.h"
#include "util/err.h"
#include "util/log.h"
#include "util/opts.h"

/* Rows prefetched ahead of the copy: a row is two random accesses, both in flight early. */
#define SPLIT_PREFETCH 8

struct split_pin {
	void *p;
	size_t n;
};

/* The arrays themselves (and their device addresses) are the table's t->split: what the tier keeps
 * beside them. */
struct split_impl {
	uint64_t page_size;
	int device;              /* the GPU that reads both arrays in place (t->split.dw, ds); -1: none */
	struct split_pin pin[2]; /* what this table registered for it (unregistered at close) */
};

static void split_describe(const eht_table *t, struct eht_table_info *info)
{
	const struct split_impl *m = t->impl;
	info->tier = EHT_TIER_MEMORY;
	info->host = NULL; /* no packed rows to point at: rows come through read_rows */
	info->device_ptr = 0; /* the GPU reads the two arrays (t->split), not packed rows */
	info->device = m->device;
	info->numa_node = -1;
	info->page_size = m->page_size;
}

static inline void split_prefetch(const struct eht_table_split *m, uint64_t r)
{
	for (uint32_t o = 0; o < m->wb; o += 64)
		__builtin_prefetch(m->w + r * m->wb + o, 0, 3);
	__builtin_prefetch(m->s + r * m->sb, 0, 3);
}

static int split_read_rows(eht_table *t, const uint64_t *rows, size_t n, void *dst, unsigned flags)
{
	const struct eht_table_split *m = &t->split;
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

static int split_unpin(struct split_impl *m)
{
	int rc = 0;
	for (int k = 0; k < 2; k++)
		if (m->pin[k].p) {
			int r = eht_gpu_unpin(m->pin[k].p, m->pin[k].n);
			rc = rc ? rc : r;
			m->pin[k] = (struct split_pin){0};
		}
	return rc;
}

/* On a failure (rc): unregisters what was registered, keeping the failure's message. */
static void split_unpin_failed(struct split_impl *m, int rc)
{
	struct eht_err_saved cause; /* unregistering must not overwrite why it failed */
	eht_err_save(&cause);
	split_unpin(m);
	eht_err_restore(&cause, rc);
}

static int split_close(eht_table *t)
{
	int rc = split_unpin(t->impl);
	free(t->impl);
	return rc;
}

/* No export_to: the memory is the caller's. */
static const struct eht_table_ops split_ops = {.describe = split_describe, .read_rows = split_read_rows,
					       .close = split_close};

/* Registers [p, p + n) for GPU `device` for the table's life (pin slot k): *d its device address. */
static int pin_range(struct split_impl *m, int k, const uint8_t *p, size_t n, int device, uint64_t *d)
{
	int rc = eht_gpu_pin_reads((void *)(uintptr_t)p, n, device, d); /* registering writes nothing */
	if (!rc)
		m->pin[k] = (struct split_pin){(void *)(uintptr_t)p, n};
	return rc;
}

/* Both arrays of sp readable by GPU `device` (sp->dw, sp->ds set). Each one the engine has GPU-mapped
 * already (pinned, or a cuMem mapping) is read at its device address; the others are registered here.
 * Two arrays that share or touch a page (one allocation: the scales right after the weights), neither
 * mapped, are registered as one range: a page must not be registered twice. */
static int split_gpu(struct split_impl *m, struct eht_table_split *sp, uint64_t rows, int device, const char *name)
{
	int rc = eht_dev_use(device);
	if (rc)
		return eht_err_prefix(rc, "table %s: GPU %d for in-place reads", name, device);
	const size_t wn = rows * sp->wb, sn = rows * sp->sb, pg = 4096;
	eht_dptr dw = 0, ds = 0;
	const bool w_mapped = eht_dev_host_mapped(sp->w, wn, &dw) == 0, s_mapped = eht_dev_host_mapped(sp->s, sn, &ds) == 0;
	/* Addresses as integers: the two arrays may be two objects, which C pointers must not compare. */
	const uintptr_t w = (uintptr_t)sp->w, s = (uintptr_t)sp->s, lo = w < s ? w : s;
	const uintptr_t hi = w + wn > s + sn ? w + wn : s + sn, first_end = lo == w ? w + wn : s + sn;
	const uintptr_t second = lo == w ? s : w;
	const bool one = !w_mapped && !s_mapped && (first_end + pg - 1) / pg >= second / pg;
	const char *what = "weights and scales";
	uintptr_t at = lo;
	size_t len = (size_t)(hi - lo);
	uint64_t d = 0;
	sp->dw = dw;
	sp->ds = ds;
	if (one) {
		if (!(rc = pin_range(m, 0, (const uint8_t *)lo, len, device, &d))) {
			sp->dw = d + (w - lo);
			sp->ds = d + (s - lo);
		}
	} else {
		if (!w_mapped) {
			what = "weights", at = w, len = wn;
			rc = pin_range(m, 0, sp->w, wn, device, &sp->dw);
		}
		if (!rc && !s_mapped) {
			what = "scales", at = s, len = sn;
			rc = pin_range(m, 1, sp->s, sn, device, &sp->ds);
		}
	}
	if (rc) {
		split_unpin_failed(m, rc);
		sp->dw = sp->ds = 0;
		return eht_err_prefix(rc, "table %s: GPU %d cannot read the %s [%p, +%zu) in place", name, device, what,
				      (const void *)at, len);
	}
	m->device = device;
	return 0;
}

int eht_table_wrap_split2(const void *weights, uint64_t weight_bytes, const void *scales, uint64_t scale_bytes,
			  uint64_t rows, const struct eht_wrap_split_opts *opts, eht_table **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_table_wrap_split: NULL out");
	*out = NULL;
	struct eht_wrap_split_opts o = {.size = sizeof(o), .device = -1};
	int rc = eht_opts_in(&o, sizeof(o), opts, "eht_wrap_split_opts");
	if (rc)
		return rc;
	const char *name = o.name ? o.name : "memory-split";
	if (o.flags & ~EHT_WRAP_SPLIT_FLAGS)
		return eht_err(EINVAL, "eht_table_wrap_split (table %s): unknown flags 0x%x", name,
			       o.flags & ~EHT_WRAP_SPLIT_FLAGS);
	if (o.device < -1)
		return eht_err(EINVAL, "eht_table_wrap_split (table %s): device %d (a GPU ordinal, or -1)", name, o.device);
	if (!weights || !scales || !weight_bytes || !scale_bytes)
		return eht_err(EINVAL, "eht_table_wrap_split (table %s): %s", name,
			       !weights ? "NULL weights" : !scales ? "NULL scales" : "zero weight or scale bytes per row");
	if (weight_bytes + scale_bytes > 65536 || rows > SIZE_MAX / (weight_bytes + scale_bytes))
		return eht_err(EOVERFLOW, "eht_table_wrap_split (table %s): %llu rows of %llu + %llu bytes (rows at most 64 KiB)",
			       name, (unsigned long long)rows, (unsigned long long)weight_bytes,
			       (unsigned long long)scale_bytes);
	const uint8_t *w = weights, *s = scales;
	if ((s < w + rows * weight_bytes && w < s + rows * scale_bytes))
		return eht_err(EINVAL, "eht_table_wrap_split (table %s): the weights [%p, +%llu) and scales [%p, +%llu) overlap",
			       name, weights, (unsigned long long)(rows * weight_bytes), scales,
			       (unsigned long long)(rows * scale_bytes));
	struct split_impl *m = calloc(1, sizeof(*m));
	if (!m)
		return eht_err(ENOMEM, "table %s: out of memory", name);
	m->device = -1;
	struct eht_table_split sp = {.w = w, .s = s, .wb = (uint32_t)weight_bytes, .sb = (uint32_t)scale_bytes};
	struct eht_page_stat ps;
	m->page_size = rows && eht_page_stat(weights, rows * weight_bytes, &ps) == 0 ? eht_page_stat_size(&ps) : 0;
	if (!m->page_size)
		m->page_size = 4096;
	if (o.device >= 0 && rows > 0 && (rc = split_gpu(m, &sp, rows, o.device, name))) {
		if (!(o.flags & EHT_WRAP_SPLIT_CPU_FALLBACK)) {
			free(m);
			return rc;
		}
		eht_warn("%s; CPU gathers only", eht_last_error());
	}
	struct eht_table_info info = {.size = sizeof(info), .rows = rows, .row_bytes = weight_bytes + scale_bytes,
				      .local_rows = rows, .name = name};
	rc = eht_table_new(&info, &split_ops, m, out);
	if (rc) {
		split_unpin_failed(m, rc);
		free(m);
		return rc;
	}
	(*out)->split = sp;
	return 0;
}

int eht_table_wrap_split(const void *weights, uint64_t weight_bytes, const void *scales, uint64_t scale_bytes,
			 uint64_t rows, const char *name, eht_table **out)
{
	struct eht_wrap_split_opts o = {.size = sizeof(o), .device = -1, .name = name};
	return eht_table_wrap_split2(weights, weight_bytes, scales, scale_bytes, rows, &o, out);
}
