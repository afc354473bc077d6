/* SPDX-License-Identifier: Apache-2.0 */
/* pool.h: a persistent pool of worker threads running parallel-for jobs with low start-up latency. */
#ifndef EHT_UTIL_POOL_H
#define EHT_UTIL_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct eht_pool eht_pool;

/* Called once per task index; worker is 0..size-1 for pool threads, size for the caller thread. */
typedef void (*eht_pool_fn)(void *arg, size_t task, unsigned worker);

/* Creates nthreads workers (0: one per online CPU of the node, else of the machine). numa_node >= 0
 * pins workers to that node's CPUs (read from sysfs; ignored with one warning when unreadable).
 * After a job that came long after the last, every worker sleeps at once; when the last few jobs all
 * came within 1 ms (or spin_us, if longer) of each other, every worker spins for twice the longest
 * of those gaps, at least spin_us (so back-to-back jobs start in well under a microsecond); then
 * they sleep on a futex, and a job wakes only as many as it has tasks: between jobs far apart the
 * pool takes no CPU. Returns 0, -EINVAL, -ENOMEM or -EAGAIN (thread creation). */
int eht_pool_create(unsigned nthreads, int numa_node, unsigned spin_us, eht_pool **out);
/* Stops and joins the workers; NULL is a no-op. */
void eht_pool_destroy(eht_pool *pool);
unsigned eht_pool_size(const eht_pool *pool);
/* Workers asleep on the futex now (the rest run a job or spin): for tests and diagnostics. */
unsigned eht_pool_sleeping(eht_pool *pool);

/* Announces a job due before until_ns (eht_now_ns): idle workers spin until it starts or the deadline
 * passes, and up to nwake sleeping ones (the job's tasks) are woken to, so that the job starts on
 * running threads. Each call announces one job; each job started takes one announcement. */
void eht_pool_warm(eht_pool *pool, uint64_t until_ns, unsigned nwake);

/* Runs fn(arg, i, worker) for i in [0, ntasks) on the workers and the calling thread; returns
 * when every task has finished. Jobs on one pool are serialized. */
void eht_pool_run(eht_pool *pool, size_t ntasks, eht_pool_fn fn, void *arg);
/* Starts a job without the caller taking part; eht_pool_wait() must follow before the next job. */
void eht_pool_start(eht_pool *pool, size_t ntasks, eht_pool_fn fn, void *arg);
void eht_pool_wait(eht_pool *pool);

#endif
