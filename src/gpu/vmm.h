/* SPDX-License-Identifier: Apache-2.0 */
/* vmm.h: the device layer's virtual memory management (feature EHT_DEV_FEAT_VMM): pinned allocations
 * on a host NUMA node, exported as shareable handles, imported by other processes and mapped into one
 * address range that a GPU and the CPU both read (the host-NUMA tier, src/table/host_numa). Calls
 * return 0 or -errno with a message; -ENOTSUP when the driver lacks the feature. */
#ifndef EHT_GPU_VMM_H
#define EHT_GPU_VMM_H

#include <stdbool.h>
#include <stddef.h>

#include "gpu/dev.h"

/* Shareable handle kinds (values as the CUDA driver's, stored in share headers). */
enum eht_vmm_kind { EHT_VMM_NONE = 0, EHT_VMM_FD = 0x1, EHT_VMM_FABRIC = 0x8 };
/* A FABRIC handle: 64 opaque bytes (multi-node NVLink systems with IMEX). */
struct eht_vmm_fabric {
	unsigned char data[64];
};
typedef unsigned long long eht_vmm_mem; /* an allocation handle */

/* Minimum granularity of host-NUMA allocations on node numa exportable as kind. */
int eht_vmm_granularity(int numa, enum eht_vmm_kind kind, size_t *granularity);
int eht_vmm_create(eht_vmm_mem *h, size_t bytes, int numa, enum eht_vmm_kind kind);
int eht_vmm_release(eht_vmm_mem h);
/* The allocation mapped at addr (a new reference: release it). */
int eht_vmm_retain(eht_vmm_mem *h, void *addr);
/* out: an int (a new fd) for EHT_VMM_FD, a struct eht_vmm_fabric for EHT_VMM_FABRIC. */
int eht_vmm_export(void *out, eht_vmm_mem h, enum eht_vmm_kind kind);
/* Imports an exported handle: fd for EHT_VMM_FD, fabric for EHT_VMM_FABRIC (the other unused). */
int eht_vmm_import(eht_vmm_mem *h, int fd, const struct eht_vmm_fabric *fabric, enum eht_vmm_kind kind);
int eht_vmm_reserve(eht_dptr *va, size_t bytes, size_t align);
int eht_vmm_free_va(eht_dptr va, size_t bytes);
int eht_vmm_map(eht_dptr va, size_t bytes, eht_vmm_mem h);
int eht_vmm_unmap(eht_dptr va, size_t bytes);
/* Grants GPU `device` and host NUMA node `numa` read-write (or read-only) access to [va, va + bytes). */
int eht_vmm_access(eht_dptr va, size_t bytes, int device, int numa, bool writable);

#endif
