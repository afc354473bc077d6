/* SPDX-License-Identifier: Apache-2.0 */
/* lookup_engram.c: token ids on the GPU -> Engram hash into a device buffer -> eht_lookup_run on the
 * same stream (the ids never pass through the caller). */
#include <stdlib.h>

#include "gpu/dev.h"
#include "eht.h"
#include "engram/engram_impl.h"
#include "util/err.h"

struct eht_engram_lookup {
	const eht_engram_layout *l;
	uint32_t li;
	eht_lookup *lk;
	size_t max_tokens;
	eht_dptr ids;
};

int eht_engram_lookup_create(const eht_engram_layout *l, uint32_t li, eht_lookup *lk, size_t max_tokens,
			     eht_engram_lookup **out)
{
	if (!l || !lk || !out || li >= l->n_layers || !max_tokens || max_tokens > INT32_MAX / l->cols)
		return eht_err(EINVAL, "eht_engram_lookup_create: bad argument (layer index %u, max_tokens %zu)", li,
			       max_tokens);
	/* loads the layout's GPU copy in the current context (an empty batch launches nothing) */
	uint32_t st0 = 0;
	struct eht_engram_batch none = {.size = sizeof(none), .starts = &st0};
	int rc = engram_gpu_hash_layer(l, &none, (int)li, 0, NULL, NULL);
	if (rc)
		return rc;
	eht_engram_lookup *el = calloc(1, sizeof(*el));
	if (!el)
		return eht_err(ENOMEM, "engram lookup: out of memory");
	*el = (eht_engram_lookup){l, li, lk, max_tokens, 0};
	if ((rc = eht_dev_alloc(&el->ids, max_tokens * l->cols * 4))) {
		free(el);
		return rc;
	}
	*out = el;
	return 0;
}

int eht_engram_lookup_run(eht_engram_lookup *el, const struct eht_engram_batch *b, void *d_out, void *stream,
			  unsigned flags, uint64_t *dead_count)
{
	if (!el || !b)
		return eht_err(EINVAL, "eht_engram_lookup_run: NULL handle or batch");
	int rc;
	if (b->n_tokens > el->max_tokens || (b->n_tokens && !b->n_requests))
		return eht_err(EINVAL, "eht_engram_lookup_run: %zu tokens (at most %zu, in at least one request)",
			       b->n_tokens, el->max_tokens);
	if ((rc = engram_gpu_hash_layer(el->l, b, (int)el->li, el->ids, stream, NULL)))
		return rc;
	flags &= ~(EHT_LOOKUP_RUN_IDS_HOST);
	return eht_lookup_run(el->lk, (const void *)(uintptr_t)el->ids, EHT_ID_INT32, 0,
			      (uint64_t)b->n_tokens * el->l->cols, d_out, stream, flags | EHT_LOOKUP_RUN_IDS_DEVICE,
			      dead_count);
}

void eht_engram_lookup_destroy(eht_engram_lookup *el)
{
	if (!el)
		return;
	if (el->ids) {
		/* the ids buffer may still be read by queued work */
		eht_dev_sync();
		eht_dev_free(el->ids);
	}
	free(el);
}
