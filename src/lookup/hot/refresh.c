/* SPDX-License-Identifier: Apache-2.0 */
/* refresh.c: preparing a new hot set beside the live one and handing it over at a step boundary
 * (see refresh.h). The plan is built relative to what the GPU has, so rows that stay hot keep
 * their slots and only the new ones are gathered and copied. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/hot/refresh.h"
#include "table/hotset.h"
#include "util/err.h"

int eht_hot_refresh_init(struct eht_hot_refresh *r, const int64_t *live_rows, uint64_t slots, uint32_t bits,
			 int64_t lo, int64_t hi, uint32_t rb, const struct eht_hot_mem *mem)
{
	memset(r, 0, sizeof(*r));
	r->slots = slots;
	r->bits = bits;
	r->lo = lo;
	r->hi = hi;
	r->rb = rb;
	r->mem = *mem;
	r->live = malloc((slots ? slots : 1) * sizeof(*r->live));
	r->next = malloc((slots ? slots : 1) * sizeof(*r->next));
	if (!r->live || !r->next) {
		free(r->live);
		free(r->next);
		r->live = r->next = NULL;
		return eht_err(ENOMEM, "hot set: out of memory for the refresh state of %llu slots", (unsigned long long)slots);
	}
	memcpy(r->live, live_rows, slots * sizeof(*r->live));
	pthread_mutex_init(&r->mu, NULL);
	atomic_init(&r->pending, false);
	return 0;
}

void eht_hot_refresh_fini(struct eht_hot_refresh *r)
{
	if (!r->live)
		return;
	void *bufs[] = {r->plan.keys, r->plan.vals, r->plan.load_slot, r->plan.load_row, r->plan.load_bytes};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		if (bufs[i])
			r->mem.free(r->mem.ctx, bufs[i]);
	free(r->live);
	free(r->next);
	pthread_mutex_destroy(&r->mu);
	memset(r, 0, sizeof(*r));
}

static int plan_alloc(struct eht_hot_refresh *r)
{
	struct eht_hot_plan *p = &r->plan;
	if (p->keys)
		return 0;
	uint64_t cap = 1ull << r->bits, s = r->slots ? r->slots : 1;
	p->keys = r->mem.alloc(r->mem.ctx, cap * sizeof(*p->keys));
	p->vals = r->mem.alloc(r->mem.ctx, cap * sizeof(*p->vals));
	p->load_slot = r->mem.alloc(r->mem.ctx, s * sizeof(*p->load_slot));
	p->load_row = r->mem.alloc(r->mem.ctx, s * sizeof(*p->load_row));
	p->load_bytes = r->mem.alloc(r->mem.ctx, s * r->rb);
	if (p->keys && p->vals && p->load_slot && p->load_row && p->load_bytes)
		return 0;
	void *bufs[] = {p->keys, p->vals, p->load_slot, p->load_row, p->load_bytes};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		if (bufs[i])
			r->mem.free(r->mem.ctx, bufs[i]);
	memset(p, 0, sizeof(*p));
	return eht_err(ENOMEM, "hot set: out of memory for a refresh of %llu slots (%llu bytes of rows)",
		       (unsigned long long)r->slots, (unsigned long long)(s * r->rb));
}

/* Checks rows[0..n) (range, repeats) before anything pending is touched. */
static int check_rows(const struct eht_hot_refresh *r, const int64_t *rows, uint64_t n)
{
	if (n > r->slots)
		return eht_err(EINVAL, "hot set refresh: %llu rows, the cache holds %llu (set by eht_lookup_set_hotset)",
			       (unsigned long long)n, (unsigned long long)r->slots);
	uint64_t *loc = malloc((n ? n : 1) * sizeof(*loc));
	if (!loc)
		return eht_err(ENOMEM, "hot set refresh: out of memory for %llu rows", (unsigned long long)n);
	struct eht_hot_index ix;
	int rc = eht_hot_rows_local(rows, n, r->lo, r->hi, loc);
	if (!rc && !(rc = eht_hot_index_build(loc, n, &ix)))
		eht_hot_index_free(&ix);
	free(loc);
	return rc;
}

int eht_hot_refresh_prepare(struct eht_hot_refresh *r, const int64_t *rows, uint64_t n, eht_hot_gather_fn gather,
			    void *gctx)
{
	if (!rows && n)
		return eht_err(EINVAL, "hot set refresh: NULL rows");
	int rc = check_rows(r, rows, n);
	if (rc)
		return rc;
	const uint64_t cap = 1ull << r->bits;
	uint64_t *lkeys = malloc(cap * sizeof(*lkeys));
	uint32_t *lvals = malloc(cap * sizeof(*lvals));
	uint8_t *kept = calloc(r->slots ? r->slots : 1, 1);
	pthread_mutex_lock(&r->mu);
	struct eht_hot_plan *p = &r->plan;
	if (!lkeys || !lvals || !kept) {
		rc = eht_err(ENOMEM, "hot set refresh: out of memory for an index of %llu entries", (unsigned long long)cap);
		goto out;
	}
	if ((rc = plan_alloc(r)))
		goto out;
	/* The buffers are rewritten: a plan still pending is replaced, one applied may still be read by
	 * its copies. */
	bool was_pending = atomic_exchange(&r->pending, false);
	if (!was_pending && r->mem.wait && (rc = r->mem.wait(r->mem.ctx)))
		goto out;
	/* Live set: local row -> slot. */
	memset(lkeys, 0xff, cap * sizeof(*lkeys));
	for (uint64_t s = 0; s < r->slots; s++) {
		uint32_t old;
		if (r->live[s] >= 0)
			eht_hot_insert(lkeys, lvals, r->bits, (uint64_t)(r->live[s] - r->lo), (uint32_t)s, &old);
		r->next[s] = -1;
	}
	/* Rows already cached keep their slots; the others are listed for the slots freed. */
	uint64_t nload = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t s = eht_hot_probe(lkeys, lvals, r->bits, (uint64_t)(rows[i] - r->lo));
		if (s != EHT_HOT_NONE) {
			kept[s] = 1;
			r->next[s] = rows[i];
		} else {
			p->load_row[nload++] = rows[i];
		}
	}
	uint64_t j = 0;
	for (uint64_t s = 0; s < r->slots && j < nload; s++)
		if (!kept[s]) {
			p->load_slot[j] = (uint32_t)s;
			r->next[s] = p->load_row[j++];
		}
	memset(p->keys, 0xff, cap * sizeof(*p->keys));
	memset(p->vals, 0xff, cap * sizeof(*p->vals));
	for (uint64_t s = 0; s < r->slots; s++) {
		uint32_t old;
		if (r->next[s] >= 0)
			eht_hot_insert(p->keys, p->vals, r->bits, (uint64_t)(r->next[s] - r->lo), (uint32_t)s, &old);
	}
	p->nload = nload;
	p->rows = n;
	if (nload && (rc = gather(gctx, p->load_row, (size_t)nload, p->load_bytes)))
		goto out;
	atomic_store(&r->pending, true);
out:
	pthread_mutex_unlock(&r->mu);
	free(lkeys);
	free(lvals);
	free(kept);
	return rc;
}

int eht_hot_refresh_take(struct eht_hot_refresh *r, eht_hot_apply_fn apply, void *actx)
{
	if (!r->live || !atomic_load_explicit(&r->pending, memory_order_acquire))
		return 0;
	if (pthread_mutex_trylock(&r->mu))
		return 0; /* a prepare is writing the plan: the next boundary takes it */
	int rc = 0;
	if (atomic_load(&r->pending) && !(rc = apply(actx, &r->plan))) {
		int64_t *t = r->live;
		r->live = r->next;
		r->next = t;
		atomic_store(&r->pending, false);
		r->applied++;
		rc = 1;
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}
