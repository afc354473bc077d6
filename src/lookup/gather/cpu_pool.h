/* SPDX-License-Identifier: Apache-2.0 */
/* cpu_pool.h: the one CPU pool of the process, shared by every engine (cpu_pool.c). */
#ifndef EHT_LOOKUP_GATHER_CPU_POOL_H
#define EHT_LOOKUP_GATHER_CPU_POOL_H

#include "util/pool.h"

/* Takes a reference (creating the pool at the first: threads as asked, else EHT_THREADS, else budget
 * (the server's thread budget for this worker, eht_table_copy's pool_threads; 0: none), else the CPUs
 * of NUMA node `node` divided by the GPUs attached to it, less one for the thread that feeds it and
 * one for the process's own thread). */
int eht_lk_pool_get(unsigned threads, unsigned budget, int node, unsigned spin_us, eht_pool **out);
void eht_lk_pool_put(eht_pool *pool);

#endif
