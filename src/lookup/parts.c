/* SPDX-License-Identifier: Apache-2.0 */
/* parts.c: the engine's GPU core (kernels, counters, the dead word, the ids copy) and the parts
 * several strategies share, each made at its first request and kept until the engine goes: the GPU
 * scratch (SORTED, HOST's sorted path and BF16 halves, the hot cache) and the fork (a side stream
 * for pieces split between the GPU's in-place gather and the CPU pool: AUTO, and the hot cache under
 * AUTO). Allocated once, so GPU addresses stay fixed across runs and graph replays. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/lookup_impl.h"
#include "util/env.h"
#include "util/err.h"
#include "util/log.h"

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

/* ------------------------------------------------------------------- core */
int eht_lk_core_gpu_init(eht_lookup *lk)
{
	int krc = eht_gpu_lookup_load(lk->device, &lk->g);
	lk->kernels = krc == 0;
	lk->g.sm_cap = lk->opts.sm_cap ? lk->opts.sm_cap : (unsigned)eht_env_u64("EHT_LOOKUP_SM_CAP", 0);
	if ((lk->flags & EHT_LOOKUP_BACKGROUND) || eht_env_u64("EHT_LOOKUP_BACKGROUND", 0)) {
		lk->background = eht_dev_has(EHT_DEV_FEAT_MEM_OPS);
		if (!lk->background)
			eht_warn_once("lookup: the driver has no stream memory operations; background mode is off");
		/* Beside the model every kernel of the engine leaves half the SMs alone (vLLM's background
		 * grid too). Measured on the lent H200 in `eht bench step`, alternated runs: a cap of half
		 * the SMs with 1024-thread expand blocks added +0.17-0.50 ms to a prefill step synced (none
		 * measurable back to back) against +1.06-1.65 ms with an eighth of the SMs, whose capped
		 * dequant finished late and delayed the layer that consumes the rows; decode a median of
		 * +32 us against +51-67 back to back. */
		if (lk->background && !lk->g.sm_cap && lk->g.sms > 0)
			lk->g.sm_cap = lk->g.sms >= 4 ? (unsigned)lk->g.sms / 2 : 2;
	}
	if (krc && ((lk->st->caps & LK_GPU_TABLE) || lk->fmt == EHT_LOOKUP_BF16))
		return krc;
	if (krc)
		eht_warn_once("lookup: GPU kernels unavailable (%s); HOST only", eht_last_error());
	int rc = 0;
	lk->ids.h_ids = eht_lk_host_alloc(lk, lk->max_batch * 8, &rc);
	lk->ids.d_ids = eht_lk_dev_alloc(lk->max_batch * 8, &rc);
	lk->d_counters = eht_lk_dev_alloc(2 * sizeof(uint64_t), &rc);
	if (!rc)
		rc = eht_dev_event_create(&lk->ids.ev, EHT_EVENT_TIMING);
	/* The dead word: mapped, so a stage-in kernel can publish a run's count itself. */
	if (!rc)
		rc = eht_dev_host_alloc((void **)&lk->h_dead, 8, EHT_DEV_HOST_PORTABLE | EHT_DEV_HOST_MAPPED);
	if (!rc)
		rc = eht_dev_host_dptr(&lk->d_h_dead, lk->h_dead);
	if (!rc)
		*lk->h_dead = 0;
	return rc;
}

void eht_lk_core_gpu_fini(eht_lookup *lk)
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
	eht_gpu_lookup_unload(&lk->g);
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
	int rc = eht_dev_event_create(&f->ev_fork, EHT_EVENT_TIMING);
	if (!rc)
		rc = eht_dev_event_create(&f->ev_join, EHT_EVENT_TIMING);
	return rc ? rc : eht_dev_stream_create(&f->side, EHT_STREAM_NONBLOCKING);
}

int eht_lk_fork(eht_lookup *lk, eht_stream s)
{
	int rc = eht_dev_event_record(lk->fork.ev_fork, s);
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
