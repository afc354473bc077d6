/* SPDX-License-Identifier: Apache-2.0 */
/* table.c: the tier-independent part of eht_table. */
#include "table/table_impl.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

#include "util/err.h"
#include "util/opts.h"

const char *eht_tier_name(int tier)
{
	switch (tier) {
	case EHT_TIER_HOST_NUMA: return "host-numa";
	case EHT_TIER_REGION_PINNED: return "region-pinned";
	case EHT_TIER_REGION: return "region";
	case EHT_TIER_DISK: return "disk";
	case EHT_TIER_MEMORY: return "memory";
	default: return "none";
	}
}

int eht_table_new(const struct eht_table_info *info, const struct eht_table_ops *ops, void *impl,
		  eht_table **out)
{
	eht_table *t = calloc(1, sizeof(*t));
	if (!t)
		return eht_err(ENOMEM, "table: out of memory");
	t->info = *info;
	t->info.size = sizeof(t->info);
	if (info->name)
		snprintf(t->name, sizeof(t->name), "%s", info->name);
	t->info.name = t->name;
	t->ops = ops;
	t->impl = impl;
	if (ops && ops->describe)
		ops->describe(t, &t->info);
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
	int rc = (t->ops && t->ops->close) ? t->ops->close(t) : 0;
	free(t->hot_rows);
	free(t);
	return rc;
}

int eht_table_export(const eht_table *t, json_t *desc, int **fds, size_t *nfds)
{
	*fds = NULL;
	*nfds = 0;
	if (!t || !t->ops || !t->ops->export_to)
		return eht_err(ENOTSUP, "table %s (%s tier) cannot be handed to another process", t ? t->name : "(null)",
			       t ? eht_tier_name(t->info.tier) : "no");
	json_object_set_new(desc, "name", json_string(t->name));
	json_object_set_new(desc, "tier", json_string(t->ops->id));
	json_object_set_new(desc, "rows", json_integer((json_int_t)t->info.rows));
	json_object_set_new(desc, "row_bytes", json_integer((json_int_t)t->info.row_bytes));
	return t->ops->export_to(t, desc, fds, nfds);
}

void eht_table_seal(eht_table *t)
{
	if (t && t->ops && t->ops->seal)
		t->ops->seal(t);
}

int eht_table_import(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a, eht_table **out)
{
	*out = NULL;
	const char *id = eht_desc_str(desc, "tier");
	const char *name = eht_desc_str(desc, "name");
	const struct eht_tier_def *tier = id ? eht_tier_find(id) : NULL;
	if (!name || !eht_desc_u64(desc, "row_bytes"))
		return eht_err(EPROTO, "a table description without name or row_bytes");
	if (!tier || !tier->import)
		return eht_err(EPROTO, "table %s: unknown tier '%s'", name, id ? id : "(none)");
	return tier->import(desc, fds, nfds, a, out);
}

void eht_table_set_hotset(eht_table *t, int64_t *rows, uint64_t n)
{
	free(t->hot_rows);
	t->hot_rows = rows;
	t->hot_n = rows ? n : 0;
}

int eht_table_hotset(const eht_table *t, const int64_t **rows, uint64_t *n)
{
	if (!t || !rows || !n)
		return eht_err(EINVAL, "eht_table_hotset: NULL %s", !t ? "table" : !rows ? "rows" : "n");
	*rows = NULL;
	*n = 0;
	if (!t->hot_rows)
		return eht_err(ENOENT, "table %s has no hot set (its server was started without one for it: "
				       "eht serve --hotset %s=FILE)", t->name, t->name);
	*rows = t->hot_rows;
	*n = t->hot_n;
	return 0;
}
