/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_cpu_budget.c: a lookup engine driven like a decode loop (a batch, then 3 ms of other
 * work, repeated) takes no more CPU than its threads x the runs' wall time plus what its bounded spins
 * may cost after each run: pool threads and the doorbell poller sleep between steps instead of spinning
 * through them. Two loops: HOST into host memory (the pool alone), and stream-triggered requests
 * (the doorbell poller, then the pool) with this thread playing the stage-in kernel. Process CPU from
 * CLOCK_PROCESS_CPUTIME_ID; the 3 ms are a sleep, so they cost nothing. Run under TSan (label threads)
 * for the futex wake path. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "lookup/gather/bell/bell.h"
#include "lookup/gather/bell/poller.h"
#include "lookup/gather/bell/requests.h"
#include "testutil.h"
#include "util/cpu.h"

#define RB 264
#define STEPS 60
#define BATCH 1024 /* small: spinning, if any, outweighs the runs (and their slack on a loaded machine) */
#define THREADS 2
#define BELL_BATCH 512
#define POOL_SPIN_US 50  /* the engine's default pool spin (EHT_POOL_SPIN_US unset; the bound uses it) */
#define BELL_SPIN_US 100  /* the poller's default spin after a ring */

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The 3 ms between steps; returns the process CPU spent meanwhile (threads that spin or wake). */
static double other_work(void)
{
	struct timespec ts = {0, 3000000};
	double c0 = cpu_s();
	nanosleep(&ts, NULL);
	return cpu_s() - c0;
}

/* The stage-in kernel's part of one request on one thread: ring, take each chunk, free its slot. */
static void kernel_side(eht_lookup *lk, unsigned idx, size_t n, uint8_t *out)
{
	struct lk_bell *b = lk->bell;
	uint32_t chunk, nslots;
	eht_lk_bell_geom(lk, n, &chunk, &nslots);
	atomic_store_explicit(&b->words[idx], 1, memory_order_release);
	size_t nchunks = (n + chunk - 1) / chunk;
	for (size_t c = 0; c < nchunks; c++) {
		uint32_t slot = (uint32_t)(c % nslots);
		/* Polled with short sleeps: on a machine of few cores a spinning "GPU" would take the
		 * pool's cores and stretch the runs (and so the allowance). */
		struct timespec nap = {0, 20000};
		while (atomic_load_explicit(&b->words[LK_REQS + slot], memory_order_acquire) != LK_READY(idx, c))
			nanosleep(&nap, NULL);
		size_t r0 = c * chunk, r1 = r0 + chunk < n ? r0 + chunk : n;
		memcpy(out + r0 * RB, b->staging + (size_t)slot * chunk * RB, (r1 - r0) * RB);
		atomic_store_explicit(&b->words[LK_REQS + slot], 0, memory_order_release);
	}
}

/* Checks the loop's CPU against busy threads x the runs' wall time + the spins' allowance, and the
 * CPU spent between the runs against the spins alone (on a loaded machine of few cores a spinning
 * thread also stretches the runs, and with them the first bound; the second does not move). */
static void check_budget(const char *what, double cpu, double idle_cpu, unsigned busy, double run_wall,
			 double per_step_spin_s)
{
	double allowed = busy * run_wall + STEPS * per_step_spin_s + 0.04;
	double idle_allowed = STEPS * per_step_spin_s + 0.04; /* 40 ms: a loaded machine of 2 cores */
	fprintf(stderr, "%s: %d steps, CPU %.1f ms (allowed %.1f) of which %.1f ms between runs (allowed %.1f), "
		"runs' wall %.1f ms\n", what, STEPS, cpu * 1e3, allowed * 1e3, idle_cpu * 1e3, idle_allowed * 1e3,
		run_wall * 1e3);
	CHECK(cpu <= allowed);
	CHECK(idle_cpu <= idle_allowed);
}

int main(void)
{
	uint64_t rows = 1u << 16, rs = 9;
	uint8_t *table = malloc(rows * RB);
	int64_t *ids = malloc(BATCH * sizeof(*ids));
	uint8_t *out = malloc((size_t)BATCH * RB), *out2 = malloc((size_t)BATCH * RB);
	if (!table || !ids || !out || !out2) {
		free(table);
		free(ids);
		free(out);
		free(out2);
		return 1;
	}
	for (size_t i = 0; i < rows * RB; i++)
		table[i] = (uint8_t)(i * 131 + 7);
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(table, rows, RB, -1, "budget", &t), 0);
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				    .device = -1, .numa_node = -1, .threads = THREADS, .max_batch = BATCH};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk)
		return t_done();
	/* Spins after a run: each pool thread and the caller's own wait (pool), plus the poller's. */
	const double pool_spin = (THREADS + 1) * POOL_SPIN_US * 1e-6, bell_spin = BELL_SPIN_US * 1e-6;

	/* 1. HOST into host memory: the pool alone. */
	double run_wall = 0, idle = 0, c0 = cpu_s();
	for (int s = 0; s < STEPS; s++) {
		for (size_t i = 0; i < BATCH; i++)
			ids[i] = (int64_t)(t_rand(&rs) % rows);
		uint64_t dead = 1;
		double w0 = wall_s();
		CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, BATCH, out, NULL,
					EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_HOST, &dead), 0);
		run_wall += wall_s() - w0;
		CHECK(dead == 0);
		CHECK(memcmp(out + 5 * RB, table + ids[5] * RB, RB) == 0);
		idle += other_work();
	}
	/* The pool's threads and the calling thread work during a run. */
	check_budget("HOST into host memory", cpu_s() - c0, idle, THREADS + 1, run_wall, pool_spin);

	/* 2. Stream-triggered requests (as a graph replay rings them): the poller serves each on the pool. */
	CHECK_RC(eht_lk_bell_init(lk), 0);
	run_wall = idle = 0;
	c0 = cpu_s();
	uint64_t bad = 0;
	for (int s = 0; s < STEPS; s++) {
		for (size_t i = 0; i < BELL_BATCH; i++)
			ids[i] = (int64_t)(t_rand(&rs) % rows);
		unsigned idx = 0;
		double w0 = wall_s();
		CHECK_RC(eht_lk_bell_prepare(lk, ids, false, 1, 0, BELL_BATCH, false, false, 0, 0, false, &idx), 0);
		eht_lk_bell_arm(lk, idx);
		kernel_side(lk, idx, BELL_BATCH, out2);
		run_wall += wall_s() - w0;
		for (size_t i = 0; i < BELL_BATCH; i += 7)
			bad += memcmp(out2 + i * RB, table + ids[i] * RB, RB) != 0;
		idle += other_work();
	}
	CHECK(bad == 0);
	/* The poller and the pool work during a run (the "kernel", this thread, mostly sleeps). */
	check_budget("stream-triggered", cpu_s() - c0, idle, THREADS + 1, run_wall, pool_spin + bell_spin);
	eht_lookup_destroy(lk);
	eht_table_close(t);
	free(table);
	free(ids);
	free(out);
	free(out2);
	return t_done();
}
