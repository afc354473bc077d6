/* SPDX-License-Identifier: Apache-2.0 */
/* region_gpu.h: the only GPU calls regions make (pinning, the GPU's host NUMA node), kept behind one
 * small interface so region.c never touches the CUDA driver itself. */
#ifndef EHT_OS_REGION_GPU_H
#define EHT_OS_REGION_GPU_H

#include <stddef.h>
#include <stdint.h>

/* Registers [host, host+bytes) for GPU device (chunked, one device pointer). 0, -ENODEV or -errno. */
int region_gpu_pin(void *host, size_t bytes, int device, uint64_t *dptr);
/* Undoes region_gpu_pin; every chunk attempted, the first error returned. */
int region_gpu_unpin(void *host, size_t bytes);
/* The host NUMA node of GPU device (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID), -1 when unknown. */
int region_gpu_host_node(int device);

#endif
