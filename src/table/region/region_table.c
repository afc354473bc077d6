/* SPDX-License-Identifier: Apache-2.0 */
/* region_table.c: the region tiers of eht_table: rows live in a shared region the table owns. */
#include "table/region/region_table.h"

#include "table/table_impl.h"
#include "os/region_impl.h"
#include "util/err.h"

static int region_table_close(eht_table *t)
{
	eht_region *r = t->impl;
	t->impl = NULL;
	return eht_region_close(&r);
}

static const struct eht_table_ops region_ops = {.close = region_table_close};

int eht_table_from_region_ex(eht_region **region, const char *name, bool report_pinned, eht_table **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_table_from_region: NULL out");
	*out = NULL;
	if (!region || !*region)
		return eht_err(EINVAL, "eht_table_from_region: NULL region");
	eht_region *r = *region;
	if (!eht_region_is_ready(r))
		return eht_err(EINVAL, "region %s is not ready: its creator must mark it ready first", eht_region_name(r));
	if (!eht_region_rows(r) || !eht_region_row_bytes(r))
		return eht_err(EINVAL, "region %s records no row geometry (open it with opts.rows and opts.row_bytes)",
			       eht_region_name(r));
	bool pinned = report_pinned && eht_region_is_pinned(r);
	struct eht_table_info info = {
		.size = sizeof(info),
		.tier = pinned ? EHT_TIER_REGION_PINNED : EHT_TIER_REGION,
		.rows = eht_region_rows(r),
		.row_bytes = eht_region_row_bytes(r),
		.first_row = 0,
		.local_rows = eht_region_rows(r),
		.host = eht_region_data(r),
		.device_ptr = pinned ? eht_region_device_ptr(r) : 0,
		.device = pinned ? eht_region_device(r) : -1,
		.numa_node = eht_region_numa_node(r),
		.page_size = eht_region_page_size(r),
		.name = name ? name : eht_region_name(r),
	};
	int rc = eht_table_new(&info, &region_ops, r, out);
	if (rc == 0)
		*region = NULL;
	return rc;
}

int eht_table_from_region(eht_region **region, const char *name, eht_table **out)
{
	return eht_table_from_region_ex(region, name, true, out);
}

int eht_region_table_export(const eht_table *t, int *fd, uint64_t *data_offset, uint64_t *file_bytes)
{
	if (!t || t->ops != &region_ops || !t->impl)
		return eht_err(EINVAL, "table %s is not a region table", t ? t->name : "(null)");
	const eht_region *r = t->impl;
	*fd = r->fd;
	*data_offset = (uint64_t)((const char *)r->data - (const char *)r->map);
	*file_bytes = r->map_bytes;
	return 0;
}
