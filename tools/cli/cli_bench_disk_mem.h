/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_disk_mem.h: `eht bench disk --mem-limit G`, the disk tier under a memory limit. */
#ifndef EHT_CLI_BENCH_DISK_MEM_H
#define EHT_CLI_BENCH_DISK_MEM_H

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

/* Runs the steps under a memory limit (a cgroup, a transient scope, or none, saying why) and prints
 * the steady state. Returns 0 or 1 (message printed), or the exit status of the run re-made inside a
 * transient scope. */
int bench_disk_mem(const struct bench_disk_mem_args *a);

#endif
