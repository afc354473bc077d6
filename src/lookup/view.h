/* SPDX-License-Identifier: Apache-2.0 */
/* view.h: a lookup whose ids are an engine's [T, H] ids seen through one rank's view (idview.h), the
 * engine's own call (layer.c). The doorbell kernels (ring, stage-in) read the view themselves and
 * write its flat ids straight into the pinned ids the CPU gathers from; every other path needs the
 * flat ids in GPU memory first and gets them from the view's flatten (the layer's ids kernel). */
#ifndef EHT_LOOKUP_VIEW_H
#define EHT_LOOKUP_VIEW_H

#include <stdint.h>

#include "eht.h"
#include "gpu/dev.h"
#include "gpu/kernels/idview.h"

struct eht_lk_view {
	struct eht_lk_idview k;
	eht_dptr flat; /* where flatten writes the flat ids (the run's ids) */
	/* Enqueues the flat ids' making on s: 0 or -errno. */
	int (*flatten)(const struct eht_lk_view *v, eht_stream s);
	void *ctx; /* flatten's */
};

/* eht_lookup_run of v's count flat ids (int32 or int64 as v->k.out64 says) from GPU memory (v->flat
 * once flattened) into out, on stream; flags as eht_lookup_run's (ids on the device). */
int eht_lk_run_view(eht_lookup *lk, const struct eht_lk_view *v, uint64_t count, void *out, void *stream,
		    unsigned flags);
/* How many of layer l's GPU calls made their flat ids in GPU memory, for the tests (layer.c). */
uint64_t eht_engram_layer_flattens(const eht_engram_layer *l);
/* The flat ids of a piece's view where a path needs them in GPU memory (0 where there is no view). */
struct lk_piece;
int eht_lk_piece_flatten(struct lk_piece *p);

#endif
