/* SPDX-License-Identifier: Apache-2.0 */
/* region_gpu.h: the only GPU steps a region takes (pinning, the GPU's host NUMA node), as a small
 * table of functions that the layer above supplies, so src/os never depends on src/gpu. The
 * CUDA-backed table is the region tier's (src/table, region_gpu.c). */
#ifndef EHT_OS_REGION_GPU_H
#define EHT_OS_REGION_GPU_H

#include <stddef.h>
#include <stdint.h>

struct region_gpu_ops {
	/* Registers [host, host+bytes) for GPU device (one device pointer). 0, -ENODEV or -errno. */
	int (*pin)(void *host, size_t bytes, int device, uint64_t *dptr);
	/* Undoes pin; every chunk attempted, the first error returned. */
	int (*unpin)(void *host, size_t bytes);
	/* The host NUMA node of GPU device, -1 when unknown. */
	int (*host_node)(int device);
};

#endif
