/* SPDX-License-Identifier: Apache-2.0 */
/* bell.h: lookups the stream triggers itself (bell.c): ids in GPU memory and CUDA-graph replays,
 * gathered by the CPU pool with no host synchronization. The path's state is lk->bell
 * (requests.h), made by the strategy that uses it (HOST's init, with a GPU and the kernels; the
 * tests make it on a CPU-only engine, whose CPU emulation they drive). */
#ifndef EHT_LOOKUP_GATHER_BELL_H
#define EHT_LOOKUP_GATHER_BELL_H

#include "lookup/core.h"

/* Makes lk->bell: the path's buffers (host memory without a GPU: the CPU emulation the tests drive),
 * and joins the poller. lk->bell stays set on failure too (eht_lk_bell_fini frees what was made). */
int eht_lk_bell_init(eht_lookup *lk);
/* Leaves the poller and frees the path (after the GPU finished with it); NULL lk->bell: nothing. */
void eht_lk_bell_fini(eht_lookup *lk);

/* HOST (and the CPU share of AUTO) triggered by the stream itself: enqueues the stage-in kernel for
 * ids[0..n) into GPU out on s (it copies GPU ids into pinned memory first); the poller has the pool
 * gather when the kernel rings. Background mode: the stream's memory operations instead
 * (bg.c). Capturable. Dead ids go to lk->d_counters[0], and with publish_dead (the run's only
 * GPU work) from there to lk->h_dead when the kernel ends. view (not NULL): ids are where its flat
 * ids would go, and the kernel that copies them to pinned memory reads the view instead (view.h). */
int eht_lk_bell_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
		      eht_dptr out, eht_stream s, bool capturing, bool publish_dead, const struct eht_lk_view *view);
/* The same for the distinct rows of a dedup pass (gather/distinct.c): uniq (u32 local rows) after the
 * GPU's share of the *ucount there are (both on the GPU; n bounds them) into compact (raw, same places). */
int eht_lk_bell_compact(eht_lookup *lk, eht_dptr uniq, eht_dptr ucount, eht_dptr compact, float share,
			size_t n, eht_stream s, bool capturing, bool publish_dead);

#endif
