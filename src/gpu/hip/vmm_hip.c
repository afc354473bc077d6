/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_hip.c: the device layer's virtual memory management (gpu/vmm.h) on HIP: off. ROCm's VMM calls
 * (hipMemCreate, hipMemMap, hipMemExportToShareableHandle) place memory on a device only, never on a
 * host NUMA node, which is what the host-NUMA tier needs; eht_dev_attr answers 0 for
 * EHT_DEV_ATTR_HOST_NUMA_VMM, so eht_table_share goes on to a region pinned with hipHostRegister
 * (the same bytes for the GPU to read in place, shared by a file instead of handles). Every call is
 * -ENOTSUP with that reason, said once at info level. */
#include "gpu/vmm.h"

#include "gpu/hip/hip_rt.h"

static int off(void) { return eht_hip_need(EHT_DEV_FEAT_VMM, "host-NUMA virtual memory"); }

int eht_vmm_granularity(int numa, enum eht_vmm_kind kind, size_t *granularity) { return off(); }
int eht_vmm_create(eht_vmm_mem *h, size_t bytes, int numa, enum eht_vmm_kind kind) { return off(); }
int eht_vmm_release(eht_vmm_mem h) { return off(); }
int eht_vmm_retain(eht_vmm_mem *h, void *addr) { return off(); }
int eht_vmm_export(void *out, eht_vmm_mem h, enum eht_vmm_kind kind) { return off(); }
int eht_vmm_import(eht_vmm_mem *h, int fd, const struct eht_vmm_fabric *fabric, enum eht_vmm_kind kind)
{
	return off();
}
int eht_vmm_reserve(eht_dptr *va, size_t bytes, size_t align) { return off(); }
int eht_vmm_free_va(eht_dptr va, size_t bytes) { return off(); }
int eht_vmm_map(eht_dptr va, size_t bytes, eht_vmm_mem h) { return off(); }
int eht_vmm_unmap(eht_dptr va, size_t bytes) { return off(); }
int eht_vmm_access(eht_dptr va, size_t bytes, int device, int numa, bool writable) { return off(); }
