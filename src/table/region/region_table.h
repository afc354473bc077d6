/* SPDX-License-Identifier: Apache-2.0 */
/* region_table.h: a shared region seen as an eht_table (tiers region-pinned and region): made from a
 * ready region, shared across a group, or imported from another process's region file. */
#ifndef EHT_TABLE_REGION_TABLE_H
#define EHT_TABLE_REGION_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "table/table_impl.h"

/* Turns a ready region with recorded geometry (opts.rows, opts.row_bytes) into a table: tier
 * EHT_TIER_REGION_PINNED when the region is pinned (device_ptr and device filled in), else
 * EHT_TIER_REGION. The table takes the region over: on success *region is set to NULL and
 * eht_table_close() closes the region (unpins, unmaps). name NULL: the region's name. On failure
 * the region stays the caller's. Returns 0, -EINVAL (NULL, not ready, no geometry) or -ENOMEM. */
int eht_table_from_region(eht_region **region, const char *name, eht_table **out);
/* As eht_table_from_region; with report_pinned false the tier is EHT_TIER_REGION even when this
 * process pinned the region (a group where some rank could not pin reports one tier everywhere). */
int eht_table_from_region_ex(eht_region **region, const char *name, bool report_pinned, eht_table **out);

/* The registry's share (region_share.c): rank 0 creates a fresh region, the others open it, each
 * pins it unless tier is EHT_TIER_REGION, and every rank reports the same tier. */
int eht_region_share(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, int tier, bool quiet,
		     eht_table **out);
/* The registry's import (region_import.c): maps the region file fds[0] that desc describes
 * ("data_offset", "file_bytes", "numa", "page_size"), after checking those sizes against the file
 * (fstat), and pins it for a->device when that is >= 0 (a failed pin leaves a CPU-only table). */
int eht_region_import(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a, eht_table **out);

#endif
