/* SPDX-License-Identifier: Apache-2.0 */
/* region_gpu.c: regions' GPU steps through the run-time loaded driver (src/cuda). */
#include "os/region_gpu.h"

#include "cuda/cu_driver.h"
#include "cuda/cu_pin.h"
#include "util/err.h"

int region_gpu_pin(void *host, size_t bytes, int device, uint64_t *dptr)
{
	if (eht_cu_load() != 0)
		return eht_err(ENODEV, "no CUDA driver or GPU");
	return eht_cu_pin(host, bytes, device, 0, dptr);
}

int region_gpu_unpin(void *host, size_t bytes) { return eht_cu_unpin(host, bytes); }

int region_gpu_host_node(int device)
{
	if (device < 0 || eht_cu_load() != 0)
		return -1;
	CUdevice d;
	int node = -1;
	if (EHT_CU_CHECK(cuDeviceGet(&d, device)) != 0)
		return -1;
	if (EHT_CU_CHECK(cuDeviceGetAttribute(&node, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, d)) != 0)
		return -1;
	return node;
}
