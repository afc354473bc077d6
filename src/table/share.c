/* SPDX-License-Identifier: Apache-2.0 */
/* share.c: eht_table_share: the tiers of the registry that can be shared, tried in its order (host-NUMA
 * first, then a shared region), with every rank of the group ending in the same tier. */
#include <errno.h>
#include <stdio.h>

#include "table/table_impl.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"

int eht_table_share(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, eht_table **out)
{
	if (!out || !g)
		return eht_err(EINVAL, "eht_table_share: NULL %s", out ? "group" : "out");
	*out = NULL;
	struct eht_share_opts oc = {0};
	int orc = eht_opts_in(&oc, sizeof(oc), opts, "eht_table_share: opts");
	if (orc)
		return orc;
	if (opts)
		opts = &oc;
	int tier = opts ? opts->tier : 0;
	const struct eht_tier_def *forced = eht_tier_of(tier);
	if (tier != 0 && (!forced || !(forced->caps & EHT_TIER_CAN_SHARE)))
		return eht_err(EINVAL, "eht_table_share: tier %d (%s) cannot be shared", tier, eht_tier_name(tier));
	const char *name = opts && opts->name ? opts->name : "table";

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
		/* A broken group cannot agree on anything more; bad arguments would fail the same way again. */
		if (rc == -ECONNRESET || rc == -ETIMEDOUT || rc == -EPROTO || rc == -EINVAL)
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
			eht_warn("table %s: %s sharing unavailable (%s); using the %s tier%s", name, first->label, cause,
				 eht_tier_name(info.tier), last->fallback_note);
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
