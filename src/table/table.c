/* SPDX-License-Identifier: Apache-2.0 */
/* table.c: the tier-independent part of eht_table. */
#include "table/table_impl.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

#include <unistd.h>

#include "os/pagesize.h"
#include "util/err.h"
#include "util/opts.h"

/* ---- the defaults of the optional ops (eht_table_ops) ---- */
static void describe_none(const eht_table *t, struct eht_table_info *info) {}

static int read_rows_host(eht_table *t, const uint64_t *rows, size_t n, void *dst, unsigned flags)
{
	const struct eht_table_info *ti = &t->info;
	if (!ti->host)
		return eht_err(EOPNOTSUPP, "table %s (%s tier) has neither a host pointer nor its own read_rows", t->name,
			       eht_tier_name(ti->tier));
	if (flags & EHT_ROWS_TO_DEVICE)
		return eht_err(EOPNOTSUPP, "table %s (%s tier): rows are read into host memory only (GPUs read this "
				       "tier through its device pointer; stage through host memory otherwise)",
			       t->name, eht_tier_name(ti->tier));
	uint8_t *out = dst;
	for (size_t i = 0; i < n; i++) {
		if (rows[i] < ti->first_row || rows[i] - ti->first_row >= ti->local_rows)
			return eht_err(ERANGE, "table %s: row %llu is outside its rows [%llu, %llu)", t->name,
				       (unsigned long long)rows[i], (unsigned long long)ti->first_row,
				       (unsigned long long)(ti->first_row + ti->local_rows));
		memcpy(out + i * ti->row_bytes, (const uint8_t *)ti->host + (rows[i] - ti->first_row) * ti->row_bytes,
		       ti->row_bytes);
	}
	return 0;
}

static int export_none(const eht_table *t, json_t *desc, int **fds, size_t *nfds)
{
	return eht_err(ENOTSUP, "table %s (%s tier) cannot be handed to another process", t->name,
		       eht_tier_name(t->info.tier));
}

static void seal_none(eht_table *t) {}

static int close_none(eht_table *t) { return 0; }

/* The tier's ops with every NULL one replaced by its default: the only place that tests them. */
static void fill_ops(struct eht_table_ops *full, const struct eht_table_ops *ops)
{
	static const struct eht_table_ops none = {0};
	*full = *(ops ? ops : &none);
	if (!full->describe)
		full->describe = describe_none;
	if (!full->read_rows)
		full->read_rows = read_rows_host;
	if (!full->export_to)
		full->export_to = export_none;
	if (!full->seal)
		full->seal = seal_none;
	if (!full->close)
		full->close = close_none;
}

int eht_table_new(const struct eht_table_info *info, const struct eht_table_ops *ops, void *impl,
		  eht_table **out)
{
	size_t nl = info->name ? strlen(info->name) : 0;
	if (nl >= sizeof(((eht_table *)0)->name))
		return eht_err(ENAMETOOLONG, "table name '%.60s...' has %zu characters: name too long (at most %zu)",
			       info->name, nl, sizeof(((eht_table *)0)->name) - 1);
	eht_table *t = calloc(1, sizeof(*t));
	if (!t)
		return eht_err(ENOMEM, "table: out of memory");
	t->info = *info;
	t->info.size = sizeof(t->info);
	if (info->name)
		snprintf(t->name, sizeof(t->name), "%s", info->name);
	t->info.name = t->name;
	t->tier_ops = ops;
	fill_ops(&t->ops_full, ops);
	t->ops = &t->ops_full;
	t->impl = impl;
	t->ops->describe(t, &t->info);
	t->copy = (struct eht_table_copy){.size = sizeof(t->copy), .count = 1, .numa_node = t->info.numa_node,
					  .writer = 1};
	*out = t;
	return 0;
}

int eht_table_check(eht_table *t) { return t && t->alive ? t->alive(t->alive_arg) : 0; }

int eht_table_get_info(const eht_table *t, struct eht_table_info *info)
{
	if (!t)
		return eht_err(EINVAL, "eht_table_get_info: NULL table");
	return eht_opts_out(info, &t->info, sizeof(t->info), "eht_table_get_info: info");
}

int eht_table_close(eht_table *t)
{
	if (!t)
		return 0;
	int rc = t->ops->close(t);
	free(t->hot_rows);
	free(t);
	return rc;
}

int eht_table_export(const eht_table *t, json_t *desc, int **fds, size_t *nfds)
{
	*fds = NULL;
	*nfds = 0;
	if (!t)
		return eht_err(ENOTSUP, "table (null) (no tier) cannot be handed to another process");
	const struct eht_tier_def *def = eht_tier_of(t->info.tier);
	if (!def || t->ops->export_to == export_none) /* nothing to describe: the tier's own words */
		return export_none(t, desc, fds, nfds);
	json_object_set_new(desc, "name", json_string(t->name));
	json_object_set_new(desc, "tier", json_string(def->id));
	json_object_set_new(desc, "rows", json_integer((json_int_t)t->info.rows));
	json_object_set_new(desc, "row_bytes", json_integer((json_int_t)t->info.row_bytes));
	return t->ops->export_to(t, desc, fds, nfds);
}

void eht_table_seal(eht_table *t)
{
	if (t) {
		t->ops->seal(t);
		if (t->ops->describe) /* a seal may move or drop a pin: the info follows */
			t->ops->describe(t, &t->info);
	}
}

int eht_table_read_rows(eht_table *t, const uint64_t *rows, size_t n, void *dst, unsigned flags)
{
	if (!t || (n && (!rows || !dst)) || (flags & ~EHT_ROWS_TO_DEVICE))
		return eht_err(EINVAL, "eht_table_read_rows: %s", !t ? "NULL table" : (flags & ~EHT_ROWS_TO_DEVICE)
										 ? "unknown flags" : "NULL rows or dst");
	return t->ops->read_rows(t, rows, n, dst, flags);
}

int eht_table_import(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a, eht_table **out)
{
	*out = NULL;
	const char *id = eht_desc_str(desc, "tier");
	const char *name = eht_desc_str(desc, "name");
	const struct eht_tier_def *tier = id ? eht_tier_find(id) : NULL;
	if (!name || !eht_desc_u64(desc, "row_bytes"))
		return eht_err(EPROTO, "a table description without name or row_bytes");
	if (!tier)
		return eht_err(EPROTO, "table %s: unknown tier '%s'", name, id ? id : "(none)");
	return tier->import(desc, fds, nfds, a, out); /* a tier without import refuses in its own words */
}

void eht_table_import_end(struct eht_import_keep *keep)
{
	eht_ckpt_close(keep->ckpt);
	keep->ckpt = NULL;
}

void eht_table_set_copy(eht_table *t, int index, int count, int numa_node, int writer)
{
	t->copy.index = index;
	t->copy.count = count;
	t->copy.numa_node = numa_node;
	t->copy.writer = writer;
}

int eht_table_copy(const eht_table *t, struct eht_table_copy *copy)
{
	if (!t)
		return eht_err(EINVAL, "eht_table_copy: NULL table");
	return eht_opts_out(copy, &t->copy, sizeof(t->copy), "eht_table_copy: copy");
}

int eht_table_page_stat(const eht_table *t, struct eht_page_stat *st)
{
	memset(st, 0, sizeof(*st));
	if (!t || !t->info.host)
		return -ENOENT;
	uint64_t bytes = t->info.local_rows * t->info.row_bytes;
	return eht_page_stat(t->info.host, (size_t)bytes, st);
}

uint64_t eht_table_page_size(const eht_table *t)
{
	if (!t)
		return 0;
	if (t->info.tier == EHT_TIER_DISK) {
		/* Reads go through the page cache, which maps nothing here: its page is the base page. */
		long ps = sysconf(_SC_PAGESIZE);
		return ps > 0 ? (uint64_t)ps : 4096;
	}
	struct eht_page_stat st;
	return eht_table_page_stat(t, &st) == 0 ? eht_page_stat_size(&st) : 0;
}

const char *eht_table_page_text(const eht_table *t, char *buf, size_t len)
{
	struct eht_page_stat st;
	if (t && t->info.tier == EHT_TIER_DISK)
		snprintf(buf, len, "%llu KiB (page cache)", (unsigned long long)(eht_table_page_size(t) >> 10));
	else if (eht_table_page_stat(t, &st) != 0)
		snprintf(buf, len, "unknown");
	else
		eht_page_stat_text(&st, buf, len);
	return buf;
}
