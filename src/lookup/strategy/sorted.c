/* SPDX-License-Identifier: Apache-2.0 */
/* sorted.c: the SORTED strategy: a GPU radix sort of (row, position) pairs, dedup, a gather of the
 * distinct rows in address order into the GPU scratch, then an expand kernel into the requested
 * order. Its state: the sort's buffers and the distinct rows' list. */
#include <errno.h>
#include <stdlib.h>

#include "lookup/gather/gather.h"
#include "util/err.h"

struct lk_sorted {
	struct eht_gpu_sort_bufs sb;
	eht_dptr d_uniq; /* max_batch u32 */
};

static int sorted_init(eht_lookup *lk)
{
	struct lk_sorted *S = calloc(1, sizeof(*S));
	if (!S)
		return eht_err(ENOMEM, "lookup: out of memory");
	lk->state[EHT_LOOKUP_SORTED] = S;
	int rc = eht_lk_scratch(lk);
	uint64_t kb, hb, hdb;
	eht_gpu_sort_sizes(lk->max_batch, &kb, &hb, &hdb);
	S->d_uniq = eht_lk_dev_alloc(lk->max_batch * 4, &rc);
	for (int i = 0; i < 2; i++) {
		S->sb.keys[i] = eht_lk_dev_alloc(kb, &rc);
		S->sb.vals[i] = eht_lk_dev_alloc(kb, &rc);
	}
	S->sb.hist = eht_lk_dev_alloc(hb, &rc);
	S->sb.heads = eht_lk_dev_alloc(hdb, &rc);
	return rc;
}

static void sorted_fini(eht_lookup *lk)
{
	struct lk_sorted *S = lk->state[EHT_LOOKUP_SORTED];
	if (!S)
		return;
	eht_dptr ds[] = {S->d_uniq, S->sb.keys[0], S->sb.keys[1], S->sb.vals[0], S->sb.vals[1], S->sb.hist,
			    S->sb.heads};
	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
		if (ds[i])
			eht_dev_free(ds[i]);
	free(S);
	lk->state[EHT_LOOKUP_SORTED] = NULL;
}

static int sorted_gpu(eht_lookup *lk, struct lk_piece *p)
{
	struct lk_sorted *S = lk->state[EHT_LOOKUP_SORTED];
	eht_dptr d, out = (eht_dptr)(uintptr_t)p->out;
	int rc = eht_lk_piece_ids_dev(lk, p->ids, p->ids_dev, p->id64 ? 8 : 4, p->n, p->s, &d);
	if (!rc)
		rc = eht_lk_counters_zero(lk, p->s);
	if (rc)
		return rc;
	struct eht_gpu_ids gi = {.ids = d, .id64 = p->id64, .off = p->off, .lo = lk->lo, .hi = lk->hi};
	rc = eht_gpu_sort_dedup(&lk->g, p->s, &gi, (uint32_t)p->n, &S->sb, S->d_uniq, lk->scr.d_slot, lk->d_counters);
	if (!rc)
		rc = eht_gpu_gather_uniq(&lk->g, p->s, S->d_uniq, lk->d_counters, 1.0f, p->n, &lk->tab, lk->scr.d_compact);
	if (!rc)
		rc = eht_gpu_expand(&lk->g, p->s, lk->scr.d_slot, p->n, lk->scr.d_compact, lk->rb, out, lk->fmt);
	return rc;
}

const struct lk_strategy eht_lk_sorted = {
	.id = EHT_LOOKUP_SORTED,
	.name = "sorted",
	.caps = LK_GPU_TABLE | LK_SORTABLE | LK_CAPTURABLE,
	.init = sorted_init,
	.fini = sorted_fini,
	.gpu_piece = sorted_gpu,
};
