/* SPDX-License-Identifier: Apache-2.0 */
/* pool.c: persistent workers woken for work through a futex; while jobs come back to back they spin
 * briefly after each. */
#include "util/pool.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "util/cpu.h"
#include "util/futex.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/thread.h"

/* Idle gaps remembered to choose the spin after a job: spin long only when the last ones were all short. */
#define POOL_GAPS 4
/* The longest spin, when the last jobs' gaps were all short: back-to-back calls keep their threads
 * awake, a model's steps of milliseconds do not. */
#define POOL_SPIN_MAX_US 1000u

struct eht_pool {
	unsigned nthreads;
	unsigned spin_us;      /* the waiter's spin, and the least of the workers' after back-to-back jobs */
	unsigned spin_max_us;  /* at most this long when they come close (back-to-back calls) */
	atomic_uint spin_now_us; /* the spin after the current job (set at its start) */
	atomic_uint spinners_now; /* workers that may spin after it: all while jobs come back to back */
	double last_end_us;    /* when the last job finished (job_lock) */
	double gaps[POOL_GAPS];
	unsigned ngaps;
	pthread_t *threads;
	pthread_mutex_t job_lock; /* serializes jobs */
	pthread_mutex_t mu;
	pthread_cond_t done_cv; /* the waiter waits here for the last task */
	/* Current job. Written before gen is bumped (release), read after gen is seen (acquire). */
	eht_pool_fn fn;
	void *arg;
	_Atomic size_t ntasks;
	/* (generation << 32) | next task index: a worker still draining an old job cannot claim a
	 * task of the next one, because its compare-and-swap sees another generation. */
	atomic_uint_fast64_t next;
	atomic_size_t finished;
	atomic_uint gen; /* also the futex word sleeping workers wait on */
	atomic_uint sleepers;
	atomic_uint_fast64_t warm_until_ns; /* eht_pool_warm: idle workers spin until then */
	atomic_uint warm_jobs;  /* while jobs announced by eht_pool_warm have not started */
	atomic_uint spinners;
	atomic_bool waiter_sleeping;
	atomic_bool stop;
};

struct worker_arg {
	eht_pool *pool;
	unsigned index;
};

/* Takes tasks of job `gen` until none are left; the last finisher wakes a sleeping waiter. */
static void drain(eht_pool *p, unsigned gen, unsigned worker)
{
	uint_fast64_t v = atomic_load_explicit(&p->next, memory_order_acquire);
	for (;;) {
		if ((unsigned)(v >> 32) != gen)
			break;
		size_t n = atomic_load_explicit(&p->ntasks, memory_order_acquire);
		size_t i = (size_t)(v & 0xffffffffu);
		if (i >= n)
			break;
		if (!atomic_compare_exchange_weak_explicit(&p->next, &v, v + 1, memory_order_acq_rel,
							   memory_order_acquire))
			continue;
		p->fn(p->arg, i, worker);
		if (atomic_fetch_add(&p->finished, 1) + 1 == n &&
		    atomic_load(&p->waiter_sleeping)) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_broadcast(&p->done_cv);
			pthread_mutex_unlock(&p->mu);
		}
	}
}

/* Whether idle workers spin for a job announced by eht_pool_warm: one has not started yet, and its
 * deadline has not passed. */
static bool warm(eht_pool *p)
{
	return atomic_load_explicit(&p->warm_jobs, memory_order_relaxed) &&
	       eht_now_ns() < atomic_load_explicit(&p->warm_until_ns, memory_order_relaxed);
}

/* Sleeps until generation `seen` is over: registered as a sleeper first, so that a starter that
 * bumps gen either sees the registration (and wakes us) or we see its new gen (futex's value check). */
static void sleep_for_work(eht_pool *p, unsigned seen)
{
	atomic_fetch_add(&p->sleepers, 1);
	while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop) && !warm(p))
		eht_futex(&p->gen, FUTEX_WAIT, seen, NULL);
	atomic_fetch_sub(&p->sleepers, 1);
}

static void *worker_main(void *v)
{
	struct worker_arg wa = *(struct worker_arg *)v;
	free(v);
	eht_pool *p = wa.pool;
	eht_thread_name(EHT_THREAD_POOL "%u", wa.index);
	/* Generation 0 is the state at creation: a worker that starts late must still run job 1. */
	unsigned seen = 0;
	for (;;) {
		unsigned g = atomic_load_explicit(&p->gen, memory_order_acquire);
		if (g == seen && !atomic_load_explicit(&p->stop, memory_order_relaxed)) {
			/* Jobs that come back to back (a standalone loop) find the threads still spinning;
			 * between steps every thread sleeps. */
			unsigned spin = atomic_load_explicit(&p->spin_now_us, memory_order_relaxed);
			unsigned limit = atomic_load_explicit(&p->spinners_now, memory_order_relaxed);
			/* A slot is taken only below the limit: a worker turned away never counts, so it
			 * cannot turn away another that the limit has room for. */
			unsigned cur = atomic_load(&p->spinners);
			bool spins = false;
			while (p->spin_us && cur < limit && !(spins = atomic_compare_exchange_weak(&p->spinners, &cur, cur + 1)))
				;
			if (spins) {
				double start = eht_now_us();
				while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
				       !atomic_load_explicit(&p->stop, memory_order_relaxed) &&
				       eht_now_us() - start < spin)
					eht_cpu_relax();
				atomic_fetch_sub(&p->spinners, 1);
			}
			/* warmed (eht_pool_warm): spin until the job or the deadline */
			while (g == seen && !atomic_load_explicit(&p->stop, memory_order_relaxed) && warm(p)) {
				eht_cpu_relax();
				g = atomic_load_explicit(&p->gen, memory_order_acquire);
			}
			if (g == seen)
				sleep_for_work(p, seen);
			g = atomic_load_explicit(&p->gen, memory_order_acquire);
		}
		if (atomic_load(&p->stop))
			return NULL;
		seen = g;
		drain(p, g, wa.index);
	}
}

int eht_pool_create(unsigned nthreads, int numa_node, unsigned spin_us, eht_pool **out)
{
	cpu_set_t cpus;
	bool bind = false;
	*out = NULL;
	if (numa_node >= 0) {
		/* Only the node's CPUs this process may run on: binding a thread outside its cpuset fails. */
		if (eht_cpu_node_set(numa_node, &cpus) != 0)
			eht_warn_once("cannot read the CPUs of NUMA node %d; pool threads are not bound", numa_node);
		else if (eht_cpu_restrict(&cpus) == 0)
			eht_warn_once("no CPU of NUMA node %d is in this process's affinity; pool threads are not bound",
				      numa_node);
		else
			bind = true;
	}
	if (nthreads == 0) /* within the affinity mask and the cgroup's CPU quota */
		nthreads = eht_cpu_usable(bind ? &cpus : NULL);
	if (nthreads > 1024)
		return eht_err(EINVAL, "thread pool: %u threads is over the limit of 1024", nthreads);
	eht_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return eht_err(ENOMEM, "thread pool: out of memory");
	p->threads = calloc(nthreads, sizeof(pthread_t));
	if (!p->threads) {
		free(p);
		return eht_err(ENOMEM, "thread pool: out of memory");
	}
	p->spin_us = spin_us;
	p->spin_max_us = POOL_SPIN_MAX_US > spin_us ? POOL_SPIN_MAX_US : spin_us;
	atomic_init(&p->spin_now_us, spin_us);
	/* After a job that came long after the last no worker spins: in a model's decode step only the
	 * second table's job follows the first closely, and it is not the one the next layer waits for
	 * (measured on the lent H200, background decode steps, three rounds in each of three runs a side,
	 * alternated: none spinning against 4 took the process's CPU per step from 3.9-4.6 to 3.4-4.0 ms,
	 * the time added no worse; 4 against every worker had taken it from 4.0 to 2.8 ms a round
	 * before). Back-to-back jobs (a loop of lookups) keep every worker spinning all the same. */
	atomic_init(&p->spinners_now, 0);
	pthread_mutex_init(&p->job_lock, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	for (unsigned i = 0; i < nthreads; i++) {
		struct worker_arg *wa = malloc(sizeof(*wa));
		pthread_attr_t attr;
		int rc = wa ? 0 : ENOMEM;
		if (!rc) {
			wa->pool = p;
			wa->index = i;
			pthread_attr_init(&attr);
			if (bind)
				pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
			rc = pthread_create(&p->threads[i], &attr, worker_main, wa);
			pthread_attr_destroy(&attr);
		}
		if (rc) {
			free(wa);
			p->nthreads = i;
			eht_pool_destroy(p);
			return eht_err(rc, "thread pool: cannot start thread %u of %u", i, nthreads);
		}
	}
	p->nthreads = nthreads;
	*out = p;
	return 0;
}

unsigned eht_pool_size(const eht_pool *pool) { return pool->nthreads; }

unsigned eht_pool_sleeping(eht_pool *pool) { return atomic_load(&pool->sleepers); }

/* The spin after the job starting now: twice the longest of the last idle gaps (up to spin_max_us)
 * when every one was short enough for a spin to catch the next job, else none. Idle workers
 * measured on the lent H200 VM take 40-50 us to wake, which a short spin only pays for between the
 * jobs of one step. Called with job_lock held. */
static void choose_spin(eht_pool *p)
{
	double now = eht_now_us();
	if (p->last_end_us > 0)
		p->gaps[p->ngaps++ % POOL_GAPS] = now - p->last_end_us;
	double gmax = 0;
	for (unsigned i = 0; i < POOL_GAPS && i < p->ngaps; i++)
		gmax = p->gaps[i] > gmax ? p->gaps[i] : gmax;
	unsigned spin = p->spin_us, spinners = 0;
	if (p->ngaps >= POOL_GAPS && gmax <= p->spin_max_us) {
		spinners = p->nthreads; /* back to back: every worker, so each job starts at full width */
		if (2 * gmax + 20 > spin)
			spin = 2 * gmax + 20 < p->spin_max_us ? (unsigned)(2 * gmax + 20) : p->spin_max_us;
	}
	atomic_store_explicit(&p->spin_now_us, spin, memory_order_relaxed);
	atomic_store_explicit(&p->spinners_now, spinners, memory_order_relaxed);
}

void eht_pool_start(eht_pool *p, size_t ntasks, eht_pool_fn fn, void *arg)
{
	pthread_mutex_lock(&p->job_lock);
	choose_spin(p);
	unsigned gen = atomic_load(&p->gen) + 1;
	/* Close the previous generation first: a worker still in drain() for it holds a stale (gen, i)
	 * and, had it read the new ntasks, could otherwise claim task i with the new fn and arg. After
	 * this store its compare-and-swap fails; the release on ntasks makes a worker that sees the new
	 * count also see this store. */
	atomic_store(&p->next, (uint_fast64_t)gen << 32);
	p->fn = fn;
	p->arg = arg;
	atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
	atomic_store_explicit(&p->ntasks, ntasks, memory_order_release);
	/* A job announced by eht_pool_warm has started: once none is still due, the workers spin or
	 * sleep after it as after any job, not through the rest of the warm's window (15 threads
	 * spinning ~0.1 ms more a call); while another is due (a second table's request armed beside
	 * the first) they spin on for it. */
	unsigned w = atomic_load(&p->warm_jobs);
	while (w && !atomic_compare_exchange_weak(&p->warm_jobs, &w, w - 1))
		;
	atomic_store(&p->gen, gen); /* seq_cst: pairs with the sleepers check */
	/* Only as many threads as there are tasks (spinning ones take tasks first; a woken one that
	 * finds none goes back to sleep). */
	unsigned sl = atomic_load(&p->sleepers);
	if (sl) {
		size_t want = ntasks < sl ? ntasks : sl;
		eht_futex(&p->gen, FUTEX_WAKE, want > INT_MAX ? INT_MAX : (unsigned)want, NULL);
	}
}

void eht_pool_warm(eht_pool *p, uint64_t until_ns, unsigned nwake)
{
	/* As eht_pool_start: only as many as the job will have tasks (a few-row request's warm must not
	 * spin every thread). The rest sleep on; a worker ending a job meanwhile spins too, as any. */
	const uint64_t old = atomic_exchange(&p->warm_until_ns, until_ns);
	if (old <= eht_now_ns()) /* the last warm's window is over: a job it announced that never came is forgotten */
		atomic_store(&p->warm_jobs, 1);
	else
		atomic_fetch_add(&p->warm_jobs, 1);
	if (nwake && atomic_load(&p->sleepers))
		eht_futex(&p->gen, FUTEX_WAKE, nwake > INT_MAX ? INT_MAX : nwake, NULL);
}

void eht_pool_wait(eht_pool *p)
{
	size_t n = p->ntasks;
	double start = eht_now_us();
	while (atomic_load_explicit(&p->finished, memory_order_acquire) < n) {
		if (eht_now_us() - start > p->spin_us) {
			pthread_mutex_lock(&p->mu);
			atomic_store(&p->waiter_sleeping, true);
			while (atomic_load(&p->finished) < n)
				pthread_cond_wait(&p->done_cv, &p->mu);
			atomic_store(&p->waiter_sleeping, false);
			pthread_mutex_unlock(&p->mu);
			break;
		}
		eht_cpu_relax();
	}
	p->last_end_us = eht_now_us();
	pthread_mutex_unlock(&p->job_lock);
}

void eht_pool_run(eht_pool *p, size_t ntasks, eht_pool_fn fn, void *arg)
{
	if (ntasks == 0)
		return;
	eht_pool_start(p, ntasks, fn, arg);
	drain(p, atomic_load(&p->gen), p->nthreads);
	eht_pool_wait(p);
}

void eht_pool_destroy(eht_pool *p)
{
	if (!p)
		return;
	atomic_store(&p->stop, true);
	atomic_fetch_add(&p->gen, 1); /* a worker about to wait sees another value */
	eht_futex(&p->gen, FUTEX_WAKE, INT_MAX, NULL);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->done_cv);
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->job_lock);
	free(p->threads);
	free(p);
}
