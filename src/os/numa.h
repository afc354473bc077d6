/* SPDX-License-Identifier: Apache-2.0 */
/* numa.h: NUMA placement through the mbind/get_mempolicy system calls (no libnuma) and node memory. */
#ifndef EHT_OS_NUMA_H
#define EHT_OS_NUMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Number of possible NUMA nodes with memory (1 on machines without NUMA sysfs). */
int eht_numa_node_count(void);
/* True when node exists (its sysfs folder does, or node 0 without NUMA sysfs). */
bool eht_numa_node_exists(int node);
/* The node of the CPU this thread runs on (0 when unknown). */
int eht_numa_local_node(void);
/* The online NUMA nodes (ascending) into nodes[max]; returns the count (>= 1). */
int eht_numa_nodes(int *nodes, int max);
/* Memory of NUMA node `node` in bytes: total, free (MemFree) and available (what the node can still
 * give without swapping: MemAvailable on a one-node machine, else MemFree + Inactive(file) +
 * SReclaimable of the node). A machine without NUMA sysfs reports everything as node 0.
 * Returns 0, -EINVAL (negative node), -ENOENT (no such node) or -errno, with a message. */
int eht_numa_node_mem(int node, uint64_t *total, uint64_t *free_bytes, uint64_t *avail);
/* MemAvailable of /proc/meminfo (0 when unreadable). */
uint64_t eht_mem_available(void);
/* Binds [addr, addr+len) (page aligned) to node: strict (MPOL_BIND) or preferred. Must run before
 * the pages are first touched. Returns 0 or -errno (e.g. -EPERM or -ENOSYS in containers). */
int eht_numa_bind(void *addr, size_t len, int node, bool strict);
/* The node the page at addr sits on (get_mempolicy MPOL_F_NODE|MPOL_F_ADDR), -1 when unknown. */
int eht_numa_node_of(const void *addr);

#endif
