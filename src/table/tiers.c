/* SPDX-License-Identifier: Apache-2.0 */
/* tiers.c: the registry of tiers: how eht_table_share finds the tiers it may share in (in order of
 * preference), eht_serve the tiers that open a checkpoint in place, and eht_table_import the tier a
 * description names; and the one list of tier names (eht_tier_name, eht_tier_count, eht_tier_caps:
 * what the CLI, the benches, Python and the completion list; the exported "tier" ids).
 * Adding a tier means adding its folder and one entry here. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "table/disk/disk_tier.h"
#include "table/host_numa/host_numa.h"
#include "table/region/region_table.h"
#include "table/table_impl.h"
#include "util/err.h"

static const struct eht_tier_def tiers[] = {
	{.id = "host-numa", .label = "host-NUMA", .tiers = {EHT_TIER_HOST_NUMA}, .names = {"host-numa"},
	 .share = eht_host_numa_share_tier, .import = eht_host_numa_import_desc, .fallback_note = ""},
	{.id = "region", .label = "region", .tiers = {EHT_TIER_REGION_PINNED, EHT_TIER_REGION},
	 .names = {"region-pinned", "region"}, .share = eht_region_share, .import = eht_region_import,
	 .fallback_note = " (a /dev/shm region, whose small GPU pages make lookups slower)"},
	{.id = "disk", .label = "disk", .tiers = {EHT_TIER_DISK}, .names = {"disk"},
	 .open_in_place = eht_disk_open_in_place, .import = eht_disk_import, .fallback_note = ""},
	{.id = "memory", .label = "memory", .tiers = {EHT_TIER_MEMORY}, .names = {"memory"}, .fallback_note = "",
	 .wraps = true},
	{.id = NULL},
};
#define NTIERS (sizeof(tiers) / sizeof(tiers[0]))

/* ---- the defaults of the optional ops: each refuses, naming the tier ---- */
static int share_none(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, int tier, bool quiet,
		      eht_table **out)
{
	return eht_err(EINVAL, "eht_table_share: tier %d (%s) cannot be shared", tier, eht_tier_name(tier));
}

static int open_none(eht_ckpt *ck, const char *weight, const char *scale, const char *name, uint32_t rank,
		     uint32_t nranks, unsigned flags, eht_table **out)
{
	return eht_err(ENOTSUP, "table %s: this tier does not open checkpoints in place", name ? name : "(null)");
}

static int import_none(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a, eht_table **out)
{
	const char *name = eht_desc_str(desc, "name"), *id = eht_desc_str(desc, "tier");
	return eht_err(EPROTO, "table %s: unknown tier '%s'", name ? name : "(none)", id ? id : "(none)");
}

static struct eht_tier_def filled[NTIERS];
static pthread_once_t filled_once = PTHREAD_ONCE_INIT;

static void fill(void)
{
	for (size_t i = 0; i < NTIERS; i++) {
		struct eht_tier_def *k = &filled[i];
		*k = tiers[i];
		if (!k->id)
			break;
		k->caps = (k->share ? EHT_TIER_CAN_SHARE : 0) | (k->open_in_place ? EHT_TIER_IN_PLACE : 0) |
			  (k->import ? EHT_TIER_CAN_IMPORT : 0);
		if (!k->share)
			k->share = share_none;
		if (!k->open_in_place)
			k->open_in_place = open_none;
		if (!k->import)
			k->import = import_none;
	}
}

const struct eht_tier_def *eht_tier_list(void)
{
	pthread_once(&filled_once, fill);
	return filled;
}

const struct eht_tier_def *eht_tier_find(const char *id)
{
	for (const struct eht_tier_def *k = eht_tier_list(); id && k->id; k++)
		if (!strcmp(k->id, id))
			return k;
	return NULL;
}

const struct eht_tier_def *eht_tier_of(int tier)
{
	for (const struct eht_tier_def *k = eht_tier_list(); tier > 0 && k->id; k++)
		if (k->tiers[0] == tier || k->tiers[1] == tier)
			return k;
	return NULL;
}

const char *eht_tier_name(int tier)
{
	const struct eht_tier_def *k = eht_tier_of(tier);
	if (!k)
		return "none";
	return k->names[k->tiers[0] == tier ? 0 : 1];
}

int eht_tier_count(void)
{
	int n = 0;
	for (const struct eht_tier_def *k = eht_tier_list(); k->id; k++)
		for (int i = 0; i < 2; i++)
			n = k->tiers[i] > n ? k->tiers[i] : n;
	return n;
}

int eht_tier_by_name(const char *name)
{
	char all[128] = "";
	size_t len = 0;
	for (int t = 1; t <= eht_tier_count(); t++) {
		if (name && !strcmp(name, eht_tier_name(t)))
			return t;
		if (len < sizeof(all))
			len += (size_t)snprintf(all + len, sizeof(all) - len, "%s%s", t > 1 ? ", " : "", eht_tier_name(t));
	}
	return eht_err(EINVAL, "eht_tier_by_name: no tier '%s' (the tiers: %s)", name ? name : "(null)", all);
}

unsigned eht_tier_caps(int tier)
{
	const struct eht_tier_def *k = eht_tier_of(tier);
	if (!k)
		return 0;
	return ((k->caps & EHT_TIER_CAN_SHARE) ? EHT_TIER_CAP_SHARE : 0u) |
	       ((k->caps & EHT_TIER_IN_PLACE) ? EHT_TIER_CAP_IN_PLACE : 0u) | (k->wraps ? EHT_TIER_CAP_WRAP : 0u);
}
