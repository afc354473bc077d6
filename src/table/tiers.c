/* SPDX-License-Identifier: Apache-2.0 */
/* tiers.c: the registry of tiers: how eht_table_share finds the tiers it may share in (in order of
 * preference), eht_serve the tiers that open a checkpoint in place, and eht_table_import the tier a
 * description names. Adding a tier means adding its folder and one entry here. */
#include <string.h>

#include "table/disk/disk_tier.h"
#include "table/host_numa/host_numa.h"
#include "table/region/region_table.h"
#include "table/table_impl.h"

const struct eht_tier_def eht_tiers[] = {
	{.id = "host-numa", .label = "host-NUMA", .tiers = {EHT_TIER_HOST_NUMA}, .share = eht_host_numa_share_tier,
	 .import = eht_host_numa_import_desc, .fallback_note = ""},
	{.id = "region", .label = "region", .tiers = {EHT_TIER_REGION_PINNED, EHT_TIER_REGION},
	 .share = eht_region_share, .import = eht_region_import,
	 .fallback_note = " (a /dev/shm region, whose small GPU pages make lookups slower)"},
	{.id = "disk", .label = "disk", .tiers = {EHT_TIER_DISK}, .open_in_place = eht_disk_open_in_place,
	 .import = eht_disk_import, .fallback_note = ""},
	{.id = "memory", .label = "memory", .tiers = {EHT_TIER_MEMORY}, .fallback_note = ""},
	{.id = NULL},
};

const struct eht_tier_def *eht_tier_find(const char *id)
{
	for (const struct eht_tier_def *k = eht_tiers; id && k->id; k++)
		if (!strcmp(k->id, id))
			return k;
	return NULL;
}

const struct eht_tier_def *eht_tier_of(int tier)
{
	for (const struct eht_tier_def *k = eht_tiers; tier > 0 && k->id; k++)
		if (k->tiers[0] == tier || k->tiers[1] == tier)
			return k;
	return NULL;
}
