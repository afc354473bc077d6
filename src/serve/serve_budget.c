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
#include "util/cpu.h"
#include "util/err.h"
#include "util/settings.h"

#define ENGINE_CORES_PER_WORKER 2 /* the worker's own thread and the one feeding its pool */

/* Cores this process may run on: its affinity mask, capped by its cgroup's cpu.max quota (rounded
 * up); EHT_TEST_CORES overrides (tests). */
static unsigned serve_usable_cores(void)
{
	if (eht_setting_is_set(EHT_SET_TEST_CORES)) /* at most 65536: the table's bound */
		return (unsigned)eht_setting_u64(EHT_SET_TEST_CORES);
	return eht_cpu_usable(NULL); /* affinity, capped by the cgroup's quota (v2 cpu.max or v1) */
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
