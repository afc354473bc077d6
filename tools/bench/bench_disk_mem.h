/* SPDX-License-Identifier: Apache-2.0 */
/* bench_disk_mem.h: `eht bench disk --mem-limit G`, the disk tier under a memory limit. */
#ifndef EHT_BENCH_DISK_MEM_H
#define EHT_BENCH_DISK_MEM_H

#include <stddef.h>
#include <stdint.h>

struct bench_disk_mem_args {
	const char *path;     /* the bench file (written by `eht bench disk`) */
	uint64_t rows;
	double mem_limit_gib; /* the cgroup's limit */
	const char *workload; /* "uniform" or "text:FILE" */
	size_t ids;           /* ids a step */
	int steps;
	unsigned threads;
	int no_cache, json;
	int gpu, device;      /* gather into this GPU's memory (HOST strategy) when gpu */
	size_t hotset;        /* GPU hot rows learned from the workload's other half (0: none) */
};

/* Refuses a --mem-limit that cannot work: not finite, above 2^30 GiB, or below the bench's own
 * working set (the process and its threads, the hot-row cache, the step's buffers, the hot set, a
 * GPU context): a message and 2, before anything is made; else 0. */
int bench_disk_mem_refuse(double gib, size_t ids, size_t hotset, int gpu, int no_cache);

/* Runs the steps under a memory limit (a cgroup, a transient scope, or none, saying why) and prints
 * the steady state. Returns 0 or 1 (message printed), or the exit status of the run re-made inside a
 * transient scope. */
int bench_disk_mem(const struct bench_disk_mem_args *a);

#endif
