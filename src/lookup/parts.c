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
		*rc = EHT_CU_CHECK(cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE));
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
		eht_cu.cuMemFreeHost(p);
	else
		free(p);
}

CUdeviceptr eht_lk_dev_alloc(size_t bytes, int *rc)
{
	CUdeviceptr d = 0;
	if (*rc)
		return 0;
	*rc = EHT_CU_CHECK(cuMemAlloc(&d, bytes ? bytes : 8));
	if (*rc)
		eht_err_prefix(*rc, "lookup: %zu bytes of GPU memory", bytes);
	return d;
}

/* ------------------------------------------------------------------- core */
int eht_lk_core_gpu_init(eht_lookup *lk)
{
	int krc = eht_gpu_lookup_load(lk->device, &lk->g);
	lk->kernels = krc == 0;
	if (krc && ((lk->st->caps & LK_GPU_TABLE) || lk->fmt == EHT_LOOKUP_BF16))
		return krc;
	if (krc)
		eht_warn_once("lookup: GPU kernels unavailable (%s); HOST only", eht_last_error());
	int rc = 0;
	lk->ids.h_ids = eht_lk_host_alloc(lk, lk->max_batch * 8, &rc);
	lk->ids.d_ids = eht_lk_dev_alloc(lk->max_batch * 8, &rc);
	lk->d_counters = eht_lk_dev_alloc(2 * sizeof(uint64_t), &rc);
	if (!rc)
		rc = EHT_CU_CHECK(cuEventCreate(&lk->ids.ev, CU_EVENT_DISABLE_TIMING));
	/* The dead word: mapped, so a stage-in kernel can publish a run's count itself. */
	if (!rc)
		rc = EHT_CU_CHECK(cuMemHostAlloc((void **)&lk->h_dead, 8, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
	if (!rc)
		rc = EHT_CU_CHECK(cuMemHostGetDevicePointer(&lk->d_h_dead, lk->h_dead, 0));
	if (!rc)
		*lk->h_dead = 0;
	return rc;
}

void eht_lk_core_gpu_fini(eht_lookup *lk)
{
	CUevent evs[] = {lk->ids.ev, lk->fork.ev_fork, lk->fork.ev_join};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (evs[i])
			eht_cu.cuEventDestroy(evs[i]);
	if (lk->fork.side)
		eht_cu.cuStreamDestroy(lk->fork.side);
	CUdeviceptr ds[] = {lk->ids.d_ids, lk->scr.d_compact, lk->scr.d_slot, lk->d_counters};
	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
		if (ds[i])
			eht_cu.cuMemFree(ds[i]);
	eht_lk_host_free(lk, lk->ids.h_ids);
	if (lk->h_dead)
		eht_cu.cuMemFreeHost(lk->h_dead);
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
	int rc = EHT_CU_CHECK(cuEventCreate(&f->ev_fork, CU_EVENT_DISABLE_TIMING));
	if (!rc)
		rc = EHT_CU_CHECK(cuEventCreate(&f->ev_join, CU_EVENT_DISABLE_TIMING));
	return rc ? rc : EHT_CU_CHECK(cuStreamCreate(&f->side, CU_STREAM_NON_BLOCKING));
}

int eht_lk_fork(eht_lookup *lk, CUstream s)
{
	int rc = EHT_CU_CHECK(cuEventRecord(lk->fork.ev_fork, s));
	return rc ? rc : EHT_CU_CHECK(cuStreamWaitEvent(lk->fork.side, lk->fork.ev_fork, 0));
}

int eht_lk_join(eht_lookup *lk, CUstream s) { return EHT_CU_CHECK(cuStreamWaitEvent(s, lk->fork.ev_join, 0)); }

/* ------------------------------------------------------------------- the ids copy */
/* Waits until the copy that last read h_ids has finished. */
static int ids_wait(struct lk_ids *x)
{
	if (!x->used)
		return 0;
	x->used = false;
	return EHT_CU_CHECK(cuEventSynchronize(x->ev));
}

int eht_lk_piece_ids_dev(eht_lookup *lk, const void *ids, bool ids_dev, size_t isz, size_t n,
			 CUstream s, CUdeviceptr *dptr)
{
	if (ids_dev) {
		*dptr = (CUdeviceptr)(uintptr_t)ids;
		return 0;
	}
	struct lk_ids *x = &lk->ids;
	int rc = ids_wait(x);
	if (rc)
		return rc;
	memcpy(x->h_ids, ids, n * isz);
	rc = EHT_CU_CHECK(cuMemcpyHtoDAsync(x->d_ids, x->h_ids, n * isz, s));
	if (!rc && !(rc = EHT_CU_CHECK(cuEventRecord(x->ev, s))))
		x->used = true;
	*dptr = x->d_ids;
	return rc;
}

int eht_lk_ids_to_host(eht_lookup *lk, const void *d_ids, size_t bytes, CUstream s, const void **out)
{
	struct lk_ids *x = &lk->ids;
	int rc = ids_wait(x);
	if (!rc && !(rc = EHT_CU_CHECK(cuMemcpyDtoHAsync(x->h_ids, (CUdeviceptr)(uintptr_t)d_ids, bytes, s))))
		rc = EHT_CU_CHECK(cuStreamSynchronize(s));
	*out = x->h_ids;
	return rc;
}
