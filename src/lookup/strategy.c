/* SPDX-License-Identifier: Apache-2.0 */
/* strategy.c: the table of lookup strategies (each one a file of strategy/ with its ops, see
 * core.h), the ops a strategy leaves out filled once with defaults (callers never test an op),
 * the checks of whether a strategy can serve an engine and a call, its init on first use, and the
 * public enumeration. The only place in src/lookup that tells strategies apart by id: a new strategy
 * is its file and one row here (and its id in include/eht.h); the CLI, Python and the completion
 * list them through eht_lookup_strategy_count / _name. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lookup/core.h"
#include "lookup/gather/distinct.h"
#include "util/err.h"

extern const struct lk_strategy eht_lk_auto, eht_lk_direct, eht_lk_sorted, eht_lk_host_strategy;

/* Indexed by id (enum eht_lookup_strategy), no gaps. */
static const struct lk_strategy *const defs[] = {
	[EHT_LOOKUP_AUTO] = &eht_lk_auto,
	[EHT_LOOKUP_DIRECT] = &eht_lk_direct,
	[EHT_LOOKUP_SORTED] = &eht_lk_sorted,
	[EHT_LOOKUP_HOST] = &eht_lk_host_strategy,
};

/* ------------------------------------------------------------------- defaults */
static int no_init(eht_lookup *lk)
{
	(void)lk;
	return 0;
}

static void no_fini(eht_lookup *lk) { (void)lk; }

static const struct lk_strategy *self_resolve(eht_lookup *lk, const struct lk_strategy *self,
					      const struct lk_call *c)
{
	(void)lk;
	(void)c;
	return self;
}

static int distinct_in_place(eht_lookup *lk, struct lk_piece *p, const struct lk_distinct *d)
{
	return eht_lk_gather_distinct(lk, p, d, 1.0f);
}

static int distinct_cpu(eht_lookup *lk, struct lk_piece *p, const struct lk_distinct *d)
{
	return eht_lk_gather_distinct(lk, p, d, 0.0f);
}

#define LK_NSTRATEGIES ((int)(sizeof(defs) / sizeof(defs[0])))
_Static_assert(sizeof(defs) / sizeof(defs[0]) <= LK_MAX_STRATEGIES, "raise LK_MAX_STRATEGIES");

static struct lk_strategy table[sizeof(defs) / sizeof(defs[0])];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void fill_defaults(void)
{
	for (int i = 0; i < LK_NSTRATEGIES; i++) {
		struct lk_strategy *s = &table[i];
		*s = *defs[i];
		s->init = s->init ? s->init : no_init;
		s->fini = s->fini ? s->fini : no_fini;
		s->calibrate = s->calibrate ? s->calibrate : no_fini;
		s->resolve = s->resolve ? s->resolve : self_resolve;
		if (!s->cpu_piece) {
			s->caps |= LK_GPU_HOST_IDS;
			s->cpu_piece = s->gpu_piece;
		}
		s->gather_distinct = s->gather_distinct ? s->gather_distinct
				     : (s->caps & LK_GPU_TABLE) ? distinct_in_place : distinct_cpu;
	}
}

static const struct lk_strategy *rows(void)
{
	pthread_once(&table_once, fill_defaults);
	return table;
}

const struct lk_strategy *eht_lk_strategy(int id)
{
	return id >= 0 && id < LK_NSTRATEGIES ? &rows()[id] : NULL;
}

/* ------------------------------------------------------------------- init on first use */
int eht_lk_strategy_ready(eht_lookup *lk, const struct lk_strategy *st, bool capturing)
{
	if (lk->ready[st->id])
		return 0;
	if (capturing)
		return eht_err(EOPNOTSUPP, "lookup on %s: strategy %s has not run on this engine yet; run it once "
				       "outside the capture (or create the engine with it)", lk->ti.name, st->name);
	lk->ready[st->id] = true; /* fini runs whatever init got to */
	int rc = st->init(lk);
	return rc ? eht_err_prefix(rc, "lookup on %s: strategy %s", lk->ti.name, st->name) : 0;
}

void eht_lk_strategies_fini(eht_lookup *lk)
{
	for (int i = LK_NSTRATEGIES - 1; i >= 0; i--)
		if (lk->ready[i]) {
			rows()[i].fini(lk);
			lk->ready[i] = false;
		}
}

/* ------------------------------------------------------------------- checks */
int eht_lk_check_create(const eht_lookup *lk, const struct lk_strategy *st)
{
	const struct eht_table_info *ti = &lk->ti;
	if (st->caps & LK_GPU_TABLE) {
		if (!lk->gpu)
			return eht_err(ENODEV, "lookup: strategy %s needs a GPU; table %s is not pinned for one", st->name,
				       ti->name);
		if (!lk->table_gpu)
			return eht_err(EINVAL, "lookup: strategy %s reads the table in place; table %s is not readable by GPU %d%s",
				       st->name, ti->name, lk->device,
				       !lk->t->split.w ? ""
				       : lk->tab.base && ti->device == lk->device
					       ? " in bf16 (split rows of 256 + 8 bytes, both arrays 8-byte aligned, only)"
					       : " (a split table: eht_table_wrap_split2 with a device makes it so)");
	}
	if ((st->caps & LK_SORTABLE) && !lk->sortable)
		return eht_err(EINVAL, "lookup: %s needs fewer than 2^32-1 local rows", st->name);
	return 0;
}

int eht_lk_check_call(const eht_lookup *lk, const struct lk_strategy *st, const struct lk_call *c)
{
	if (st->caps & LK_GPU_TABLE) {
		if (!c->out_dev)
			return eht_err(EINVAL, "eht_lookup_run: strategy %s writes GPU memory; out is host memory", st->name);
		if (!lk->table_gpu || !lk->kernels)
			return eht_err(EINVAL, "eht_lookup_run: strategy %s needs the table readable by GPU %d and the kernels",
				       st->name, lk->device);
	}
	if ((st->caps & LK_SORTABLE) && !lk->sortable)
		return eht_err(EINVAL, "eht_lookup_run: %s needs fewer than 2^32-1 local rows", st->name);
	return 0;
}

/* ------------------------------------------------------------------- public */
const char *eht_lookup_strategy_name(int s)
{
	const struct lk_strategy *st = eht_lk_strategy(s);
	return st ? st->name : "unknown";
}

int eht_lookup_strategy_count(void) { return LK_NSTRATEGIES; }

int eht_lookup_strategy_by_name(const char *name)
{
	if (!name)
		return eht_err(EINVAL, "eht_lookup_strategy_by_name: NULL name");
	for (int i = 0; i < LK_NSTRATEGIES; i++)
		if (!strcmp(rows()[i].name, name))
			return i;
	char all[256];
	size_t at = 0;
	for (int i = 0; i < LK_NSTRATEGIES && at < sizeof(all); i++)
		at += (size_t)snprintf(all + at, sizeof(all) - at, "%s%s", i ? ", " : "", rows()[i].name);
	return eht_err(EINVAL, "unknown lookup strategy '%s' (one of: %s)", name, all);
}
