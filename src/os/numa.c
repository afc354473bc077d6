/* SPDX-License-Identifier: Apache-2.0 */
/* numa.c: mbind/get_mempolicy via syscall(2), node memory from sysfs (the one reader: the probe, the
 * host-NUMA reserve and the region's capacity check all mean the same "available"), the local node
 * via getcpu. */
#include "os/numa.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/err.h"

#define NODE_SYSFS "/sys/devices/system/node"
/* From <linux/mempolicy.h>, spelled out so no kernel header is needed. */
enum { MPOL_PREFERRED_ = 1, MPOL_BIND_ = 2 };
enum { MPOL_F_NODE_ = 1 << 0, MPOL_F_ADDR_ = 1 << 1 };

int eht_numa_node_count(void)
{
	DIR *d = opendir(NODE_SYSFS);
	if (!d)
		return 1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		if (strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] &&
		    (strtol(e->d_name + 4, &end, 10), *end == '\0'))
			n++;
	}
	closedir(d);
	return n > 0 ? n : 1;
}

bool eht_numa_node_exists(int node)
{
	if (node < 0 || node > 4095)
		return false;
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), NODE_SYSFS "/node%d", node);
	if (stat(path, &st) == 0)
		return true;
	return node == 0 && stat(NODE_SYSFS, &st) != 0;
}

int eht_numa_local_node(void)
{
	unsigned cpu = 0, node = 0;
	if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0)
		return 0;
	return (int)node;
}

/* Reads "Key: value kB" lines; prefix is "Node N " for node files, "" for /proc/meminfo. */
static int meminfo_read(const char *path, const char *prefix, const char *const *keys, uint64_t *vals,
			int nkeys)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[256];
	size_t plen = strlen(prefix);
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, prefix, plen) != 0)
			continue;
		char *k = line + plen;
		for (int i = 0; i < nkeys; i++) {
			size_t kl = strlen(keys[i]);
			if (strncmp(k, keys[i], kl) == 0 && k[kl] == ':') {
				vals[i] = strtoull(k + kl + 1, NULL, 10) * 1024;
				found++;
			}
		}
	}
	fclose(f);
	return found ? 0 : -ENODATA;
}

int eht_numa_nodes(int *nodes, int max)
{
	FILE *f = fopen(NODE_SYSFS "/online", "re");
	int n = 0;
	if (f) {
		char buf[1024];
		if (fgets(buf, sizeof(buf), f)) {
			/* "0-3,5,7-8" */
			char *save = NULL;
			for (char *tok = strtok_r(buf, ",\n", &save); tok && n < max; tok = strtok_r(NULL, ",\n", &save)) {
				int a, b;
				int k = sscanf(tok, "%d-%d", &a, &b);
				if (k == 1)
					b = a;
				if (k < 1)
					continue;
				for (int i = a; i <= b && n < max; i++)
					nodes[n++] = i;
			}
		}
		fclose(f);
	}
	if (n == 0 && max > 0)
		nodes[n++] = 0;
	return n;
}

int eht_numa_node_mem(int node, uint64_t *total, uint64_t *free_bytes, uint64_t *avail)
{
	if (node < 0)
		return eht_err(EINVAL, "NUMA node %d", node);
	int nodes[1024];
	int n = eht_numa_nodes(nodes, 1024);
	char path[96], prefix[32];
	snprintf(path, sizeof(path), NODE_SYSFS "/node%d/meminfo", node);
	uint64_t v[4] = {0};
	/* One node: the kernel's own MemAvailable estimate is the best there is. */
	if (n == 1 || access(path, R_OK) != 0) {
		if (node != nodes[0] && n > 1)
			return eht_err(ENOENT, "NUMA node %d: %s unreadable", node, path);
		if (n == 1 && node != nodes[0])
			return eht_err(ENOENT, "NUMA node %d does not exist (this machine has node %d only)", node,
				       nodes[0]);
		static const char *const k[] = {"MemTotal", "MemFree", "MemAvailable"};
		int rc = meminfo_read("/proc/meminfo", "", k, v, 3);
		if (rc)
			return eht_err(rc, "reading /proc/meminfo");
		*total = v[0];
		*free_bytes = v[1];
		*avail = v[2];
		return 0;
	}
	/* Several nodes: what the node can give without swapping is its free memory plus what the kernel
	 * drops first (inactive file pages, reclaimable slab); active file pages are not counted, they
	 * are in use and a pinned allocation that waits for them stalls. */
	snprintf(prefix, sizeof(prefix), "Node %d ", node);
	static const char *const k[] = {"MemTotal", "MemFree", "Inactive(file)", "SReclaimable"};
	int rc = meminfo_read(path, prefix, k, v, 4);
	if (rc)
		return eht_err(rc, "reading %s", path);
	*total = v[0];
	*free_bytes = v[1];
	*avail = v[1] + v[2] + v[3];
	return 0;
}

uint64_t eht_mem_available(void)
{
	static const char *const keys[] = {"MemAvailable"};
	uint64_t v = 0;
	if (meminfo_read("/proc/meminfo", "", keys, &v, 1) != 0)
		return 0;
	return v;
}

int eht_numa_bind(void *addr, size_t len, int node, bool strict)
{
	if (node < 0 || node >= 4096)
		return -EINVAL;
	unsigned long mask[4096 / (8 * sizeof(unsigned long))] = {0};
	mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
	/* maxnode counts bits; the kernel wants one more than the highest node. */
	long r = syscall(SYS_mbind, addr, len, strict ? MPOL_BIND_ : MPOL_PREFERRED_, mask,
			 (unsigned long)node + 2, 0ul);
	return r == 0 ? 0 : -errno;
}

int eht_numa_node_of(const void *addr)
{
	int node = -1;
	long r = syscall(SYS_get_mempolicy, &node, NULL, 0ul, addr, (unsigned long)(MPOL_F_NODE_ | MPOL_F_ADDR_));
	return r == 0 ? node : -1;
}
