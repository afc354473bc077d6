/* SPDX-License-Identifier: Apache-2.0 */
/* lk_strategy.c: the table of lookup strategies: each names whether it needs the GPU to read the table
 * in place, whether a capture can hold it, and its two pieces: the GPU piece (everything enqueued on the
 * stream, no host synchronization: ids in GPU memory and CUDA graphs) and the CPU piece (the calling
 * thread reads host ids now). A new strategy is one row here and its pieces. */
#include <string.h>

#include "lookup/lookup_impl.h"
#include "util/err.h"

/* Ids of one piece as a device pointer: in place when already on the GPU, else through pinned h_ids
 * (waiting for the copy that last read it) into d_ids on stream s. */
int eht_lk_piece_ids_dev(eht_lookup *lk, const void *ids, bool ids_dev, size_t isz, size_t n, CUstream s,
			 CUdeviceptr *dptr)
{
	if (ids_dev) {
		*dptr = (CUdeviceptr)(uintptr_t)ids;
		return 0;
	}
	int rc = 0;
	if (lk->ids_used) {
		lk->ids_used = false;
		if ((rc = EHT_CU_CHECK(cuEventSynchronize(lk->ev_ids))))
			return rc;
	}
	memcpy(lk->h_ids, ids, n * isz);
	rc = EHT_CU_CHECK(cuMemcpyHtoDAsync(lk->d_ids, lk->h_ids, n * isz, s));
	if (!rc && !(rc = EHT_CU_CHECK(cuEventRecord(lk->ev_ids, s))))
		lk->ids_used = true;
	*dptr = lk->d_ids;
	return rc;
}

int eht_lk_gpu_piece(eht_lookup *lk, int strategy, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
		      CUdeviceptr out, CUstream s)
{
	CUdeviceptr d;
	int rc = eht_lk_piece_ids_dev(lk, ids, ids_dev, id64 ? 8 : 4, n, s, &d);
	if (rc)
		return rc;
	struct eht_gpu_ids gi = {.ids = d, .id64 = id64, .off = off, .lo = lk->lo, .hi = lk->hi};
	if (strategy == EHT_LOOKUP_DIRECT)
		return eht_gpu_direct(&lk->g, s, &gi, n, lk->ti.device_ptr, lk->rb, out, lk->fmt, lk->d_counters);
	rc = eht_gpu_sort_dedup(&lk->g, s, &gi, (uint32_t)n, &lk->sb, lk->d_uniq, lk->d_slot, lk->d_counters);
	if (!rc)
		rc = eht_gpu_gather_uniq(&lk->g, s, lk->d_uniq, lk->d_counters, 1.0f, n, lk->ti.device_ptr, lk->rb,
					 lk->d_compact);
	if (!rc)
		rc = eht_gpu_expand(&lk->g, s, lk->d_slot, n, lk->d_compact, lk->rb, out, lk->fmt);
	return rc;
}

int eht_lk_host_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out, bool out_dev,
		      CUstream s, uint64_t *dead)
{
	/* Without a host pointer (disk) rows come through read_rows: in request order like the
	 * in-memory path (no sort, no expand: measured faster warm), except for CPU-side bf16 output,
	 * which needs the raw rows staged first. */
	if ((lk->flags & EHT_LOOKUP_HOST_SORT) || (!lk->ti.host && !out_dev && lk->fmt != EHT_LOOKUP_RAW)) {
		/* The sorted path's pieces must fit the staging too (distinct rows live there). */
		size_t cap = lk->staging_rows < lk->max_batch ? lk->staging_rows : lk->max_batch, isz = id64 ? 8 : 4;
		for (size_t b = 0; b < n; b += cap) {
			size_t m = n - b < cap ? n - b : cap;
			int rc = eht_lk_host_sorted_piece(lk, (const uint8_t *)ids + b * isz, id64, off, m,
							  (uint8_t *)out + b * lk->out_rb, out_dev, s, dead);
			if (rc)
				return rc;
		}
		return 0;
	}
	return eht_lk_host_direct_piece(lk, ids, id64, off, n, out, out_dev, s, dead);
}


static int direct_gpu(eht_lookup *lk, struct lk_piece *p)
{
	return eht_lk_gpu_piece(lk, EHT_LOOKUP_DIRECT, p->ids, p->ids_dev, p->id64, p->off, p->n,
				(CUdeviceptr)(uintptr_t)p->out, p->s);
}

static int sorted_gpu(eht_lookup *lk, struct lk_piece *p)
{
	return eht_lk_gpu_piece(lk, EHT_LOOKUP_SORTED, p->ids, p->ids_dev, p->id64, p->off, p->n,
				(CUdeviceptr)(uintptr_t)p->out, p->s);
}

static int host_gpu(eht_lookup *lk, struct lk_piece *p)
{
	p->dead_published = p->publish_dead;
	return eht_lk_bell_piece(lk, p->ids, p->ids_dev, p->id64, p->off, p->n, (CUdeviceptr)(uintptr_t)p->out, p->s,
				 p->capture, p->publish_dead);
}

static int host_cpu(eht_lookup *lk, struct lk_piece *p)
{
	return eht_lk_host_piece(lk, p->ids, p->id64, p->off, p->n, p->out, p->out_dev, p->s, p->dead);
}

static const struct lk_strategy strategies[] = {
	/* id, name, reads the table in place on the GPU, capturable, GPU piece, CPU piece */
	{EHT_LOOKUP_AUTO, "auto", false, true, eht_lk_auto_gpu, eht_lk_auto_cpu},
	{EHT_LOOKUP_DIRECT, "direct", true, true, direct_gpu, NULL},
	{EHT_LOOKUP_SORTED, "sorted", true, true, sorted_gpu, NULL},
	{EHT_LOOKUP_HOST, "host", false, true, host_gpu, host_cpu},
};

const struct lk_strategy *eht_lk_strategy(int id)
{
	for (size_t i = 0; i < sizeof(strategies) / sizeof(strategies[0]); i++)
		if (strategies[i].id == id)
			return &strategies[i];
	return NULL;
}

const char *eht_lookup_strategy_name(int s)
{
	const struct lk_strategy *st = eht_lk_strategy(s);
	return st ? st->name : "unknown";
}
