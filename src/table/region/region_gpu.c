/* SPDX-License-Identifier: Apache-2.0 */
/* region_gpu.c: the region tier's GPU steps through the device layer, handed to src/os
 * through the region_gpu_ops seam; and the two public region calls that need them. */
#include "os/region_gpu.h"

#include "gpu/dev.h"
#include "gpu/pin.h"
#include "os/region_impl.h"
#include "util/err.h"

static int gpu_pin(void *host, size_t bytes, int device, uint64_t *dptr)
{
	if (eht_dev_load() != 0)
		return eht_err(ENODEV, "no CUDA driver or GPU");
	return eht_gpu_pin(host, bytes, device, 0, dptr);
}

static int gpu_unpin(void *host, size_t bytes) { return eht_gpu_unpin(host, bytes); }

static int gpu_host_node(int device)
{
	if (device < 0 || eht_dev_load() != 0)
		return -1;
	int node = -1;
	return eht_dev_attr(device, EHT_DEV_ATTR_HOST_NUMA_ID, &node) == 0 ? node : -1;
}

static const struct region_gpu_ops gpu_ops = {.pin = gpu_pin, .unpin = gpu_unpin, .host_node = gpu_host_node};

int eht_region_open(const char *name, uint64_t bytes, const struct eht_region_opts *opts, eht_region **out)
{
	return region_open(name, bytes, opts, &gpu_ops, out);
}

int eht_region_pin(eht_region *r, int device) { return region_pin(r, device, &gpu_ops); }
