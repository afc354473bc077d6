/* SPDX-License-Identifier: Apache-2.0 */
/* share.c: eht_table_share: the tiers of the registry that can be shared, tried in its order (host-NUMA
 * first, then a shared region), with every rank of the group ending in the same tier. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/dev.h"
#include "table/numa_copy.h"
#include "table/share_huge.h"
#include "table/table_impl.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"

/* A group that cannot agree on anything more, or arguments that would fail the same way again. */
static bool share_fatal(int rc)
{
	return rc == -ECONNRESET || rc == -ETIMEDOUT || rc == -EPROTO || rc == -EINVAL;
}

/* The auto tier's first try where rank 0 finds room in the huge page pool for the table
 * (share_huge.h): region-pinned, on 2 MiB pages. Rank 0 decides for the group, since the pool is
 * the node's and a rank that looked after rank 0 took pages would see less. Returns 0 with *out,
 * 1 when not tried or failed (the usual order follows; why, at info level), or a group's error. */
static int share_huge_first(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, const char *name,
			    eht_table **out)
{
	int32_t huge = 0;
	if (eht_group_rank(g) == 0) {
		int node = opts && (opts->flags & EHT_SHARE_NUMA_NODE) ? opts->numa_node
			   : eht_copy_node_for(opts && opts->device >= 0 ? opts->device : 0);
		huge = eht_share_huge_first(bytes, eht_dev_count(), node);
	}
	int rc = eht_group_broadcast(g, &huge, sizeof(huge));
	if (rc || !huge)
		return rc ? rc : 1;
	const struct eht_tier_def *region = eht_tier_of(EHT_TIER_REGION_PINNED);
	rc = region->share(bytes, g, opts, EHT_TIER_REGION_PINNED, true, out);
	if (rc == 0 || share_fatal(rc))
		return rc;
	if (eht_group_rank(g) == 0)
		eht_info("table %s: region-pinned on huge pages failed (%s); trying the tiers in order", name,
			 eht_last_error());
	eht_err_clear();
	return 1;
}

/* One table for the whole group, in the first tier that works (or opts->tier). */
static int share_one(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, eht_table **out)
{
	int tier = opts ? opts->tier : 0;
	const struct eht_tier_def *forced = eht_tier_of(tier);
	if (tier != 0 && (!forced || !(forced->caps & EHT_TIER_CAN_SHARE)))
		return eht_err(EINVAL, "eht_table_share: tier %d (%s) cannot be shared", tier, eht_tier_name(tier));
	const char *name = opts && opts->name ? opts->name : "table";
	if (tier == 0) {
		int hrc = share_huge_first(bytes, g, opts, name, out);
		if (hrc <= 0)
			return hrc;
	}

	/* Every rank gets the same answer from each step, so every rank takes the same next step. */
	const struct eht_tier_def *first = NULL, *last = NULL;
	char cause[EHT_ERR_MAX] = ""; /* whole messages: a cut one loses its fix */
	int rc = -ENOTSUP;
	for (const struct eht_tier_def *k = eht_tier_list(); k->id; k++) {
		if (!(k->caps & EHT_TIER_CAN_SHARE) || (forced && k != forced))
			continue;
		last = k;
		rc = k->share(bytes, g, opts, tier, tier == 0, out);
		if (rc == 0 || forced)
			break;
		if (share_fatal(rc))
			return rc;
		if (!first) {
			first = k;
			snprintf(cause, sizeof(cause), "%s", eht_last_error());
		}
	}
	if (tier == 0 && first && last != first && eht_group_rank(g) == 0) {
		if (rc == 0) {
			struct eht_table_info info = {.size = sizeof(info)};
			if (eht_table_get_info(*out, &info) != 0)
				info.tier = EHT_TIER_NONE;
			/* Without a GPU the region is what the tiers are for (README's table): no warning, and
			 * no word of GPU pages. */
			if (eht_dev_count() == 0)
				eht_info("table %s: no GPU (%s); using the %s tier", name, cause, eht_tier_name(info.tier));
			else
				eht_warn("table %s: %s sharing unavailable (%s); using the %s tier%s", name, first->label,
					 cause, eht_tier_name(info.tier), last->fallback_note);
		} else {
			char why[EHT_ERR_MAX];
			snprintf(why, sizeof(why), "%s", eht_last_error());
			eht_warn("table %s: %s sharing unavailable (%s), and the %s tier too (%s)", name, first->label,
				 cause, last->label, why);
			eht_err(rc, "%s", why);
		}
	}
	return rc;
}

/* What rank 0 decided for EHT_SHARE_PER_NUMA: the copies' nodes, or one copy and why. */
struct copy_plan {
	int32_t n;
	int32_t nodes[EHT_COPIES_MAX];
	char why[EHT_ERR_MAX];
};

/* EHT_SHARE_PER_NUMA: every rank says its node; rank 0 checks that a copy fits on each and
 * broadcasts the plan; then each copy is shared by the whole group (a collective per copy, placed
 * with EHT_SHARE_NUMA_NODE, every copy in the tier the first one got), and each rank keeps its
 * node's copy only: the other copies live on in the ranks of their nodes. */
static int share_per_numa(uint64_t bytes, eht_group *g, const struct eht_share_opts *o, eht_table **out)
{
	const int rank = eht_group_rank(g), size = eht_group_size(g);
	const char *name = o->name ? o->name : "table";
	int32_t mine = eht_copy_node_for(o->device);
	int32_t *all = calloc((size_t)size, sizeof(*all));
	struct copy_plan *plan = calloc(1, sizeof(*plan));
	eht_table *copies[EHT_COPIES_MAX] = {0};
	struct eht_share_opts so = *o;
	so.flags &= ~EHT_SHARE_PER_NUMA;
	int rc = 0;
	if (!all || !plan) {
		free(all);
		free(plan);
		return eht_err(ENOMEM, "share: out of memory");
	}
	int grc = eht_group_allgather(g, &mine, sizeof(mine), all);
	if (grc) {
		rc = grc;
		goto out;
	}
	if (rank == 0) {
		int nodes[EHT_COPIES_MAX], n = 0;
		for (int r = 0; r < size; r++) { /* ascending, distinct */
			int i = 0;
			while (i < n && nodes[i] < all[r])
				i++;
			if ((i < n && nodes[i] == all[r]) || n == EHT_COPIES_MAX)
				continue;
			memmove(nodes + i + 1, nodes + i, (size_t)(n - i) * sizeof(int));
			nodes[i] = all[r];
			n++;
		}
		for (int i = 0; i < n; i++)
			plan->nodes[i] = nodes[i];
		plan->n = n;
		for (int i = 0; n > 1 && i < n; i++)
			if (eht_copy_fits(nodes[i], bytes) != 0) {
				snprintf(plan->why, sizeof(plan->why), "%s", eht_last_error());
				plan->n = 1;
				break;
			}
		eht_err_clear();
	}
	grc = eht_group_broadcast(g, plan, sizeof(*plan));
	if (grc) {
		rc = grc;
		goto out;
	}
	if (plan->n > 1) {
		so.flags |= EHT_SHARE_NUMA_NODE;
		for (int k = 0; !rc && k < plan->n; k++) {
			so.numa_node = plan->nodes[k];
			rc = share_one(bytes, g, &so, &copies[k]);
			if (!rc && k == 0) { /* every copy in the tier the first one got */
				struct eht_table_info info = {.size = sizeof(info)};
				if (eht_table_get_info(copies[0], &info) == 0)
					so.tier = info.tier;
			}
		}
		if (rc) {
			for (int k = 0; k < plan->n; k++)
				eht_table_close(copies[k]);
			memset(copies, 0, sizeof(copies));
			if (share_fatal(rc))
				goto out;
			snprintf(plan->why, sizeof(plan->why), "%s", eht_last_error());
			plan->n = 1;
			so = *o;
			so.flags &= ~EHT_SHARE_PER_NUMA;
		}
	}
	if (plan->n <= 1) {
		if (rank == 0 && plan->why[0])
			eht_warn("table %s: one copy for every NUMA node of the group, not one per node: %s", name, plan->why);
		rc = share_one(bytes, g, &so, out);
		if (!rc)
			eht_table_set_copy(*out, 0, 1, (*out)->info.numa_node, rank == 0);
		goto out;
	}
	int my = eht_copy_pick(plan->nodes, plan->n, mine), first = -1;
	for (int r = 0; r < size && first < 0; r++)
		if (eht_copy_pick(plan->nodes, plan->n, all[r]) == my)
			first = r;
	for (int k = 0; k < plan->n; k++)
		if (k != my)
			eht_table_close(copies[k]);
	*out = copies[my];
	eht_table_set_copy(*out, my, plan->n, plan->nodes[my], first == rank);
out:
	free(all);
	free(plan);
	return rc;
}

int eht_table_share(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, eht_table **out)
{
	if (!out || !g)
		return eht_err(EINVAL, "eht_table_share: NULL %s", out ? "group" : "out");
	*out = NULL;
	struct eht_share_opts oc = {0};
	int orc = eht_opts_in(&oc, sizeof(oc), opts, "eht_table_share: opts");
	if (orc)
		return orc;
	if (opts && (oc.flags & EHT_SHARE_PER_NUMA))
		return share_per_numa(bytes, g, &oc, out);
	int rc = share_one(bytes, g, opts ? &oc : NULL, out);
	if (!rc)
		eht_table_set_copy(*out, 0, 1, (*out)->info.numa_node, eht_group_rank(g) == 0);
	return rc;
}
