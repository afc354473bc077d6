/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c: the process's lookup counters: one cache line of relaxed atomics each, so threads of
 * the pool and callers on several engines do not contend on one line. */
#include "lookup/gather/metrics.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "eht.h"
#include "util/err.h"

struct counter {
	_Alignas(64) atomic_uint_fast64_t v;
};

static struct counter c_calls, c_ids, c_cpu, c_gpu, c_hot, c_errors, c_ns, c_dead, c_rows, c_bytes;

static inline void add(struct counter *c, uint64_t n) { atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed); }
static inline uint64_t get(struct counter *c) { return atomic_load_explicit(&c->v, memory_order_relaxed); }

void eht_metrics_call(uint64_t ids, int path, int rc, uint64_t ns)
{
	add(&c_calls, 1);
	add(&c_ids, ids);
	if (path >= 0) /* -1: refused before it chose a path */
		add(path == 0 ? &c_cpu : path == 1 ? &c_gpu : &c_hot, 1);
	if (rc < 0)
		add(&c_errors, 1);
	add(&c_ns, ns);
}

void eht_metrics_dead(uint64_t n) { add(&c_dead, n); }

void eht_metrics_gathered(uint64_t rows, uint64_t bytes)
{
	add(&c_rows, rows);
	add(&c_bytes, bytes);
}

int eht_metrics_read(struct eht_metrics *m)
{
	if (!m || m->size < sizeof(*m))
		return eht_err(EINVAL, "eht_metrics_read: NULL or size %u (want %zu)", m ? m->size : 0, sizeof(*m));
	uint32_t size = m->size;
	memset(m, 0, sizeof(*m));
	m->size = size;
	m->calls = get(&c_calls);
	m->ids = get(&c_ids);
	m->calls_cpu = get(&c_cpu);
	m->calls_gpu = get(&c_gpu);
	m->calls_hot = get(&c_hot);
	m->errors = get(&c_errors);
	m->call_ns = get(&c_ns);
	m->dead_cpu = get(&c_dead);
	m->rows_gathered = get(&c_rows);
	m->bytes_staged = get(&c_bytes);
	return 0;
}
