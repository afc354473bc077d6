/* SPDX-License-Identifier: Apache-2.0 */
/* inplace.h: the GPU's in-place gather of a piece (inplace.c): one kernel reads each row from the
 * GPU-readable table in the given order. DIRECT is this alone; AUTO gives it a share. */
#ifndef EHT_LOOKUP_GATHER_INPLACE_H
#define EHT_LOOKUP_GATHER_INPLACE_H

#include "lookup/core.h"

/* ids[0..n) into GPU out on s (host ids pass through the engine's ids copy); dead ids counted into
 * lk->d_counters[0]. */
int eht_lk_inplace_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			 eht_dptr out, eht_stream s);

/* A piece in place in one kernel: where it is the run's only one (publish_dead), the kernel reads
 * p->view itself (when set) and publishes the dead count (p->dead_published); else as
 * eht_lk_inplace_piece, from flat ids. */
int eht_lk_inplace_whole(eht_lookup *lk, struct lk_piece *p);

#endif
