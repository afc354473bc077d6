/* SPDX-License-Identifier: Apache-2.0 */
/* probe_sys.c: NUMA node memory from sysfs (with /proc/meminfo as the one-node fallback). */
#include "cuda/probe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"

#define NODE_DIR "/sys/devices/system/node"

/* Reads "Key: value kB" lines; keys are matched after an optional "Node N " prefix. */
static int meminfo(const char *path, const char *const *keys, uint64_t *vals, int nkeys)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	char line[256];
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		if (!strncmp(p, "Node ", 5)) {
			p += 5;
			while (*p && *p != ' ')
				p++;
			while (*p == ' ')
				p++;
		}
		for (int i = 0; i < nkeys; i++) {
			size_t kl = strlen(keys[i]);
			if (!strncmp(p, keys[i], kl) && p[kl] == ':') {
				unsigned long long v = strtoull(p + kl + 1, NULL, 10);
				vals[i] = strstr(p + kl, "kB") ? v * 1024ull : v;
				found++;
			}
		}
	}
	fclose(f);
	return found;
}

int eht_probe_numa_nodes(int *nodes, int max)
{
	FILE *f = fopen(NODE_DIR "/online", "r");
	int n = 0;
	if (f) {
		char buf[1024];
		if (fgets(buf, sizeof(buf), f)) {
			/* "0-3,5,7-8" */
			for (char *tok = strtok(buf, ",\n"); tok && n < max; tok = strtok(NULL, ",\n")) {
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

int eht_probe_numa_mem(int node, uint64_t *total, uint64_t *free_bytes, uint64_t *available)
{
	if (node < 0)
		return eht_err(EINVAL, "NUMA node %d", node);
	int nodes[1024];
	int n = eht_probe_numa_nodes(nodes, 1024);
	char path[128];
	snprintf(path, sizeof(path), NODE_DIR "/node%d/meminfo", node);
	uint64_t v[5] = {0};
	/* One node: the kernel's own MemAvailable estimate is the best there is. */
	if (n == 1 || access(path, R_OK) != 0) {
		if (node != nodes[0] && n > 1)
			return eht_err(ENOENT, "NUMA node %d: %s unreadable", node, path);
		if (n == 1 && node != nodes[0])
			return eht_err(ENOENT, "NUMA node %d does not exist (this machine has node %d only)", node,
				       nodes[0]);
		static const char *const k[] = {"MemTotal", "MemFree", "MemAvailable"};
		int rc = meminfo("/proc/meminfo", k, v, 3);
		if (rc < 3)
			return eht_err(rc < 0 ? rc : -EIO, "reading /proc/meminfo");
		*total = v[0];
		*free_bytes = v[1];
		*available = v[2];
		return 0;
	}
	static const char *const k[] = {"MemTotal", "MemFree", "Inactive(file)", "SReclaimable", "FilePages"};
	int rc = meminfo(path, k, v, 5);
	if (rc < 2)
		return eht_err(rc < 0 ? rc : -EIO, "reading %s", path);
	*total = v[0];
	*free_bytes = v[1];
	*available = v[1] + v[2] + v[3];
	return 0;
}
