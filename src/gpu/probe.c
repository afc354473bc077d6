/* SPDX-License-Identifier: Apache-2.0 */
/* probe.c: eht_probe (backend-neutral, on gpu/dev.h): GPUs, host-NUMA and handle support, NUMA nodes, /dev/shm, THP, hugetlb, PCIe. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "gpu/dev.h"
#include "gpu/probe.h"
#include "os/numa.h"
#include "eht.h"
#include "util/err.h"

#define IMEX_DIR "/dev/nvidia-caps-imex-channels"

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char *ok = fgets(buf, (int)len, f);
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* "always [madvise] never" -> "madvise". */
static void thp_mode(const char *path, char *out, size_t len)
{
	char buf[256];
	out[0] = '\0';
	if (read_line(path, buf, sizeof(buf)))
		return;
	char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;
	if (a && b)
		snprintf(out, len, "%.*s", (int)(b - a - 1), a + 1);
	else
		snprintf(out, len, "%.*s", (int)len - 1, buf);
}

static void probe_hugetlb(struct eht_probe *p)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		if (sscanf(line, "HugePages_Total: %llu", &v) == 1)
			p->hugepages_total = v;
		else if (sscanf(line, "HugePages_Free: %llu", &v) == 1)
			p->hugepages_free = v;
		else if (sscanf(line, "Hugepagesize: %llu", &v) == 1)
			p->hugepage_size = v * 1024ull;
	}
	fclose(f);
}

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int pcie_gen_of(const char *speed)
{
	double gts = atof(speed);
	if (gts <= 0)
		return 0;
	static const double steps[] = {2.5, 5, 8, 16, 32, 64, 128};
	for (int i = 0; i < 7; i++)
		if (gts < steps[i] * 1.25)
			return i + 1;
	return 7;
}

static void probe_device(struct eht_probe_device *d, int ordinal)
{
	d->ordinal = ordinal;
	d->host_numa_id = d->host_numa_vmm = d->fabric_attr = d->posix_fd_attr = -1;
	if (eht_dev_name(ordinal, d->name, sizeof(d->name)) != 0)
		d->name[0] = '\0';
	int v = 0;
#define ATTR(a, field) (eht_dev_attr(ordinal, a, &v) == 0 ? (field = v, 1) : 0)
	ATTR(EHT_DEV_ATTR_CC_MAJOR, d->cc_major);
	ATTR(EHT_DEV_ATTR_CC_MINOR, d->cc_minor);
	ATTR(EHT_DEV_ATTR_SM_COUNT, d->sm_count);
	ATTR(EHT_DEV_ATTR_HOST_NUMA_VMM, d->host_numa_vmm);
	ATTR(EHT_DEV_ATTR_FABRIC_HANDLES, d->fabric_attr);
	ATTR(EHT_DEV_ATTR_FD_HANDLES, d->posix_fd_attr);
	int dom = 0, bus = 0, slot = 0;
	ATTR(EHT_DEV_ATTR_PCI_DOMAIN, dom);
	ATTR(EHT_DEV_ATTR_PCI_BUS, bus);
	ATTR(EHT_DEV_ATTR_PCI_DEVICE, slot);
#undef ATTR
	size_t mem = 0;
	if (eht_dev_total_mem(ordinal, &mem) == 0)
		d->total_mem = mem;
	/* sysfs spells the address in lower case with a 4-digit domain. */
	snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%04x:%02x:%02x.0", dom & 0xffff, bus & 0xff, slot & 0xff);
	int numa = eht_dev_host_numa_id(ordinal);
	d->host_numa_id = numa >= 0 ? numa : -1;

	char path[160], buf[64];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/current_link_speed", d->pci_bus_id);
	if (read_line(path, buf, sizeof(buf)) == 0) {
		snprintf(d->pcie_speed, sizeof(d->pcie_speed), "%.*s", (int)sizeof(d->pcie_speed) - 1, buf);
		d->pcie_gen = pcie_gen_of(buf);
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/current_link_width", d->pci_bus_id);
	if (read_line(path, buf, sizeof(buf)) == 0)
		d->pcie_width = atoi(buf);

	/* Host-NUMA granularity and real export attempts (cached per process). */
	if (d->host_numa_vmm == 1 && d->host_numa_id >= 0 && eht_dev_use(ordinal) == 0) {
		size_t g = 0;
		if (eht_vmm_granularity(d->host_numa_id, EHT_VMM_FD, &g) == 0)
			d->granularity = g;
	}
	int r = eht_vmm_export_supported(ordinal, EHT_VMM_FABRIC, d->fabric_why, sizeof(d->fabric_why));
	d->fabric_export = r < 0 ? EHT_EXPORT_UNKNOWN : r ? EHT_EXPORT_OK : EHT_EXPORT_UNSUPPORTED;
	if (r < 0)
		snprintf(d->fabric_why, sizeof(d->fabric_why), "%s", eht_last_error());
	r = eht_vmm_export_supported(ordinal, EHT_VMM_FD, d->posix_fd_why,
				    sizeof(d->posix_fd_why));
	d->posix_fd_export = r < 0 ? EHT_EXPORT_UNKNOWN : r ? EHT_EXPORT_OK : EHT_EXPORT_UNSUPPORTED;
	if (r < 0)
		snprintf(d->posix_fd_why, sizeof(d->posix_fd_why), "%s", eht_last_error());
}

int eht_probe(struct eht_probe **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_probe: NULL out");
	*out = NULL;
	struct eht_probe *p = calloc(1, sizeof(*p));
	if (!p)
		return eht_err(ENOMEM, "probe: out of memory");
	p->size = sizeof(*p);

	int n = eht_dev_count(), ver = 0;
	if (n > 0) {
		if (eht_dev_driver_version(&ver) == 0)
			p->driver_version = ver;
		p->devices = calloc((size_t)n, sizeof(*p->devices));
		if (!p->devices)
			goto nomem;
		p->ndevices = n;
		for (int i = 0; i < n; i++)
			probe_device(&p->devices[i], i);
	} else {
		eht_dev_load();
		snprintf(p->gpu_status, sizeof(p->gpu_status), "%s",
			 eht_last_error()[0] ? eht_last_error() : "no CUDA device");
		if (eht_dev_driver_version(&ver) == 0)
			p->driver_version = ver;
	}
	eht_err_clear();

	p->imex_channels = count_dir(IMEX_DIR);

	int nodes[1024];
	int nn = eht_numa_nodes(nodes, 1024);
	p->numa = calloc((size_t)nn, sizeof(*p->numa));
	if (!p->numa)
		goto nomem;
	for (int i = 0; i < nn; i++) {
		struct eht_probe_numa *m = &p->numa[p->nnuma];
		m->node = nodes[i];
		if (eht_numa_node_mem(nodes[i], &m->total, &m->free, &m->available) == 0)
			p->nnuma++;
	}
	eht_err_clear();

	snprintf(p->shm_path, sizeof(p->shm_path), "/dev/shm");
	struct statvfs vfs;
	if (statvfs(p->shm_path, &vfs) == 0) {
		p->shm_total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
		p->shm_free = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	}
	thp_mode("/sys/kernel/mm/transparent_hugepage/enabled", p->thp_enabled, sizeof(p->thp_enabled));
	thp_mode("/sys/kernel/mm/transparent_hugepage/shmem_enabled", p->thp_shmem_enabled,
		 sizeof(p->thp_shmem_enabled));
	probe_hugetlb(p);
	*out = p;
	return 0;
nomem:
	eht_probe_free(p);
	return eht_err(ENOMEM, "probe: out of memory");
}

void eht_probe_free(struct eht_probe *p)
{
	if (!p)
		return;
	free(p->devices);
	free(p->numa);
	free(p);
}

static const char *export_name(int s)
{
	return s == EHT_EXPORT_OK ? "yes" : s == EHT_EXPORT_UNSUPPORTED ? "no" : "unknown";
}

/* Adds key = value, tracking allocation failure in *bad (jansson returns -1 on failure). */
static void put(json_t *o, const char *k, json_t *v, int *bad)
{
	if (!v || json_object_set_new(o, k, v))
		*bad = 1;
}

int eht_probe_json(char **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_probe_json: NULL out");
	*out = NULL;
	struct eht_probe *p = NULL;
	int rc = eht_probe(&p);
	if (rc)
		return rc;
	int bad = 0;
	json_t *root = json_object(), *devs = json_array(), *numa = json_array();
	if (!root || !devs || !numa) {
		json_decref(root);
		json_decref(devs);
		json_decref(numa);
		eht_probe_free(p);
		return eht_err(ENOMEM, "probe: out of memory");
	}
	put(root, "driver_version", json_integer(p->driver_version), &bad);
	put(root, "gpu_status", json_string(p->gpu_status), &bad);
	for (int i = 0; i < p->ndevices; i++) {
		const struct eht_probe_device *d = &p->devices[i];
		json_t *o = json_object();
		if (!o) {
			bad = 1;
			break;
		}
		put(o, "ordinal", json_integer(d->ordinal), &bad);
		put(o, "name", json_string(d->name), &bad);
		char cc[16];
		snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
		put(o, "compute_capability", json_string(cc), &bad);
		put(o, "sm_count", json_integer(d->sm_count), &bad);
		put(o, "total_mem", json_integer((json_int_t)d->total_mem), &bad);
		put(o, "pci_bus_id", json_string(d->pci_bus_id), &bad);
		put(o, "host_numa_id", json_integer(d->host_numa_id), &bad);
		put(o, "host_numa_vmm", json_integer(d->host_numa_vmm), &bad);
		put(o, "fabric_attr", json_integer(d->fabric_attr), &bad);
		put(o, "posix_fd_attr", json_integer(d->posix_fd_attr), &bad);
		put(o, "granularity", json_integer((json_int_t)d->granularity), &bad);
		put(o, "fabric_export", json_string(export_name(d->fabric_export)), &bad);
		put(o, "fabric_why", json_string(d->fabric_why), &bad);
		put(o, "posix_fd_export", json_string(export_name(d->posix_fd_export)), &bad);
		put(o, "posix_fd_why", json_string(d->posix_fd_why), &bad);
		put(o, "pcie_speed", json_string(d->pcie_speed), &bad);
		put(o, "pcie_gen", json_integer(d->pcie_gen), &bad);
		put(o, "pcie_width", json_integer(d->pcie_width), &bad);
		if (json_array_append_new(devs, o))
			bad = 1;
	}
	put(root, "devices", devs, &bad);
	put(root, "imex_channels", json_integer(p->imex_channels), &bad);
	for (int i = 0; i < p->nnuma; i++) {
		json_t *o = json_object();
		if (!o) {
			bad = 1;
			break;
		}
		put(o, "node", json_integer(p->numa[i].node), &bad);
		put(o, "total", json_integer((json_int_t)p->numa[i].total), &bad);
		put(o, "free", json_integer((json_int_t)p->numa[i].free), &bad);
		put(o, "available", json_integer((json_int_t)p->numa[i].available), &bad);
		if (json_array_append_new(numa, o))
			bad = 1;
	}
	put(root, "numa_nodes", numa, &bad);
	json_t *shm = json_object();
	if (shm) {
		put(shm, "path", json_string(p->shm_path), &bad);
		put(shm, "total", json_integer((json_int_t)p->shm_total), &bad);
		put(shm, "free", json_integer((json_int_t)p->shm_free), &bad);
	}
	put(root, "shm", shm, &bad);
	json_t *thp = json_object();
	if (thp) {
		put(thp, "enabled", json_string(p->thp_enabled), &bad);
		put(thp, "shmem_enabled", json_string(p->thp_shmem_enabled), &bad);
	}
	put(root, "thp", thp, &bad);
	json_t *huge = json_object();
	if (huge) {
		put(huge, "total", json_integer((json_int_t)p->hugepages_total), &bad);
		put(huge, "free", json_integer((json_int_t)p->hugepages_free), &bad);
		put(huge, "page_size", json_integer((json_int_t)p->hugepage_size), &bad);
	}
	put(root, "hugetlb", huge, &bad);
	eht_probe_free(p);
	char *s = bad ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!s)
		return eht_err(ENOMEM, "probe: out of memory building JSON");
	*out = s;
	return 0;
}
