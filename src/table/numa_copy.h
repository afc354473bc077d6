/* SPDX-License-Identifier: Apache-2.0 */
/* numa_copy.h: one copy of a table per NUMA node: which nodes get one, which one a process reads,
 * whether they fit (eht serve --per-numa, EHT_SHARE_PER_NUMA).
 *
 * Tests on a one-node machine force the topology: EHT_TEST_NUMA_NODES=0,1 (the nodes that get a
 * copy), EHT_TEST_WORKER_NUMA=N (this process's node), EHT_TEST_NUMA_AVAIL=SIZE (every node's
 * available memory). A forced node this machine lacks is never bound (mbind would fail): its copy
 * lives wherever the kernel puts it and is recorded as that node's. */
#ifndef EHT_TABLE_NUMA_COPY_H
#define EHT_TABLE_NUMA_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EHT_COPIES_MAX 16

/* The node whose copy a process on GPU `device` reads: EHT_TEST_WORKER_NUMA when set, else the
 * GPU's host NUMA node (device >= 0 and the driver knows it), else the node of the CPU this thread
 * runs on. */
int eht_copy_node_for(int device);
/* The nodes that get a copy, ascending and distinct, into nodes[EHT_COPIES_MAX]: EHT_TEST_NUMA_NODES
 * when set, else want[0..nwant) when nwant > 0, else the host NUMA nodes of this machine's GPUs.
 * Returns the count (0: none known, e.g. no GPU), or -EINVAL (a bad list, with a message). */
int eht_copy_nodes(const int *want, size_t nwant, int *nodes);
/* Whether a copy of `bytes` fits on node: its available memory (EHT_TEST_NUMA_AVAIL when set) less
 * the reserve (EHT_NUMA_RESERVE, else 10 % of the node's total; none with a forced availability).
 * Returns 0, or -ENOMEM with a message naming the node, what it has and what the copy needs. */
int eht_copy_fits(int node, uint64_t bytes);
/* Whether memory may be bound to node (false for a forced node this machine lacks). */
bool eht_copy_bindable(int node);
/* Index of node in nodes[0..n), or 0 when absent (the first copy serves the others). */
int eht_copy_pick(const int *nodes, int n, int node);

#endif
