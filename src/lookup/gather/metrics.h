/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.h: the process's lookup counters (eht_metrics_read), bumped with relaxed atomics where the
 * work happens: cheap enough to leave on. */
#ifndef EHT_LOOKUP_GATHER_METRICS_H
#define EHT_LOOKUP_GATHER_METRICS_H

#include <stdbool.h>
#include <stdint.h>

/* One eht_lookup_run call: its ids, where it ran (0 CPU piece, 1 GPU piece, 2 hot set; -1 refused), its result,
 * and the calling thread's time in it. */
void eht_metrics_call(uint64_t ids, int path, int rc, uint64_t ns);
/* Dead ids the CPU counted (GPU-counted ones stay on the GPU). */
void eht_metrics_dead(uint64_t n);
/* Rows the CPU pool gathered and the bytes it staged for the GPU (every graph replay included). */
void eht_metrics_gathered(uint64_t rows, uint64_t bytes);

#endif
