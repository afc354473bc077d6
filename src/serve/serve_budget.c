/* SPDX-License-Identifier: Apache-2.0 */
/* serve_budget.c: one CPU budget for the node's lookup pools: the cores eht may use, shared by the
 * worker processes the server expects, handed to each at attach (struct serve_hello's JSON
 * "pool_threads"), so that 8 GPU processes do not start 8 pools each sized for the whole machine. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/dev.h"
#include "serve/serve_impl.h"
#include "util/env.h"
#include "util/err.h"

#define ENGINE_CORES_PER_WORKER 2 /* the worker's own thread and the one feeding its pool */

/* The cgroup v2 quota of this process's cgroup and its parents, in cores rounded up (0: none). */
static unsigned cgroup_cores(void)
{
	char line[4096], path[4352];
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return 0;
	char *rel = NULL;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) { /* the unified hierarchy */
			rel = line + 3;
			rel[strcspn(rel, "\n")] = '\0';
			break;
		}
	fclose(f);
	if (!rel)
		return 0;
	unsigned best = 0;
	for (;;) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max", strcmp(rel, "/") ? rel : "");
		FILE *m = fopen(path, "re");
		if (m) {
			char q[32] = "";
			unsigned long long period = 0;
			if (fscanf(m, "%31s %llu", q, &period) == 2 && strcmp(q, "max") && period) {
				unsigned long long quota = strtoull(q, NULL, 10);
				unsigned c = (unsigned)((quota + period - 1) / period);
				if (c && (!best || c < best))
					best = c;
			}
			fclose(m);
		}
		char *slash = strrchr(rel, '/');
		if (!slash || slash == rel)
			break;
		*slash = '\0';
	}
	return best;
}

unsigned serve_usable_cores(void)
{
	uint64_t forced = eht_env_u64("EHT_TEST_CORES", 0);
	if (forced)
		return forced > 65536 ? 65536 : (unsigned)forced;
	cpu_set_t set;
	unsigned n = 0;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = (unsigned)CPU_COUNT(&set);
	if (!n)
		n = 1;
	unsigned q = cgroup_cores();
	return q && q < n ? q : n;
}

void serve_budget_plan(unsigned cpu_budget, unsigned workers, struct serve_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->usable = serve_usable_cores();
	if (!workers) { /* one worker process per GPU */
		int g = eht_dev_count();
		workers = g > 0 ? (unsigned)g : 1;
		eht_err_clear();
	}
	b->workers = workers;
	if (cpu_budget) {
		b->cores = cpu_budget;
		b->source = "option";
	} else {
		unsigned engine = ENGINE_CORES_PER_WORKER * workers;
		b->cores = b->usable > engine ? b->usable - engine : 0;
		b->source = "cores";
	}
	b->per_worker = b->cores / workers ? b->cores / workers : 1;
}
