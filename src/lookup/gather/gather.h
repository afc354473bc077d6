/* SPDX-License-Identifier: Apache-2.0 */
/* gather.h: the engine's GPU parts that every gather mechanism and policy shares (gather.c): its
 * host and GPU memory, the ids copy, the counters and the dead word, the GPU scratch and the fork;
 * each made at its first request and kept until the engine goes. */
#ifndef EHT_LOOKUP_GATHER_GATHER_H
#define EHT_LOOKUP_GATHER_GATHER_H

#include "lookup/core.h"

/* Host memory of the engine: pinned (portable) with a GPU, else malloc'ed; *rc set on failure (and
 * then nothing is allocated: chains of calls check once). */
void *eht_lk_host_alloc(eht_lookup *lk, size_t bytes, int *rc);
void eht_lk_host_free(eht_lookup *lk, void *p);
eht_dptr eht_lk_dev_alloc(size_t bytes, int *rc);
/* The parts every GPU engine has (the kernels loaded or not): the ids copy, the counters, the dead
 * word (mapped, so a stage-in kernel can publish a run's count itself); and freeing every part. */
int eht_lk_gpu_parts_init(eht_lookup *lk);
void eht_lk_gpu_parts_fini(eht_lookup *lk);
/* Makes the scratch (d_compact of compact_rows rows, d_slot of max_batch) / the fork if missing. */
int eht_lk_scratch(eht_lookup *lk);
int eht_lk_fork_init(eht_lookup *lk);
/* The run's counters (d_counters) zeroed on s before the first kernel of the run that counts into
 * them, once a run (eht_lookup_run starts each GPU run with counters_zeroed false). A background
 * request, whose dead ids the CPU counts, then has no memset node: on the lent H200 (eht bench step,
 * decode, 2 x 24 GiB, three alternated pairs of processes) its graph launched 2-4 us faster and its
 * step added +12.8 .. +23.3 us back to back against +23.8 .. +45.3 with the memset. */
int eht_lk_counters_zero(eht_lookup *lk, eht_stream s);
/* Forks the side stream off s (events, so a capture follows it; the counters zeroed first: the side's
 * kernels count into them) / joins it back into s. */
int eht_lk_fork(eht_lookup *lk, eht_stream s), eht_lk_join(eht_lookup *lk, eht_stream s);
/* Ids of one piece as a device pointer: in place when on the GPU, else copied through pinned h_ids
 * into d_ids on s (not capturable). */
int eht_lk_piece_ids_dev(eht_lookup *lk, const void *ids, bool ids_dev, size_t isz, size_t n,
			 eht_stream s, eht_dptr *dptr);
/* Ids in GPU memory for the CPU: copied back into h_ids, s synchronized. */
int eht_lk_ids_to_host(eht_lookup *lk, const void *d_ids, size_t bytes, eht_stream s, const void **out);

#endif
