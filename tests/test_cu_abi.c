/* SPDX-License-Identifier: Apache-2.0 */
/* test_cu_abi.c: eht declares the CUDA driver types itself (no toolkit needed to build); where
 * cuda.h is installed, check every size, offset and constant against it. Skips without cuda.h. */
#include <stdio.h>
#include <stdlib.h>

#if defined(EHT_HAVE_CUDA_H)
#include <cuda.h>
#include <stddef.h>

extern const long eht_abi_values[];

#define V(x) (long)(x),
static const long cuda_h_values[] = {
	V(sizeof(CUmemAllocationProp)) V(offsetof(CUmemAllocationProp, requestedHandleTypes))
	V(offsetof(CUmemAllocationProp, location)) V(offsetof(CUmemAllocationProp, win32HandleMetaData))
	V(offsetof(CUmemAllocationProp, allocFlags)) V(sizeof(CUmemAccessDesc))
	V(offsetof(CUmemAccessDesc, flags)) V(sizeof(CUmemLocation)) V(sizeof(CUmemFabricHandle))
	V(sizeof(CUdeviceptr)) V(sizeof(CUmemGenericAllocationHandle))
	V(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) V(CU_MEM_HANDLE_TYPE_FABRIC)
	V(CU_MEM_LOCATION_TYPE_DEVICE) V(CU_MEM_LOCATION_TYPE_HOST_NUMA) V(CU_MEM_ALLOCATION_TYPE_PINNED)
	V(CU_MEM_ACCESS_FLAGS_PROT_READWRITE) V(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
	V(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID) V(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
	V(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)
	V(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
	V(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) V(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)
	V(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) V(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
	V(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) V(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
	V(CU_MEMHOSTREGISTER_DEVICEMAP) V(CU_MEMHOSTREGISTER_PORTABLE) V(CU_MEMHOSTREGISTER_READ_ONLY)
	V(CU_MEMHOSTALLOC_PORTABLE) V(CU_MEMHOSTALLOC_DEVICEMAP) V(CU_STREAM_NON_BLOCKING)
	V(CU_EVENT_DISABLE_TIMING) V(CU_POINTER_ATTRIBUTE_MEMORY_TYPE) V(CU_MEMORYTYPE_DEVICE)
	V(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) V(CUDA_ERROR_NOT_PERMITTED)
	V(CUDA_ERROR_NOT_SUPPORTED) V(CUDA_ERROR_OUT_OF_MEMORY) V(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
	-1};

int main(void)
{
	int bad = 0;
	for (int i = 0; cuda_h_values[i] != -1 || eht_abi_values[i] != -1; i++) {
		if (cuda_h_values[i] != eht_abi_values[i]) {
			fprintf(stderr, "entry %d: cuda.h says %ld, src/cuda/cu_types.h says %ld\n", i,
				cuda_h_values[i], eht_abi_values[i]);
			bad++;
		}
		if (cuda_h_values[i] == -1 || eht_abi_values[i] == -1)
			break;
	}
	fprintf(stderr, bad ? "FAIL\n" : "PASS\n");
	return bad ? 1 : 0;
}
#else
int main(void)
{
	fprintf(stderr, "SKIP: cuda.h not installed; nothing to compare\n");
	return 77;
}
#endif
