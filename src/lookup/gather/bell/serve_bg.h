/* SPDX-License-Identifier: Apache-2.0 */
/* serve_bg.h: the CPU side of a background request (serve_bg.c; the stream's side: bg.c). */
#ifndef EHT_LOOKUP_GATHER_SERVE_BG_H
#define EHT_LOOKUP_GATHER_SERVE_BG_H

#include "lookup/core.h"

/* Serves background request i of lk, whose doorbell rang, with n rows (the request's own for a plain
 * one, the GPU's count for a compact one): the groups are the bound's (r->n), as the stream's waits;
 * those past n are published empty. A plain request is its run's only piece: its dead count goes to
 * lk->h_dead. Called by the poller. */
void eht_lk_bell_serve_bg(eht_lookup *lk, unsigned i, size_t n);

#endif
