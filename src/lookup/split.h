/* SPDX-License-Identifier: Apache-2.0 */
/* split.h: a background lookup as two stream operations an engine places apart (the engine's own
 * call, layer.c: EHT_ENGRAM_LAYER_START, then eht_engram_layer_wait). A pushed background request
 * is already two: the ring kernel (the ids to the CPU, the doorbell) and one wait for the done word
 * the CPU's copies set. Split, the run enqueues the ring only and the wait comes later, on the same
 * stream: neither needs a side stream, so both capture into CUDA graphs placed apart (vLLM's
 * piecewise graphs start a prefetch in one piece and join it in a later one). Implemented in
 * gather/bell/bg.c. */
#ifndef EHT_LOOKUP_SPLIT_H
#define EHT_LOOKUP_SPLIT_H

#include <stdbool.h>

#include "eht.h"
#include "gpu/dev.h"

/* The engine's next pushed background request stops after its ring kernel (no-op without the
 * stream-triggered path). */
void eht_lk_split_begin(eht_lookup *lk);
/* Ends what begin asked: whether a request stopped there (it is then pending: the next call must be
 * eht_lk_split_wait). A run that took another path (not pushed, not background, several requests)
 * enqueued its whole lookup: nothing is pending. */
bool eht_lk_split_end(eht_lookup *lk);
/* Whether a split request is pending, and whether it was captured. */
bool eht_lk_split_pending(const eht_lookup *lk, bool *capturing);
/* Forgets the pending request without a wait (its rows land unwaited for: the caller throws them
 * away); returns whether one was pending. */
bool eht_lk_split_drop(eht_lookup *lk);
/* Enqueues the pending request's wait (and its dequant where the CPU does not do it: then one kernel
 * that polls the done word, then dequantizes) on s, which must be the start's stream or one ordered
 * after it, and the start must come after the engine's earlier requests were waited for (the polling
 * kernel holds every SM: eht_gpu_expand_after); 0 where nothing is pending. */
int eht_lk_split_wait(eht_lookup *lk, eht_stream s);

#endif
