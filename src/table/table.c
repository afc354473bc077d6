/* SPDX-License-Identifier: Apache-2.0 */
/* table.c: the tier-independent part of eht_table. */
#include "table/table_impl.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "util/err.h"

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
	*out = t;
	return 0;
}

int eht_table_check(eht_table *t) { return t && t->alive ? t->alive(t->alive_arg) : 0; }

int eht_table_get_info(const eht_table *t, struct eht_table_info *info)
{
	if (!t || !info || info->size < sizeof(*info))
		return eht_err(EINVAL, "eht_table_get_info: NULL table or info->size %u < %zu",
			       info ? info->size : 0, sizeof(*info));
	*info = t->info;
	return 0;
}

int eht_table_close(eht_table *t)
{
	if (!t)
		return 0;
	int rc = (t->ops && t->ops->close) ? t->ops->close(t) : 0;
	free(t);
	return rc;
}
