/* SPDX-License-Identifier: Apache-2.0 */
/* probe_export.c: can host-NUMA cuMem memory be exported as FABRIC or POSIX-fd handles here? Asked
 * the only reliable way, by a one-granule allocation and export, and remembered per device. */
#include "cuda/probe.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cu_driver.h"
#include "eht.h"
#include "util/err.h"
#include "util/log.h"

void eht_host_numa_prop(CUmemAllocationProp *prop, int numa, CUmemAllocationHandleType handles)
{
	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->requestedHandleTypes = handles;
	prop->location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	prop->location.id = numa;
}

static int sysfs_int(const char *path, int *out)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	int ok = fscanf(f, "%d", out) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

int eht_cu_host_numa_id(int device)
{
	int rc = eht_cu_load();
	if (rc)
		return rc;
	CUdevice dev;
	rc = EHT_CU_CHECK(cuDeviceGet(&dev, device));
	if (rc)
		return rc;
	int id = -1;
	if (eht_cu.cuDeviceGetAttribute(&id, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev) == CUDA_SUCCESS && id >= 0)
		return id;
	/* Older drivers: the PCI device's node as sysfs knows it. */
	int dom = 0, bus = 0, slot = 0;
	eht_cu.cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
	eht_cu.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
	eht_cu.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
	char path[128];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.0/numa_node", dom, bus, slot);
	if (sysfs_int(path, &id) == 0 && id >= 0)
		return id;
	return 0;
}

#define MAX_DEV 64
struct cached {
	int state; /* 0 unknown, 1 yes, 2 no */
	char why[192];
};
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cached fabric_cache[MAX_DEV], posix_cache[MAX_DEV];

static int try_export(int device, CUmemAllocationHandleType type, char *why, size_t len)
{
	int rc = eht_cu_use_device(device);
	if (rc)
		return rc;
	CUdevice dev;
	rc = EHT_CU_CHECK(cuDeviceGet(&dev, device));
	if (rc)
		return rc;
	int vmm = 0;
	if (eht_cu.cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
					dev) != CUDA_SUCCESS || !vmm) {
		snprintf(why, len, "unsupported here: GPU %d has no host-NUMA virtual memory management", device);
		return 0;
	}
	int numa = eht_cu_host_numa_id(device);
	if (numa < 0)
		return numa;
	CUmemAllocationProp prop;
	eht_host_numa_prop(&prop, numa, type);
	size_t gran = 0;
	rc = EHT_CU_CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	if (rc) {
		snprintf(why, len, "unsupported here: %s", eht_last_error());
		return 0;
	}
	CUmemGenericAllocationHandle h = 0;
	rc = EHT_CU_CHECK(cuMemCreate(&h, gran, &prop, 0));
	if (rc) {
		snprintf(why, len, "unsupported here: %s", eht_last_error());
		return 0;
	}
	CUmemFabricHandle fh;
	int fd = -1;
	void *out = type == CU_MEM_HANDLE_TYPE_FABRIC ? (void *)&fh : (void *)&fd;
	rc = EHT_CU_CHECK(cuMemExportToShareableHandle(out, h, type, 0));
	if (rc)
		snprintf(why, len, "unsupported here: %s", eht_last_error());
	if (fd >= 0)
		close(fd);
	int rrc = EHT_CU_CHECK(cuMemRelease(h));
	if (rrc)
		eht_warn("probe: %s", eht_last_error());
	return rc ? 0 : 1;
}

int eht_cu_export_supported(int device, CUmemAllocationHandleType type, char *why, size_t why_len)
{
	if (type != CU_MEM_HANDLE_TYPE_FABRIC && type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return eht_err(EINVAL, "export probe: handle type 0x%x", (unsigned)type);
	int rc = eht_cu_load();
	if (rc)
		return rc;
	if (device < 0 || device >= MAX_DEV || device >= eht_cu_device_count())
		return eht_err(ENODEV, "export probe: no CUDA device %d", device);
	struct cached *c = type == CU_MEM_HANDLE_TYPE_FABRIC ? &fabric_cache[device] : &posix_cache[device];
	pthread_mutex_lock(&cache_lock);
	if (c->state == 0) {
		char msg[192] = "";
		rc = try_export(device, type, msg, sizeof(msg));
		if (rc >= 0) {
			c->state = rc ? 1 : 2;
			snprintf(c->why, sizeof(c->why), "%s", msg);
			if (!rc)
				eht_info("GPU %d: host-NUMA %s handles %s", device,
					 type == CU_MEM_HANDLE_TYPE_FABRIC ? "FABRIC" : "POSIX-fd", msg);
		}
	}
	int state = c->state;
	if (why && why_len)
		snprintf(why, why_len, "%s", c->why);
	pthread_mutex_unlock(&cache_lock);
	if (rc < 0)
		return rc;
	return state == 1;
}
