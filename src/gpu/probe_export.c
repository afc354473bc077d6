/* SPDX-License-Identifier: Apache-2.0 */
/* probe_export.c: can host-NUMA memory be exported as FABRIC or POSIX-fd handles here? Asked the
 * only reliable way, by a one-granule allocation and export, and remembered per device. */
#include "gpu/probe.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "eht.h"
#include "util/err.h"
#include "util/log.h"

static int sysfs_int(const char *path, int *out)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	int ok = fscanf(f, "%d", out) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

int eht_dev_host_numa_id(int device)
{
	int id = -1;
	int rc = eht_dev_attr(device, EHT_DEV_ATTR_HOST_NUMA_ID, &id);
	if (rc == -ENODEV)
		return rc;
	eht_err_clear();
	if (!rc && id >= 0)
		return id;
	/* Older drivers: the PCI device's node as sysfs knows it. */
	int dom = 0, bus = 0, slot = 0;
	eht_dev_attr(device, EHT_DEV_ATTR_PCI_DOMAIN, &dom);
	eht_dev_attr(device, EHT_DEV_ATTR_PCI_BUS, &bus);
	eht_dev_attr(device, EHT_DEV_ATTR_PCI_DEVICE, &slot);
	eht_err_clear();
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

static int try_export(int device, enum eht_vmm_kind kind, char *why, size_t len)
{
	int rc = eht_dev_use(device);
	if (rc)
		return rc;
	int vmm = 0;
	if (eht_dev_attr(device, EHT_DEV_ATTR_HOST_NUMA_VMM, &vmm) != 0 || !vmm) {
		eht_err_clear();
		snprintf(why, len, "unsupported here: GPU %d has no host-NUMA virtual memory management", device);
		return 0;
	}
	int numa = eht_dev_host_numa_id(device);
	if (numa < 0)
		return numa;
	size_t gran = 0;
	rc = eht_vmm_granularity(numa, kind, &gran);
	if (rc) {
		snprintf(why, len, "unsupported here: %s", eht_last_error());
		return 0;
	}
	eht_vmm_mem h = 0;
	rc = eht_vmm_create(&h, gran, numa, kind);
	if (rc) {
		snprintf(why, len, "unsupported here: %s", eht_last_error());
		return 0;
	}
	struct eht_vmm_fabric fh;
	int fd = -1;
	void *out = kind == EHT_VMM_FABRIC ? (void *)&fh : (void *)&fd;
	rc = eht_vmm_export(out, h, kind);
	if (rc)
		snprintf(why, len, "unsupported here: %s", eht_last_error());
	if (fd >= 0)
		close(fd);
	int rrc = eht_vmm_release(h);
	if (rrc)
		eht_warn("probe: %s", eht_last_error());
	return rc ? 0 : 1;
}

int eht_vmm_export_supported(int device, enum eht_vmm_kind type, char *why, size_t why_len)
{
	if (type != EHT_VMM_FABRIC && type != EHT_VMM_FD)
		return eht_err(EINVAL, "export probe: handle type 0x%x", (unsigned)type);
	int rc = eht_dev_load();
	if (rc)
		return rc;
	if (device < 0 || device >= MAX_DEV || device >= eht_dev_count())
		return eht_err(ENODEV, "export probe: no CUDA device %d", device);
	struct cached *c = type == EHT_VMM_FABRIC ? &fabric_cache[device] : &posix_cache[device];
	pthread_mutex_lock(&cache_lock);
	if (c->state == 0) {
		char msg[192] = "";
		rc = try_export(device, type, msg, sizeof(msg));
		if (rc >= 0) {
			c->state = rc ? 1 : 2;
			snprintf(c->why, sizeof(c->why), "%s", msg);
			if (!rc)
				eht_info("GPU %d: host-NUMA %s handles %s", device,
					 type == EHT_VMM_FABRIC ? "FABRIC" : "POSIX-fd", msg);
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
