/* SPDX-License-Identifier: Apache-2.0 */
/* serve.h: the CPU side of a stream-triggered request whose doorbell rang (serve.c). */
#ifndef EHT_LOOKUP_GATHER_SERVE_H
#define EHT_LOOKUP_GATHER_SERVE_H

#include "lookup/core.h"

/* Gathers request i of lk, armed and rung (the poller took the ring), on the pool: its chunks into
 * staging slots for the stage-in kernel, or its groups for the background way. */
void eht_lk_bell_serve(eht_lookup *lk, unsigned i);

#endif
