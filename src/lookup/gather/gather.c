/* SPDX-License-Identifier: Apache-2.0 */
/* gather.c: the engine's GPU parts (gather.h): the ids copy, the counters and the dead word, and the
 * parts several mechanisms and policies share, each made at its first request and kept until the
 * engine goes: the GPU scratch (SORTED, the staging's sorted path and BF16 halves, the doorbell's
 * bf16 rows, the hot cache) and the fork (a side stream for pieces split between the GPU's in-place
 * gather and the CPU pool: AUTO, and the distinct misses under AUTO). Allocated once, so GPU
 * addresses stay fixed across runs and graph replays. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/gather/gather.h"
#include "util/err.h"

void *eht_lk_host_alloc(eht_lookup *lk, size_t bytes, int *rc)
{
	void *p = NULL;
	if (*rc)
		return NULL;
	if (bytes == 0)
		bytes = 8;
	if (lk->gpu) {
		/* Pinned once here so every copy is a true async DMA; PORTABLE for any context. */
		*rc = eht_dev_host_alloc(&p, bytes, EHT_DEV_HOST_PORTABLE);
		if (*rc)
			eht_err_prefix(*rc, "lookup: pinning %zu bytes of staging", bytes);
	} else if (!(p = malloc(bytes))) {
		*rc = eht_err(ENOMEM, "lookup: out of memory (%zu bytes)", bytes);
	}
	return p;
}

void eht_lk_host_free(eht_lookup *lk, void *p)
{
	if (!p)
		return;
	if (lk->gpu)
		eht_dev_host_free(p);
	else
		free(p);
}

eht_dptr eht_lk_dev_alloc(size_t bytes, int *rc)
{
	eht_dptr d = 0;
	if (*rc)
		return 0;
	*rc = eht_dev_alloc(&d, bytes ? bytes : 8);
	if (*rc)
		eht_err_prefix(*rc, "lookup: %zu bytes of GPU memory", bytes);
	return d;
}

/* ------------------------------------------------------------------- every GPU engine's */
int eht_lk_gpu_parts_init(eht_lookup *lk)
{
	int rc = 0;
	lk->ids.h_ids = eht_lk_host_alloc(lk, lk->max_batch * 8, &rc);
	lk->ids.d_ids = eht_lk_dev_alloc(lk->max_batch * 8, &rc);
	/* [0..1] zeroed per run; [2..3] a publishing in-place gather's, zero between its launches */
	lk->d_counters = eht_lk_dev_alloc(4 * sizeof(uint64_t), &rc);
	if (!rc)
		rc = eht_dev_memset8(lk->d_counters, 0, 4 * sizeof(uint64_t));
	if (!rc)
		rc = eht_dev_event_create(&lk->ids.ev, 0);
	/* The dead word: mapped, so a stage-in kernel can publish a run's count itself. */
	if (!rc)
		rc = eht_dev_host_alloc((void **)&lk->h_dead, 8, EHT_DEV_HOST_PORTABLE | EHT_DEV_HOST_MAPPED);
	if (!rc)
		rc = eht_dev_host_dptr(&lk->d_h_dead, lk->h_dead);
	if (!rc)
		*lk->h_dead = 0;
	return rc;
}

void eht_lk_gpu_parts_fini(eht_lookup *lk)
{
	eht_event evs[] = {lk->ids.ev, lk->fork.ev_fork, lk->fork.ev_join};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (evs[i])
			eht_dev_event_destroy(evs[i]);
	if (lk->fork.side)
		eht_dev_stream_destroy(lk->fork.side);
	eht_dptr ds[] = {lk->ids.d_ids, lk->scr.d_compact, lk->scr.d_slot, lk->d_counters};
	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
		if (ds[i])
			eht_dev_free(ds[i]);
	eht_lk_host_free(lk, lk->ids.h_ids);
	if (lk->h_dead)
		eht_dev_host_free(lk->h_dead);
}

/* ------------------------------------------------------------------- shared parts */
int eht_lk_scratch(eht_lookup *lk)
{
	if (lk->scr.d_compact)
		return 0;
	int rc = 0;
	size_t mb = lk->max_batch;
	lk->scr.compact_rows = mb > lk->staging_rows ? mb : lk->staging_rows;
	lk->scr.d_compact = eht_lk_dev_alloc(lk->scr.compact_rows * lk->rb, &rc);
	lk->scr.d_slot = eht_lk_dev_alloc(mb * 4, &rc);
	return rc;
}

int eht_lk_fork_init(eht_lookup *lk)
{
	struct lk_fork *f = &lk->fork;
	if (f->side)
		return 0;
	int rc = eht_dev_event_create(&f->ev_fork, 0);
	if (!rc)
		rc = eht_dev_event_create(&f->ev_join, 0);
	return rc ? rc : eht_dev_stream_create(&f->side, EHT_STREAM_NONBLOCKING);
}

int eht_lk_counters_zero(eht_lookup *lk, eht_stream s)
{
	if (lk->counters_zeroed)
		return 0;
	int rc = eht_dev_memset32_async(lk->d_counters, 0, 4, s);
	lk->counters_zeroed = rc == 0;
	return rc;
}

int eht_lk_fork(eht_lookup *lk, eht_stream s)
{
	int rc = eht_lk_counters_zero(lk, s);
	if (!rc)
		rc = eht_dev_event_record(lk->fork.ev_fork, s);
	return rc ? rc : eht_dev_stream_wait_event(lk->fork.side, lk->fork.ev_fork);
}

int eht_lk_join(eht_lookup *lk, eht_stream s) { return eht_dev_stream_wait_event(s, lk->fork.ev_join); }

/* ------------------------------------------------------------------- the ids copy */
/* Waits until the copy that last read h_ids has finished. */
static int ids_wait(struct lk_ids *x)
{
	if (!x->used)
		return 0;
	x->used = false;
	return eht_dev_event_sync(x->ev);
}

int eht_lk_piece_ids_dev(eht_lookup *lk, const void *ids, bool ids_dev, size_t isz, size_t n,
			 eht_stream s, eht_dptr *dptr)
{
	if (ids_dev) {
		*dptr = (eht_dptr)(uintptr_t)ids;
		return 0;
	}
	struct lk_ids *x = &lk->ids;
	int rc = ids_wait(x);
	if (rc)
		return rc;
	memcpy(x->h_ids, ids, n * isz);
	rc = eht_dev_h2d_async(x->d_ids, x->h_ids, n * isz, s);
	if (!rc && !(rc = eht_dev_event_record(x->ev, s)))
		x->used = true;
	*dptr = x->d_ids;
	return rc;
}

int eht_lk_ids_to_host(eht_lookup *lk, const void *d_ids, size_t bytes, eht_stream s, const void **out)
{
	struct lk_ids *x = &lk->ids;
	int rc = ids_wait(x);
	if (!rc && !(rc = eht_dev_d2h_async(x->h_ids, (eht_dptr)(uintptr_t)d_ids, bytes, s)))
		rc = eht_dev_stream_sync(s);
	*out = x->h_ids;
	return rc;
}
