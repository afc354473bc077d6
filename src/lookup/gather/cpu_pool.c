/* SPDX-License-Identifier: Apache-2.0 */
/* cpu_pool.c: one CPU pool per process for every lookup engine and table, sized to this process's share
 * of its GPU's NUMA node (a node's cores divided among the GPU processes on it), idle threads asleep. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "lookup/gather/cpu_pool.h"
#include "util/cpu.h"
#include "util/err.h"
#include "util/log.h"
#include "util/settings.h"

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static eht_pool *shared_pool;
static unsigned shared_refs;

/* GPUs whose host NUMA node is `node` (each is assumed to have its own process), at least 1. */
static unsigned node_gpus(int node)
{
	int n = eht_dev_count(), count = 0;
	for (int d = 0; d < n; d++) {
		int id = -1;
		if (eht_dev_attr(d, EHT_DEV_ATTR_HOST_NUMA_ID, &id) == 0 && (id == node || node < 0))
			count++;
	}
	return count > 0 ? (unsigned)count : 1;
}

static unsigned default_threads(int node, unsigned budget)
{
	uint64_t env = eht_setting_u64(EHT_SET_THREADS); /* 0: unset */
	if (env)
		return env > 1024 ? 1024 : (unsigned)env;
	if (budget) /* the node's one CPU budget, as eht serve handed it to this worker */
		return budget > 1024 ? 1024 : budget;
	/* The node's CPUs this process may use (affinity, cgroup quota), else all it may use. */
	cpu_set_t set;
	unsigned cpus = node >= 0 && eht_cpu_node_set(node, &set) == 0 ? eht_cpu_usable(&set) : eht_cpu_usable(NULL);
	unsigned share = cpus / node_gpus(node);
	/* Of the share, one core feeds the pool (the caller, or the poller of stream-triggered requests)
	 * and one stays with the process's own thread (which launches work and spins in stream syncs):
	 * a pool thread that loses its core mid-chunk stalls the whole step for a scheduler slice. */
	return share > 3 ? share - 2 : share > 1 ? share - 1 : 1;
}

int eht_lk_pool_get(unsigned threads, unsigned budget, int node, unsigned spin_us, eht_pool **out)
{
	int rc = 0;
	pthread_mutex_lock(&pool_mu);
	if (!shared_pool) {
		unsigned n = threads ? threads : default_threads(node, budget);
		rc = eht_pool_create(n, node, spin_us, &shared_pool);
		if (!rc)
			eht_debug("lookup: one CPU pool of %u threads for this process (node %d)", n, node);
	} else if (threads && threads != eht_pool_size(shared_pool)) {
		eht_debug("lookup: %u threads asked, the process's pool has %u (shared by every engine)", threads,
			  eht_pool_size(shared_pool));
	}
	if (!rc) {
		shared_refs++;
		*out = shared_pool;
	}
	pthread_mutex_unlock(&pool_mu);
	return rc;
}

void eht_lk_pool_put(eht_pool *pool)
{
	if (!pool)
		return;
	eht_pool *gone = NULL;
	pthread_mutex_lock(&pool_mu);
	if (pool == shared_pool && --shared_refs == 0) {
		gone = shared_pool;
		shared_pool = NULL;
	}
	pthread_mutex_unlock(&pool_mu);
	eht_pool_destroy(gone);
}
