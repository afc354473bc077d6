/* SPDX-License-Identifier: Apache-2.0 */
/* table.c: the tier-independent part of eht_table, and the memory tier (eht_table_wrap). */
#include "table/table_impl.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cuda/cu_pin.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"

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
	if (!t)
		return eht_err(EINVAL, "eht_table_get_info: NULL table");
	return eht_opts_out(info, &t->info, sizeof(t->info), "eht_table_get_info: info");
}

int eht_table_close(eht_table *t)
{
	if (!t)
		return 0;
	int rc = (t->ops && t->ops->close) ? t->ops->close(t) : 0;
	free(t);
	return rc;
}

/* The memory tier: caller-owned memory, optionally pinned for one GPU. */
struct memory_impl {
	bool pinned;
};

static int memory_close(eht_table *t)
{
	struct memory_impl *m = t->impl;
	int rc = 0;
	if (m && m->pinned)
		rc = eht_cu_unpin(t->info.host, t->info.rows * t->info.row_bytes);
	free(m);
	return rc;
}

static const struct eht_table_ops memory_ops = {.close = memory_close};

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
		.size = sizeof(info), .tier = EHT_TIER_MEMORY, .rows = rows, .row_bytes = row_bytes,
		.local_rows = rows, .host = host, .device = -1, .numa_node = -1, .page_size = 4096,
		.name = name ? name : "memory",
	};
	if (device >= 0 && rows > 0) {
		uint64_t dptr = 0;
		if (eht_cu_pin(host, rows * row_bytes, device, 0, &dptr) == 0) {
			m->pinned = true;
			info.device_ptr = dptr;
			info.device = device;
		} else {
			eht_warn("table %s: cannot pin %llu bytes for GPU %d (%s); CPU gathers only",
				 info.name, (unsigned long long)(rows * row_bytes), device, eht_last_error());
		}
	}
	int rc = eht_table_new(&info, &memory_ops, m, out);
	if (rc) {
		if (m->pinned)
			eht_cu_unpin(host, rows * row_bytes);
		free(m);
	}
	return rc;
}
