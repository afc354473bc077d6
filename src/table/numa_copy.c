/* SPDX-License-Identifier: Apache-2.0 */
/* numa_copy.c: which NUMA nodes get a copy of a table, which copy a process reads, and whether the
 * copies fit (see numa_copy.h for the test overrides). */
#include "table/numa_copy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/dev.h"
#include "gpu/probe.h"
#include "os/numa.h"
#include "util/err.h"
#include "util/settings.h"

#define NODE_MAX 4095

static bool forced(void)
{
	return eht_setting_is_set(EHT_SET_TEST_NUMA_NODES) || eht_setting_is_set(EHT_SET_TEST_WORKER_NUMA);
}

int eht_copy_node_for(int device)
{
	if (eht_setting_is_set(EHT_SET_TEST_WORKER_NUMA)) /* at most NODE_MAX: the table's bound */
		return (int)eht_setting_u64(EHT_SET_TEST_WORKER_NUMA);
	if (device >= 0 && eht_dev_load() == 0 && device < eht_dev_count()) {
		int n = eht_dev_host_numa_id(device);
		if (n >= 0)
			return n;
	}
	eht_err_clear(); /* a GPU without a known node is not an error: the CPU's node stands in */
	return eht_numa_local_node();
}

/* Adds node to the ascending, distinct nodes[0..*n). */
static void add_node(int *nodes, int *n, int node)
{
	int i = 0;
	while (i < *n && nodes[i] < node)
		i++;
	if ((i < *n && nodes[i] == node) || *n >= EHT_COPIES_MAX)
		return;
	memmove(nodes + i + 1, nodes + i, (size_t)(*n - i) * sizeof(int));
	nodes[i] = node;
	(*n)++;
}

int eht_copy_nodes(const int *want, size_t nwant, int *nodes)
{
	int n = 0;
	const char *list = eht_setting_str(EHT_SET_TEST_NUMA_NODES);
	if (list) {
		for (const char *s = list; *s;) {
			char *end;
			long v = strtol(s, &end, 10);
			if (end == s || v < 0 || v > NODE_MAX || (*end && *end != ','))
				return eht_err(EINVAL, "EHT_TEST_NUMA_NODES='%s': give NUMA nodes like 0,1", list);
			add_node(nodes, &n, (int)v);
			s = *end ? end + 1 : end;
		}
		return n;
	}
	if (nwant) {
		for (size_t i = 0; i < nwant; i++) {
			if (want[i] < 0 || !eht_numa_node_exists(want[i]))
				return eht_err(EINVAL, "NUMA node %d: no such node on this machine", want[i]);
			add_node(nodes, &n, want[i]);
		}
		return n;
	}
	if (eht_dev_load() != 0) {
		eht_err_clear();
		return 0;
	}
	for (int d = 0; d < eht_dev_count(); d++) {
		int node = eht_dev_host_numa_id(d);
		if (node >= 0)
			add_node(nodes, &n, node);
	}
	eht_err_clear();
	return n;
}

static const char *human(uint64_t v, char *buf, size_t len)
{
	if (v >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", (double)v / (1ull << 30));
	else
		snprintf(buf, len, "%.2f MiB", (double)v / (1ull << 20));
	return buf;
}

bool eht_copy_bindable(int node) { return eht_numa_node_exists(node); }

int eht_copy_fits(int node, uint64_t bytes)
{
	uint64_t total = 0, freeb = 0, avail = 0, reserve = 0;
	if (eht_setting_is_set(EHT_SET_TEST_NUMA_AVAIL)) {
		avail = eht_setting_u64(EHT_SET_TEST_NUMA_AVAIL);
		reserve = eht_setting_u64(EHT_SET_NUMA_RESERVE); /* none unless set */
	} else {
		int rc = eht_numa_node_mem(forced() && !eht_copy_bindable(node) ? 0 : node, &total, &freeb, &avail);
		if (rc) /* a forced node this machine lacks is measured as node 0 */
			return rc;
		reserve = eht_setting_is_set(EHT_SET_NUMA_RESERVE) ? eht_setting_u64(EHT_SET_NUMA_RESERVE) : total / 10;
	}
	if (avail >= reserve && avail - reserve >= bytes)
		return 0;
	char a[32], r[32], b[32];
	return eht_err(ENOMEM, "NUMA node %d has %s available (%s kept in reserve), a copy needs %s", node,
		       human(avail, a, sizeof(a)), human(reserve, r, sizeof(r)), human(bytes, b, sizeof(b)));
}

int eht_copy_pick(const int *nodes, int n, int node)
{
	for (int i = 0; i < n; i++)
		if (nodes[i] == node)
			return i;
	return 0;
}
