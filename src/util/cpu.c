/* SPDX-License-Identifier: Apache-2.0 */
/* cpu.c: how many CPUs this process may really use, for default thread counts: its affinity mask
 * (taskset, Slurm, a Kubernetes cpuset) and its cgroup's CPU quota (cpu.max, cfs_quota_us), not the
 * machine's online count. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cpu.h"

void eht_cpu_allowed(cpu_set_t *set)
{
	if (sched_getaffinity(0, sizeof(*set), set) == 0 && CPU_COUNT(set) > 0)
		return;
	CPU_ZERO(set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	for (long c = 0; c < (n > 0 ? n : 1) && c < CPU_SETSIZE; c++)
		CPU_SET((int)c, set);
}

unsigned eht_cpu_restrict(cpu_set_t *set)
{
	cpu_set_t allowed;
	eht_cpu_allowed(&allowed);
	CPU_AND(set, set, &allowed);
	return (unsigned)CPU_COUNT(set);
}

static int read_text(const char *path, char *buf, size_t cap)
{
	buf[0] = '\0'; /* empty on every path */
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	return 0;
}

/* The quota in CPUs of one cgroup folder, or 0 when it sets none (or cannot be read). */
static double quota_at(const char *dir, int v2)
{
	char path[8800], buf[128];
	if (v2) {
		snprintf(path, sizeof(path), "%s/cpu.max", dir);
		if (read_text(path, buf, sizeof(buf)))
			return 0;
		char *end;
		double q = strtod(buf, &end); /* "max 100000": no number, no quota */
		double period = end != buf ? strtod(end, NULL) : 0;
		return end != buf && q > 0 && period > 0 ? q / period : 0;
	}
	snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
	if (read_text(path, buf, sizeof(buf)))
		return 0;
	double q = strtod(buf, NULL); /* -1: none */
	snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
	if (q <= 0 || read_text(path, buf, sizeof(buf)))
		return 0;
	double period = strtod(buf, NULL);
	return period > 0 ? q / period : 0;
}

/* The smallest quota of dir and its ancestors up to root (a parent's limit binds its children). */
static double quota_up(const char *root, const char *cgpath, int v2)
{
	char dir[8700];
	double best = 0;
	snprintf(dir, sizeof(dir), "%s%s", root, cgpath);
	size_t rootlen = strlen(root);
	for (;;) {
		double q = quota_at(dir, v2);
		if (q > 0 && (best == 0 || q < best))
			best = q;
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < rootlen)
			break;
		*slash = '\0';
	}
	return best;
}

int eht_cpu_quota_from(const char *proc_cgroup, const char *root, double *cpus)
{
	char buf[8192];
	*cpus = 0;
	int rc = read_text(proc_cgroup, buf, sizeof(buf));
	if (rc)
		return rc;
	double best = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* "0::/path" (v2) or "4:cpu,cpuacct:/path" (v1) */
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1, *path = c2 + 1;
		char base[4200];
		int v2 = *ctrls == '\0';
		if (v2) {
			snprintf(base, sizeof(base), "%s", root);
		} else {
			/* the cpu controller's hierarchy: mounted as cpu,cpuacct (or cpu) */
			char list[256];
			snprintf(list, sizeof(list), ",%s,", ctrls);
			if (!strstr(list, ",cpu,"))
				continue;
			snprintf(base, sizeof(base), "%s/%s", root, ctrls);
			if (access(base, F_OK) != 0)
				snprintf(base, sizeof(base), "%s/cpu", root);
		}
		if (!strcmp(path, "/"))
			path = "";
		/* A container without its own cgroup namespace sees the host's path, which does not exist
		 * under its mount: then the mount's root is its cgroup. */
		char dir[8600];
		snprintf(dir, sizeof(dir), "%s%s", base, path);
		double q = access(dir, F_OK) == 0 ? quota_up(base, path, v2) : quota_at(base, v2);
		if (q > 0 && (best == 0 || q < best))
			best = q;
	}
	if (best <= 0)
		return -ENOENT;
	*cpus = best;
	return 0;
}

unsigned eht_cpu_usable(const cpu_set_t *within)
{
	cpu_set_t set;
	if (within) {
		set = *within;
		eht_cpu_restrict(&set);
	} else {
		eht_cpu_allowed(&set);
	}
	unsigned n = (unsigned)CPU_COUNT(&set);
	double quota = 0;
	if (eht_cpu_quota_from("/proc/self/cgroup", "/sys/fs/cgroup", &quota) == 0) {
		double whole = ceil(quota); /* 1.5 CPUs of time: 2 threads, each busy 3/4 of it */
		if (whole >= 1 && whole < n)
			n = (unsigned)whole;
	}
	return n ? n : 1;
}

int eht_cpu_node_set(int node, cpu_set_t *set)
{
	char path[96], buf[4096];
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	int rc = read_text(path, buf, sizeof(buf));
	if (rc)
		return rc;
	CPU_ZERO(set);
	char *s = buf;
	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;
		if (end == s)
			return -EINVAL;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && c < CPU_SETSIZE; c++)
			CPU_SET((int)c, set);
		s = (*end == ',') ? end + 1 : end;
	}
	return CPU_COUNT(set) ? 0 : -ENOENT;
}
