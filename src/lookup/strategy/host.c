/* SPDX-License-Identifier: Apache-2.0 */
/* host.c: the HOST strategy: every row is gathered by the CPU pool into pinned staging and sent on to
 * the GPU (or into host memory). Host ids the calling thread reads now go through the staging's
 * pool jobs (gather/stage.c): sorted and deduplicated first with EHT_LOOKUP_HOST_SORT, else in
 * request order; ids in GPU memory and captures through the stream-triggered doorbell
 * (gather/bell/), which the GPU kernels make possible. AUTO composes it. */
#include "lookup/gather/bell/bell.h"
#include "lookup/gather/stage.h"

/* One piece of host ids by the calling thread (into GPU or host out). Without a host pointer (disk)
 * rows come through read_rows: in request order like the in-memory path (no sort, no expand:
 * measured faster warm), except for CPU-side bf16 output, which needs the raw rows staged first. */
static int host_cpu(eht_lookup *lk, struct lk_piece *p)
{
	if (!(lk->flags & EHT_LOOKUP_HOST_SORT) && (lk->ti.host || p->out_dev || lk->fmt == EHT_LOOKUP_RAW))
		return eht_lk_stage_ids(lk, p->ids, p->id64, p->off, p->n, p->out, p->out_dev, p->s, p->dead);
	/* The sorted path's pieces must fit the staging too (distinct rows live there). */
	size_t cap = lk->staging_rows < lk->max_batch ? lk->staging_rows : lk->max_batch, isz = p->id64 ? 8 : 4;
	for (size_t b = 0; b < p->n; b += cap) {
		size_t m = p->n - b < cap ? p->n - b : cap;
		int rc = eht_lk_stage_sorted(lk, (const uint8_t *)p->ids + b * isz, p->id64, p->off, m,
					     (uint8_t *)p->out + b * lk->out_rb, p->out_dev, p->s, p->dead);
		if (rc)
			return rc;
	}
	return 0;
}

/* Ids the calling thread does not read (GPU memory, or a capture): the doorbell. */
static int host_gpu(eht_lookup *lk, struct lk_piece *p)
{
	p->dead_published = p->publish_dead;
	return eht_lk_bell_piece(lk, p->ids, p->ids_dev, p->id64, p->off, p->n, (eht_dptr)(uintptr_t)p->out, p->s,
				 p->capture, p->publish_dead, p->view);
}

/* The staging (and the GPU scratch with a GPU), and the stream-triggered path where the kernels are
 * loaded. */
static int host_init(eht_lookup *lk)
{
	int rc = eht_lk_stage_init(lk);
	if (!rc && lk->gpu && lk->kernels)
		rc = eht_lk_bell_init(lk);
	return rc;
}

static void host_fini(eht_lookup *lk)
{
	eht_lk_bell_fini(lk); /* leaves the poller first: nothing reads the engine after */
	eht_lk_stage_fini(lk);
}

const struct lk_strategy eht_lk_host_strategy = {
	.id = EHT_LOOKUP_HOST,
	.name = "host",
	.caps = LK_CAPTURABLE | LK_VIEW_IDS,
	.init = host_init,
	.fini = host_fini,
	.gpu_piece = host_gpu,
	.cpu_piece = host_cpu,
};
