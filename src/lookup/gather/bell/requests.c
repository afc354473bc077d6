/* SPDX-License-Identifier: Apache-2.0 */
/* requests.c: the doorbell's request slots and staging (requests.h): the words, memory, geometry,
 * errors, and the call's choice of a request slot. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/gather/bell/requests.h"
#include "lookup/gather/rows.h"
#include "util/clock.h"
#include "util/cpu.h"
#include "util/err.h"

/* ------------------------------------------------------------------- words, memory, geometry */
/* Request idx's done word. On a GPU it is in GPU memory (d_done), so the stream's wait polls HBM, not
 * pinned host memory across the link: on the lent H200 (eht bench step, decode, 2 x 24 GiB, five
 * alternated pairs of processes, 3-5 rounds each) the background call added +24.5 us (median; +21.0
 * .. +29.4) back to back over the copies alone against +35.8 (+25.6 .. +44.3) with the word in host
 * memory, synced the same (+29.0 against +30.6). The CPU emulation keeps it in words, after the bells
 * and the ready words. */
static size_t done_at(const eht_lookup *lk, unsigned idx) { return LK_REQS + lk->max_chunks + idx; }
_Atomic uint32_t *eht_lk_bell_done(struct lk_bell *b, const eht_lookup *lk, unsigned idx)
{
	return b->words + done_at(lk, idx);
}
eht_dptr eht_lk_bell_d_done(const struct lk_bell *b, const eht_lookup *lk, unsigned idx)
{
	if (b->d_done)
		return b->d_done + idx * sizeof(uint32_t);
	return b->d_words + done_at(lk, idx) * sizeof(uint32_t);
}

int eht_lk_bell_on_device(const eht_lookup *lk)
{
	int dev = -1;
	int rc = eht_dev_current(NULL, &dev);
	return rc ? rc : dev == lk->device ? 0 : eht_dev_use(lk->device);
}

void *eht_lk_bell_alloc(eht_lookup *lk, size_t bytes, eht_dptr *dptr, int *rc)
{
	void *p = NULL;
	if (*rc)
		return NULL;
	if (!lk->gpu) { /* the CPU-only emulation used by the tests */
		if (!(p = calloc(1, bytes)))
			*rc = eht_err(ENOMEM, "lookup: out of memory (%zu bytes)", bytes);
		if (dptr)
			*dptr = (eht_dptr)(uintptr_t)p;
		return p;
	}
	*rc = eht_dev_host_alloc(&p, bytes, EHT_DEV_HOST_PORTABLE | EHT_DEV_HOST_MAPPED);
	if (!*rc && dptr)
		*rc = eht_dev_host_dptr(dptr, p);
	if (*rc)
		eht_err_prefix(*rc, "lookup: %zu bytes of pinned memory for stream-triggered lookups", bytes);
	else
		memset(p, 0, bytes);
	return p;
}

void eht_lk_bell_free(eht_lookup *lk, void *p)
{
	if (p && lk->gpu)
		eht_dev_host_free(p);
	else
		free(p);
}

void eht_lk_bell_geom(const eht_lookup *lk, size_t n, uint32_t *chunk, uint32_t *nslots)
{
	size_t c = eht_lk_chunk_for(lk, n);
	if (n / c >= LK_TAG_CHUNKS) /* chunk + 1 must stay below the tag bits (LK_TAG_SHIFT) */
		c = n / LK_TAG_CHUNKS + 1;
	if (c > lk->bell->staging_rows / 2) /* two slots at least (eht_lk_stage_geom sizes staging so
					      * that this never undoes the line above) */
		c = lk->bell->staging_rows / 2;
	size_t nchunks = (n + c - 1) / c, s = lk->bell->staging_rows / c;
	if (s > nchunks)
		s = nchunks;
	*chunk = (uint32_t)c;
	*nslots = (uint32_t)(s ? s : 1);
}

void eht_lk_bell_bg_geom(const eht_lookup *lk, size_t n, uint32_t *groups, uint32_t *group_rows)
{
	size_t g = (n + LK_BG_GROUP_ROWS - 1) / LK_BG_GROUP_ROWS;
	if (g > LK_BG_GROUPS)
		g = LK_BG_GROUPS;
	if (g > lk->max_chunks)
		g = lk->max_chunks;
	if (g == 0)
		g = 1;
	size_t rows = (n + g - 1) / g;
	*group_rows = (uint32_t)(rows ? rows : 1);
	*groups = (uint32_t)((n + *group_rows - 1) / *group_rows);
	if (*groups == 0)
		*groups = 1;
}

/* ------------------------------------------------------------------- errors, free staging */
void eht_lk_bell_fail(struct lk_bell *b, int rc)
{
	int zero = 0;
	if (rc && atomic_compare_exchange_strong(&b->err, &zero, rc))
		snprintf(b->errmsg, sizeof(b->errmsg), "%s", eht_last_error());
}

int eht_lk_bell_take_error(eht_lookup *lk)
{
	struct lk_bell *b = lk->bell;
	if (!b || !atomic_load(&b->err))
		return 0;
	int rc = atomic_exchange(&b->err, 0);
	return rc ? eht_err(rc, "%s (in an earlier stream-triggered lookup)", b->errmsg) : 0;
}

void eht_lk_bell_wait_free(eht_lookup *lk, double t0)
{
	struct lk_bell *b = lk->bell;
	if (b->pushed_used) {
		int d = eht_lk_bell_on_device(lk);
		while (!d && !(d = eht_dev_event_done(b->ev_pushed))) {
			if (eht_now_s() - t0 > LK_STALL_S) {
				d = eht_err(ETIMEDOUT, "lookup: the copies of table %s's last rows to the GPU did not end in %.0f s",
					    lk->ti.name, LK_STALL_S);
				break;
			}
			eht_cpu_relax();
		}
		if (d < 0)
			eht_lk_bell_fail(b, d);
		b->pushed_used = false;
	}
	for (unsigned s = 0; s < b->prev_slots; s++)
		while (atomic_load_explicit(&eht_lk_ready(b)[s], memory_order_acquire) != 0) {
			if (eht_now_s() - t0 > LK_STALL_S) {
				eht_lk_bell_fail(b, eht_err(ETIMEDOUT, "lookup: staging of table %s still busy after %.0f s", lk->ti.name,
						     LK_STALL_S));
				atomic_store(&eht_lk_ready(b)[s], 0);
				break;
			}
			eht_cpu_relax();
		}
}

/* ------------------------------------------------------------------- the call's request */
int eht_lk_bell_prepare(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			bool compact, bool bg, eht_dptr push_dst, eht_dptr push_out, bool capturing, unsigned *idx)
{
	struct lk_bell *b = lk->bell;
	size_t bytes = n * (id64 ? 8 : 4);
	struct lk_req *r = NULL;
	int rc = 0;
	if (!capturing) {
		unsigned i = b->eager_next;
		b->eager_next = (i + 1) % LK_EAGER_REQS;
		r = &b->reqs[i];
		*idx = i;
		if (r->done_used) { /* its last kernel has long finished in practice */
			r->done_used = false;
			if ((rc = eht_dev_event_sync(r->done)))
				return rc;
		}
		while (atomic_load_explicit(&r->armed, memory_order_acquire)) /* CPU emulation: not served yet */
			eht_cpu_relax();
		/* Host ids of an eager call: the caller may reuse its buffer as soon as the call returns,
		 * before the pool reads them, so they go into the request's own pinned buffer. */
		if (!ids_dev) {
			if (bytes > r->h_cap)
				return eht_err(EINVAL, "lookup: %zu ids in one request of table %s (at most %zu)", n,
					       lk->ti.name, r->h_cap / 8);
			memcpy(r->h_ids, ids, bytes);
		}
		r->ids = r->h_ids;
	} else {
		unsigned scan = atomic_load(&b->scan);
		for (unsigned i = LK_EAGER_REQS; i < scan; i++) {
			struct lk_req *q = &b->reqs[i];
			if (q->key == ids && q->n == n && q->id64 == id64 && q->off == off && (q->h_ids != NULL) == ids_dev &&
			    q->compact == compact && q->bg == bg && q->push_dst == push_dst &&
			    q->push_out == (bg ? push_out : 0)) {
				*idx = i;
				return 0;
			}
		}
		if (scan == LK_REQS)
			return eht_err(ENOSPC, "lookup: more than %d distinct captured lookups on table %s (ids buffer, count, "
					       "type and offset make one)", LK_CAPTURED_REQS, lk->ti.name);
		r = &b->reqs[scan];
		*idx = scan;
		memset(r, 0, sizeof(*r));
		if (ids_dev) {
			size_t a = (bytes + 63) & ~(size_t)63;
			if (b->arena_used + a <= b->arena_cap) {
				r->h_ids = b->arena + b->arena_used;
				r->d_h_ids = b->d_arena + b->arena_used;
				b->arena_used += a;
			} else {
				/* Past the arena: pinned memory of its own, which a capture in the driver's global
				 * mode (torch.cuda.graph's default) refuses; the message says what ran out. */
				void *p = eht_lk_bell_alloc(lk, bytes, &r->d_h_ids, &rc);
				if (rc)
					return eht_err_prefix(rc, "lookup: the ids of table %s's captured lookups outgrew their "
								  "%zu-byte arena (2 x max_batch ids; %zu used) and more pinned memory "
								  "cannot be had inside this capture: make the engine with a larger "
								  "max_batch",
							      lk->ti.name, b->arena_cap, b->arena_used);
				r->h_ids = p;
			}
			r->h_cap = bytes;
		}
		r->key = ids;
		r->ids = ids_dev ? r->h_ids : ids;
		r->taken = true;
	}
	r->n = n;
	r->id64 = id64;
	r->off = off;
	r->compact = compact;
	r->bg = bg;
	r->push_dst = bg ? push_dst : 0;
	r->push_out = bg ? push_out : 0;
	if (capturing) {
		atomic_store_explicit(&r->armed, true, memory_order_release);
		atomic_store_explicit(&b->scan, *idx + 1, memory_order_release);
	}
	return 0;
}
