/* SPDX-License-Identifier: Apache-2.0 */
/* test_cpu_usable.c: default thread counts follow what the process may use: the cgroup CPU quota
 * (v2 cpu.max, v1 cfs_quota_us; the smallest of the cgroup and its ancestors; a container's own
 * mount), read from made-up hierarchies, and the affinity mask (a pool made with 0 threads in a
 * process bound to one CPU has one thread, bound to the node's CPUs it may run on). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "util/cpu.h"
#include "util/pool.h"

static char tmp[512];

static void put(const char *rel, const char *text)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", tmp, rel);
	/* mkdir -p of the parent */
	for (char *s = p + strlen(tmp) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0700);
		*s = '/';
	}
	CHECK_RC(t_write_file(p, text, strlen(text)), 0);
}

static double quota(const char *proc_cgroup_text, const char *root_rel, int *rc)
{
	char pc[1024], root[1024];
	static int n;
	char name[64];
	snprintf(name, sizeof(name), "proc%d", n++);
	put(name, proc_cgroup_text);
	snprintf(pc, sizeof(pc), "%s/%s", tmp, name);
	snprintf(root, sizeof(root), "%s/%s", tmp, root_rel);
	double q = -1;
	*rc = eht_cpu_quota_from(pc, root, &q);
	return q;
}

static void check_quota(int line, const char *proc, const char *root, int want_rc, double want)
{
	int rc;
	double q = quota(proc, root, &rc);
	if (rc != want_rc || (rc == 0 && (q < want - 1e-9 || q > want + 1e-9))) {
		fprintf(stderr, "line %d: %s under %s: rc %d quota %g (want rc %d, %g)\n", line, proc, root, rc, q,
			want_rc, want);
		t_failures++;
	}
}
#define QUOTA(proc, root, rc, want) check_quota(__LINE__, proc, root, rc, want)

int main(void)
{
	char *dir = t_tmpdir("cpu-usable");
	snprintf(tmp, sizeof(tmp), "%s", dir);

	/* v2: a pod's 2 CPUs bind its container, which says max */
	put("a/kubepods/cpu.max", "max 100000\n");
	put("a/kubepods/pod1/cpu.max", "200000 100000\n");
	put("a/kubepods/pod1/ctr/cpu.max", "max 100000\n");
	QUOTA("0::/kubepods/pod1/ctr\n", "a", 0, 2.0);
	/* the container's own, smaller quota wins */
	put("b/kubepods/pod1/cpu.max", "200000 100000\n");
	put("b/kubepods/pod1/ctr/cpu.max", "150000 100000\n");
	QUOTA("0::/kubepods/pod1/ctr\n", "b", 0, 1.5);
	/* no quota anywhere */
	put("c/user.slice/cpu.max", "max 100000\n");
	QUOTA("0::/user.slice\n", "c", -ENOENT, 0);
	/* inside a container with its cgroup namespace: "/" is the container's cgroup, the mount's root */
	put("d/cpu.max", "50000 100000\n");
	QUOTA("0::/\n", "d", 0, 0.5);
	/* without one: the host's path is not under the mount; the mount's root is the container */
	QUOTA("0::/system.slice/docker-abc.scope\n", "d", 0, 0.5);
	/* v1: the cpu,cpuacct hierarchy; -1 is no quota */
	put("e/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n");
	put("e/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
	QUOTA("12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n", "e", 0, 3.0);
	put("f/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
	put("f/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
	QUOTA("4:cpu,cpuacct:/docker/abc\n", "f", -ENOENT, 0);
	/* hybrid: v1 memory and the v2 unified hierarchy */
	put("g/app/cpu.max", "400000 100000\n");
	QUOTA("5:memory:/app\n0::/app\n", "g", 0, 4.0);

	/* The affinity mask: bound to one CPU, a default pool has one thread (it had one per online
	 * CPU), and eht_cpu_usable says 1. */
	cpu_set_t all, one;
	CHECK(sched_getaffinity(0, sizeof(all), &all) == 0);
	int first = -1;
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &all))
			first = c;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
	CHECK(eht_cpu_usable(NULL) == 1);
	eht_pool *p = NULL;
	CHECK_RC(eht_pool_create(0, -1, 0, &p), 0);
	CHECK(p && eht_pool_size(p) == 1);
	eht_pool_destroy(p);
	/* Bound to the node's CPUs that the mask allows: creating the threads does not fail. */
	cpu_set_t node0;
	if (eht_cpu_node_set(0, &node0) == 0 && CPU_ISSET(first, &node0)) {
		p = NULL;
		CHECK_RC(eht_pool_create(0, 0, 0, &p), 0);
		CHECK(p && eht_pool_size(p) == 1);
		eht_pool_destroy(p);
		p = NULL;
		CHECK_RC(eht_pool_create(3, 0, 0, &p), 0); /* explicit counts are kept */
		CHECK(p && eht_pool_size(p) == 3);
		eht_pool_destroy(p);
	}
	CHECK(sched_setaffinity(0, sizeof(all), &all) == 0);
	CHECK(eht_cpu_usable(NULL) >= 1);
	t_rmtree(dir);
	return t_done();
}
