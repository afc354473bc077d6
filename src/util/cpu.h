/* SPDX-License-Identifier: Apache-2.0 */
/* cpu.h: the pause hint for spin-wait loops, and the CPUs this process may use (cpu.c). */
#ifndef EHT_UTIL_CPU_H
#define EHT_UTIL_CPU_H

#include <sched.h>

/* Tells the core this is a spin loop: saves power and frees the sibling hyperthread. */
static inline void eht_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Default thread counts: the CPUs of within (NULL: all) that this process's affinity mask allows
 * (taskset, Slurm, a Kubernetes cpuset), at most its cgroup's CPU quota rounded up (cgroup v2
 * cpu.max or v1 cpu.cfs_quota_us, the smallest of its cgroup and their ancestors). At least 1. */
unsigned eht_cpu_usable(const cpu_set_t *within);
/* The affinity mask (every online CPU when it cannot be read). */
void eht_cpu_allowed(cpu_set_t *set);
/* set &= the affinity mask (binding threads to CPUs outside it fails); returns what is left. */
unsigned eht_cpu_restrict(cpu_set_t *set);
/* The CPUs of NUMA node (/sys/devices/system/node/nodeN/cpulist). 0 or -errno. */
int eht_cpu_node_set(int node, cpu_set_t *set);
/* The CPU quota of the process whose cgroup file (/proc/self/cgroup) is proc_cgroup, under the
 * cgroup mount root (/sys/fs/cgroup): 0 and *cpus (1.5 for "150000 100000"), or -ENOENT when no
 * quota applies. (Paths as arguments: the tests give a made-up hierarchy.) */
int eht_cpu_quota_from(const char *proc_cgroup, const char *root, double *cpus);

#endif
