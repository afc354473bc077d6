/* SPDX-License-Identifier: Apache-2.0 */
/* share_huge.h: whether eht_table_share's auto tier takes region-pinned before host-NUMA: on a node
 * with a GPU whose huge page pool has room for the whole table. There the CPU mapping gets 2 MiB
 * pages where host-NUMA's has the driver's 4 KiB ones (the CPU gathers of HOST and AUTO run faster:
 * H200, 24 GiB, prefill HOST 1.39 against 1.73 ms), while the GPU reads pinned host memory at the
 * same rate whatever backs it.
 *
 * EHT_TEST_SHARE_HUGE_FIRST=1 lets a test without a GPU take this path (the region-pinned attempt
 * then fails to pin and the usual order follows). */
#ifndef EHT_TABLE_SHARE_HUGE_H
#define EHT_TABLE_SHARE_HUGE_H

#include <stdbool.h>
#include <stdint.h>

/* Whether a table of `bytes` (its rows; the region adds a header page) fits the huge page pool as
 * a region would take it: the pool's available pages (free less reserved) and, on a machine of
 * several NUMA nodes with node >= 0, node's free pages. gpus: the GPUs this process sees (0: never,
 * as nothing would pin the region). */
bool eht_share_huge_first(uint64_t bytes, int gpus, int node);

#endif
