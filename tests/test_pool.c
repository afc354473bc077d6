/* SPDX-License-Identifier: Apache-2.0 */
/* test_pool.c: the persistent thread pool runs every task exactly once, job after job. */
#include <dirent.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "util/clock.h"
#include "util/pool.h"
#include "util/thread.h"

struct job {
	atomic_int *hits;
	atomic_uint workers_seen;
};

static void task(void *arg, size_t i, unsigned worker)
{
	struct job *j = arg;
	atomic_fetch_add(&j->hits[i], 1);
	atomic_fetch_or(&j->workers_seen, 1u << (worker % 32));
}

static void noop(void *arg, size_t i, unsigned worker) { (void)arg, (void)i, (void)worker; }

/* Waits up to 2 s (the spinners' 3 s must still hold when it returns) for the pool to have `want`
 * workers asleep; returns whether it got there. */
static bool sleeping_reaches(eht_pool *pool, unsigned want)
{
	struct timespec ms = {0, 1000 * 1000};
	for (int i = 0; i < 2000; i++) {
		if (eht_pool_sleeping(pool) == want)
			return true;
		nanosleep(&ms, NULL);
	}
	return false;
}

/* After a job long after the last (a model's step) every worker sleeps at once; while jobs come back
 * to back, every worker spins. The spin is made long (3 s) so that the workers' states hold still
 * while the test looks. */
static void spinners(void)
{
	eht_pool *pool = NULL;
	CHECK_RC(eht_pool_create(4, -1, 3000000, &pool), 0);
	if (!pool)
		return;
	CHECK(sleeping_reaches(pool, 4));
	eht_pool_run(pool, 4, noop, NULL);
	CHECK(sleeping_reaches(pool, 4));
	for (int i = 0; i < 6; i++) /* back to back: every worker spins */
		eht_pool_run(pool, 64, noop, NULL);
	CHECK(sleeping_reaches(pool, 0));
	eht_pool_destroy(pool);
}

/* eht_pool_warm wakes the sleeping workers and keeps them spinning until its deadline (a job due
 * then starts on running threads); the jobs it announced end the warm, each done whole, and they
 * sleep again; a warm that no job follows ends at its deadline. */
static void warm(void)
{
	eht_pool *pool = NULL;
	CHECK_RC(eht_pool_create(4, -1, 50, &pool), 0);
	if (!pool)
		return;
	CHECK(sleeping_reaches(pool, 4));
	/* A two-task warm wakes two: the others sleep on (it would spin every thread for a few rows). */
	eht_pool_warm(pool, eht_now_ns() + 30000000000ull, 2); /* 30 s: longer than any check below */
	CHECK(sleeping_reaches(pool, 2));
	struct timespec settle = {0, 100000000};
	nanosleep(&settle, NULL);
	CHECK(eht_pool_sleeping(pool) == 2);
	eht_pool_warm(pool, eht_now_ns() + 30000000000ull, 4);
	CHECK(sleeping_reaches(pool, 0));
	enum { N = 64 };
	static atomic_int hits[N];
	struct job j = {.hits = hits};
	eht_pool_run(pool, N, task, &j);
	int bad = 0;
	for (size_t i = 0; i < N; i++)
		bad += atomic_load(&hits[i]) != 1;
	CHECK(bad == 0);
	nanosleep(&settle, NULL); /* two warms announced two jobs: one is still due */
	CHECK(eht_pool_sleeping(pool) == 0);
	eht_pool_run(pool, N, task, &j);
	CHECK(sleeping_reaches(pool, 4)); /* the second job ended the warm, 30 s early */
	eht_pool_warm(pool, eht_now_ns() + 300000000ull, 4); /* no job: asleep again past 0.3 s */
	CHECK(sleeping_reaches(pool, 0));
	struct timespec s = {0, 400000000};
	nanosleep(&s, NULL);
	CHECK(sleeping_reaches(pool, 4));
	eht_pool_destroy(pool);
}

/* Bit i of the result: a thread of this process is named "eht-pool/i" (i < 8). */
static unsigned pool_names_seen(void)
{
	unsigned seen = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[64], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		unsigned i;
		if (fgets(comm, sizeof(comm), f) && sscanf(comm, EHT_THREAD_POOL "%u", &i) == 1 && i < 8)
			seen |= 1u << i;
		fclose(f);
	}
	if (d)
		closedir(d);
	return seen;
}

/* Workers carry names (top -H, ps -L show eht's threads in an engine's process), and lose them with the pool. */
static void thread_names(void)
{
	CHECK(pool_names_seen() == 0);
	eht_pool *pool = NULL;
	CHECK_RC(eht_pool_create(3, -1, 0, &pool), 0);
	unsigned seen = 0;
	/* Until every worker ran far enough to name itself (30 s: a loaded machine may start them late). */
	for (int tries = 0; pool && tries < 30000 && (seen = pool_names_seen()) != 7; tries++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	CHECK(seen == 7);
	eht_pool_destroy(pool);
	/* A joined thread leaves /proc/self/task a moment later (the kernel wakes the joiner before it
	 * reaps the thread; under qemu-user, check-aarch64, the moment is longer): wait for that, 2 s at most. */
	for (int tries = 0; tries < 2000 && (seen = pool_names_seen()) != 0; tries++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	CHECK(seen == 0);
}

int main(void)
{
	thread_names();
	warm();

	eht_pool *pool = NULL;
	CHECK_RC(eht_pool_create(0, -1, 50, &pool), 0);
	if (!pool)
		return t_done();
	CHECK(eht_pool_size(pool) >= 1);
	enum { N = 5000 };
	static atomic_int hits[N];
	struct job j = {.hits = hits};
	for (int round = 0; round < 200; round++) {
		size_t n = (size_t)(round * 37 % N);
		for (size_t i = 0; i < N; i++)
			atomic_store(&hits[i], 0);
		if (round % 2)
			eht_pool_run(pool, n, task, &j);
		else {
			eht_pool_start(pool, n, task, &j);
			eht_pool_wait(pool);
		}
		int bad = 0;
		for (size_t i = 0; i < N; i++)
			bad += atomic_load(&hits[i]) != (i < n ? 1 : 0);
		CHECK(bad == 0);
	}
	/* A long pause lets workers fall asleep; the next job must still wake them. */
	struct timespec ts = {0, 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
	for (size_t i = 0; i < N; i++)
		atomic_store(&hits[i], 0);
	eht_pool_start(pool, N, task, &j);
	eht_pool_wait(pool);
	int bad = 0;
	for (size_t i = 0; i < N; i++)
		bad += atomic_load(&hits[i]) != 1;
	CHECK(bad == 0);
	eht_pool_destroy(pool);
	eht_pool_destroy(NULL);

	spinners();

	eht_pool *p2 = NULL;
	CHECK_RC(eht_pool_create(5000, -1, 0, &p2), -EINVAL);
	CHECK(p2 == NULL);
	return t_done();
}
