/* SPDX-License-Identifier: Apache-2.0 */
/* region_table.h: a ready shared region seen as an eht_table (tiers region-pinned and region). */
#ifndef EHT_TABLE_REGION_TABLE_H
#define EHT_TABLE_REGION_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "eht.h"

/* Turns a ready region with recorded geometry (opts.rows, opts.row_bytes) into a table: tier
 * EHT_TIER_REGION_PINNED when the region is pinned (device_ptr and device filled in), else
 * EHT_TIER_REGION. The table takes the region over: on success *region is set to NULL and
 * eht_table_close() closes the region (unpins, unmaps). name NULL: the region's name. On failure
 * the region stays the caller's. Returns 0, -EINVAL (NULL, not ready, no geometry) or -ENOMEM. */
int eht_table_from_region(eht_region **region, const char *name, eht_table **out);
/* As eht_table_from_region; with report_pinned false the tier is EHT_TIER_REGION even when this
 * process pinned the region (a group where some rank could not pin reports one tier everywhere). */
int eht_table_from_region_ex(eht_region **region, const char *name, bool report_pinned, eht_table **out);
/* For a region table: the region file's descriptor (owned by the table), where the data starts in
 * the file, and the file's size, so another process can map the same pages. Returns 0 or -EINVAL. */
int eht_region_table_export(const eht_table *t, int *fd, uint64_t *data_offset, uint64_t *file_bytes);

#endif
