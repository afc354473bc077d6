/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_cuda.c: the device layer's virtual memory management (gpu/vmm.h) on the CUDA driver's cuMem*
 * calls: pinned host-NUMA allocations, shareable handles, one mapped range per table. */
#include "gpu/vmm.h"

#include <stdint.h>
#include <string.h>

#include "gpu/cuda/cu_driver.h"
#include "util/err.h"

_Static_assert(sizeof(struct eht_vmm_fabric) == sizeof(CUmemFabricHandle), "FABRIC handle size");
_Static_assert((int)EHT_VMM_FD == (int)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
		       (int)EHT_VMM_FABRIC == (int)CU_MEM_HANDLE_TYPE_FABRIC,
	       "handle kinds are stored as the driver's values");

static void host_numa_prop(CUmemAllocationProp *prop, int numa, enum eht_vmm_kind kind)
{
	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->requestedHandleTypes = (CUmemAllocationHandleType)kind;
	prop->location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	prop->location.id = numa;
}

static int need(void) { return eht_cu_need(EHT_DEV_FEAT_VMM, "host-NUMA virtual memory"); }

int eht_vmm_granularity(int numa, enum eht_vmm_kind kind, size_t *granularity)
{
	CUmemAllocationProp prop;
	host_numa_prop(&prop, numa, kind);
	int rc = need();
	return rc ? rc
		  : EHT_CU_CHECK(cuMemGetAllocationGranularity(granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
}

int eht_vmm_create(eht_vmm_mem *h, size_t bytes, int numa, enum eht_vmm_kind kind)
{
	CUmemAllocationProp prop;
	host_numa_prop(&prop, numa, kind);
	int rc = need();
	return rc ? rc : EHT_CU_CHECK(cuMemCreate(h, bytes, &prop, 0));
}

int eht_vmm_release(eht_vmm_mem h)
{
	int rc = need();
	return rc ? rc : EHT_CU_CHECK(cuMemRelease(h));
}

int eht_vmm_retain(eht_vmm_mem *h, void *addr)
{
	int rc = need();
	return rc ? rc : EHT_CU_CHECK(cuMemRetainAllocationHandle(h, addr));
}

int eht_vmm_export(void *out, eht_vmm_mem h, enum eht_vmm_kind kind)
{
	int rc = need();
	return rc ? rc : EHT_CU_CHECK(cuMemExportToShareableHandle(out, h, (CUmemAllocationHandleType)kind, 0));
}

int eht_vmm_import(eht_vmm_mem *h, int fd, const struct eht_vmm_fabric *fabric, enum eht_vmm_kind kind)
{
	int rc = need();
	/* The driver takes the fd itself (as a pointer-sized value) or the FABRIC handle's address. */
	void *os = kind == EHT_VMM_FABRIC ? (void *)fabric : (void *)(intptr_t)fd;
	return rc ? rc : EHT_CU_CHECK(cuMemImportFromShareableHandle(h, os, (CUmemAllocationHandleType)kind));
}

int eht_vmm_reserve(eht_dptr *va, size_t bytes, size_t align)
{
	int rc = need();
	return rc ? rc : EHT_CU_CHECK(cuMemAddressReserve(va, bytes, align, 0, 0));
}

int eht_vmm_free_va(eht_dptr va, size_t bytes)
{
	int rc = need();
	return rc ? rc : EHT_CU_CHECK(cuMemAddressFree(va, bytes));
}

int eht_vmm_map(eht_dptr va, size_t bytes, eht_vmm_mem h)
{
	int rc = need();
	return rc ? rc : EHT_CU_CHECK(cuMemMap(va, bytes, 0, h, 0));
}

int eht_vmm_unmap(eht_dptr va, size_t bytes)
{
	int rc = need();
	return rc ? rc : EHT_CU_CHECK(cuMemUnmap(va, bytes));
}

int eht_vmm_access(eht_dptr va, size_t bytes, int device, int numa, bool writable)
{
	CUmemAccess_flags f = writable ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_READ;
	CUmemAccessDesc access[2] = {
		{.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device}, .flags = f},
		{.location = {.type = CU_MEM_LOCATION_TYPE_HOST_NUMA, .id = numa}, .flags = f},
	};
	int rc = need();
	return rc ? rc : EHT_CU_CHECK(cuMemSetAccess(va, bytes, access, 2));
}
