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

#endif
