/* SPDX-License-Identifier: Apache-2.0 */
/* bg.h: the stream's side of background requests (bg.c), chosen by bell.c: nothing on an
 * SM waits for the CPU (EHT_LOOKUP_BACKGROUND). */
#ifndef EHT_LOOKUP_GATHER_BELL_BG_H
#define EHT_LOOKUP_GATHER_BELL_BG_H

#include "lookup/core.h"

/* n ids (a run's only piece: its dead count is the CPU's; n fits the staging) into GPU out on es:
 * the stream rings, then waits for each group and copies it (bf16: dequantized per group on the
 * engine's dequant stream above LK_BG_DEQUANT_ROWS, else once at the end), or, pushed, waits for the
 * request's done word while the CPU moves the rows. */
int eht_lk_bell_bg_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			 eht_dptr out, eht_stream es, bool capturing, const struct eht_lk_view *view);
/* The distinct misses of a dedup pass, all of them the CPU's, the same way: uniq (u32 local rows on
 * the GPU) of which *ucount there are (n bounds them) into compact (raw). publish_dead: the pass's
 * dead count (lk->d_counters[0]) goes to lk->h_dead at the end. */
int eht_lk_bell_bg_compact(eht_lookup *lk, eht_dptr uniq, eht_dptr ucount, eht_dptr compact, size_t n,
			   eht_stream s, bool capturing, bool publish_dead);

#endif
