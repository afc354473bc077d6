/* SPDX-License-Identifier: Apache-2.0 */
/* probe.h: machine facts used by the host-NUMA tier and `eht probe`: handle export support (a real
 * one-granule create + export, cached per device), host-NUMA allocation properties, NUMA memory. */
#ifndef EHT_CUDA_PROBE_H
#define EHT_CUDA_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "cuda/cu_types.h"

/* The allocation properties of pinned cuMem memory on host NUMA node `numa` exporting `handles`. */
void eht_host_numa_prop(CUmemAllocationProp *prop, int numa, CUmemAllocationHandleType handles);

/* Host NUMA node of CUDA device `device` (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, else the PCI device's
 * sysfs numa_node, else 0 on a one-node machine). Returns the node (>= 0) or -errno. Needs the
 * driver loaded. */
int eht_cu_host_numa_id(int device);

/* Whether host-NUMA allocations on `device` can be created and exported as `type` here, found by a
 * real one-granule cuMemCreate + cuMemExportToShareableHandle, once per device and type per process
 * (thread-safe). Returns 1 (yes), 0 (no; `why` says which call refused and how) or -errno (no driver,
 * bad device). why may be NULL. */
int eht_cu_export_supported(int device, CUmemAllocationHandleType type, char *why, size_t why_len);

/* Memory of NUMA node `node` in bytes: total, free (MemFree) and available (what the node can still
 * give without swapping: MemAvailable on a one-node machine, else MemFree + Inactive(file) +
 * SReclaimable of the node). A machine without NUMA sysfs reports everything as node 0.
 * Returns 0, -ENOENT (no such node) or -errno. */
int eht_probe_numa_mem(int node, uint64_t *total, uint64_t *free_bytes, uint64_t *available);

/* The online NUMA nodes (ascending) into nodes[max]; returns the count (>= 1). */
int eht_probe_numa_nodes(int *nodes, int max);

#endif
