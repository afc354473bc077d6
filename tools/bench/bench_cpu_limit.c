/* SPDX-License-Identifier: Apache-2.0 */
/* bench_cpu_limit.c: the CPU's own gather limit on the bench's table, beside the engines: threads that
 * spin between batches and take LIMIT_CHUNK-row pieces of the ids from one shared counter (no
 * doorbell, no GPU, no pool), prefetching rows ahead as the library does. Into a buffer per thread
 * that stays in its cache (the memory's read limit), and into one staging buffer of every row (what
 * the library's pool writes). The gap between these and an engine is what the engine's machinery
 * costs. With an idle gap before each batch (bench lookup --gap), into staging again twice: the
 * threads asleep through it and spinning through it, which tells a host whose waking threads start
 * late (a VM's vCPUs: docs/BENCHMARKS.md) from one whose rows come slower after any idle.
 * Each pass reads rows no earlier pass and no engine read: the engines have just read the bench's
 * rows, and a decode's 22 batches (35 MB) can sit in the host's last-level cache, which would make
 * the limit one of cached rows. Every id of a pass is moved by the same offset (modulo the rows), so
 * a batch's repeats stay. One more pass into staging reads the engines' own rows, for the
 * difference. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cpu_limit.h"
#include "bench.h"
#include "util/clock.h"
#include "util/cpu.h"
#include "util/futex.h"
#include "util/prefetch.h"

struct limit_run {
	const uint8_t *table;
	uint32_t rb;
	const int32_t *ids; /* batches x stride; batch b's n ids at ids + b * stride */
	uint64_t rows, shift; /* the table's rows; this pass reads row (id + shift) % rows */
	size_t n, stride, batches;
	unsigned threads, prefetch;
	uint8_t *staging; /* n rows, or NULL: each thread into its own local buffer */
	uint8_t **local;  /* per thread: LOCAL_ROWS rows */
	atomic_uint gen;  /* batches posted so far; batch gen - 1 (modulo batches) is the current one */
	atomic_uint done;
	atomic_size_t next; /* the current batch's next piece */
	atomic_bool stop;
	double gap_s;    /* idle before each batch, or 0 */
	bool sleep_idle; /* the threads wait on a futex (else they spin) */
};

/* Rows a thread takes at a time: dynamic claims even out threads that run at different speeds
 * (a VM's vCPUs do), which fixed shares would not; as small as the library's decode chunks. */
#define LIMIT_CHUNK 48

/* Rows a thread's local buffer holds (it wraps): small enough to stay in its L1/L2. */
#define LOCAL_ROWS 64

/* The row a pass reads for id: moved by the pass's offset, modulo the table's rows. */
static inline uint64_t limit_row(int32_t id, uint64_t shift, uint64_t rows)
{
	return ((uint64_t)(uint32_t)id + shift) % rows;
}

/* Pass p's offset: p eighths of the table, so that no pass reads rows an earlier one or an engine
 * (offset 0) read. */
static uint64_t pass_shift(uint64_t p, uint64_t rows)
{
	return p * (rows / 8) % rows;
}

/* Takes pieces of batch `batch` until none is left. */
static void limit_share(struct limit_run *r, unsigned t, unsigned batch)
{
	const int32_t *ids = r->ids + (size_t)batch * r->stride;
	const uint8_t *tab = r->table;
	const uint32_t rb = r->rb;
	const uint64_t rows = r->rows, shift = r->shift;
	size_t b;
	while ((b = atomic_fetch_add_explicit(&r->next, LIMIT_CHUNK, memory_order_relaxed)) < r->n) {
		size_t e = b + LIMIT_CHUNK < r->n ? b + LIMIT_CHUNK : r->n;
		for (size_t i = b; i < b + r->prefetch && i < e; i++)
			eht_prefetch_row(tab + limit_row(ids[i], shift, rows) * rb, rb);
		for (size_t i = b; i < e; i++) {
			if (i + r->prefetch < e)
				eht_prefetch_row(tab + limit_row(ids[i + r->prefetch], shift, rows) * rb, rb);
			uint8_t *dst = r->staging ? r->staging + i * rb : r->local[t] + ((i - b) % LOCAL_ROWS) * rb;
			memcpy(dst, tab + limit_row(ids[i], shift, rows) * rb, rb);
		}
	}
}

struct limit_worker {
	struct limit_run *r;
	unsigned t;
};

static void *limit_main(void *arg)
{
	struct limit_worker *w = arg;
	struct limit_run *r = w->r;
	unsigned seen = 0;
	for (;;) {
		unsigned g;
		while ((g = atomic_load_explicit(&r->gen, memory_order_acquire)) == seen &&
		       !atomic_load_explicit(&r->stop, memory_order_relaxed)) {
			if (r->sleep_idle)
				eht_futex(&r->gen, FUTEX_WAIT, seen, NULL);
			else
				eht_cpu_relax();
		}
		if (atomic_load_explicit(&r->stop, memory_order_relaxed))
			return NULL;
		seen = g;
		limit_share(r, w->t, (unsigned)((g - 1) % r->batches));
		atomic_fetch_add_explicit(&r->done, 1, memory_order_acq_rel);
	}
}

/* Median seconds of reps batches with the run's destination. 0 or -1 (no thread could start). */
static int limit_time(struct limit_run *r, int reps, double *median_s)
{
	pthread_t th[BENCH_LIMIT_MAX_THREADS];
	struct limit_worker w[BENCH_LIMIT_MAX_THREADS];
	double *v = malloc((size_t)reps * sizeof(*v));
	if (!v)
		return -1;
	atomic_store(&r->gen, 0);
	atomic_store(&r->stop, false);
	unsigned started = 1; /* the caller is thread 0 */
	for (unsigned t = 1; t < r->threads; t++) {
		w[t] = (struct limit_worker){r, t};
		if (pthread_create(&th[t], NULL, limit_main, &w[t]))
			break;
		started++;
	}
	int rc = started == r->threads ? 0 : -1;
	for (int k = 0; !rc && k < reps + 2; k++) { /* two warm-up batches, not timed */
		atomic_store(&r->done, 0);
		atomic_store(&r->next, 0);
		if (r->gap_s > 0)
			bench_idle(r->gap_s);
		double t0 = eht_now_s();
		atomic_store_explicit(&r->gen, (unsigned)k + 1, memory_order_release);
		if (r->sleep_idle)
			eht_futex(&r->gen, FUTEX_WAKE, r->threads, NULL);
		limit_share(r, 0, (unsigned)(k % r->batches));
		while (atomic_load_explicit(&r->done, memory_order_acquire) < r->threads - 1)
			eht_cpu_relax();
		if (k >= 2)
			v[k - 2] = eht_now_s() - t0;
	}
	atomic_store(&r->stop, true);
	atomic_fetch_add(&r->gen, 1);
	eht_futex(&r->gen, FUTEX_WAKE, r->threads, NULL);
	for (unsigned t = 1; t < started; t++)
		pthread_join(th[t], NULL);
	if (!rc) {
		struct bench_stats st;
		bench_stats(v, reps, 1.0, &st);
		*median_s = st.median;
	}
	free(v);
	return rc;
}

int bench_cpu_limit(const uint8_t *table, uint64_t rows, uint32_t rb, const int32_t *ids, size_t n, size_t batches,
		    size_t stride, unsigned threads, unsigned prefetch, int reps, double gap_s, struct bench_cpu_limit *out)
{
	memset(out, 0, sizeof(*out));
	if (!table || rows == 0 || n == 0 || batches == 0 || reps < 1)
		return -1;
	if (threads < 1)
		threads = 1;
	if (threads > BENCH_LIMIT_MAX_THREADS)
		threads = BENCH_LIMIT_MAX_THREADS;
	if (threads > n)
		threads = (unsigned)n;
	struct limit_run r = {.table = table, .rb = rb, .ids = ids, .rows = rows, .n = n, .stride = stride,
			      .batches = batches, .threads = threads, .prefetch = prefetch};
	uint64_t pass = 0; /* passes over rows nobody read: 1, 2, ...; the engines' own rows (0) last */
	r.local = calloc(threads, sizeof(*r.local));
	uint8_t *staging = malloc(n * rb);
	int rc = r.local && staging ? 0 : -1;
	for (unsigned t = 0; !rc && t < threads; t++)
		if (!(r.local[t] = malloc((size_t)LOCAL_ROWS * rb)))
			rc = -1;
	if (!rc) {
		memset(staging, 0, n * rb); /* faulted in before it is timed */
		r.shift = pass_shift(++pass, rows);
		rc = limit_time(&r, reps, &out->local_s);
	}
	if (!rc) {
		r.staging = staging;
		r.shift = pass_shift(++pass, rows);
		rc = limit_time(&r, reps, &out->staging_s);
	}
	if (!rc && gap_s > 0) {
		r.gap_s = gap_s;
		r.sleep_idle = true;
		r.shift = pass_shift(++pass, rows);
		rc = limit_time(&r, reps, &out->gap_asleep_s);
		r.sleep_idle = false;
		r.shift = pass_shift(++pass, rows);
		if (!rc)
			rc = limit_time(&r, reps, &out->gap_spinning_s);
		out->gap_s = gap_s;
		r.gap_s = 0;
	}
	if (!rc) {
		r.shift = 0;
		rc = limit_time(&r, reps, &out->seen_s);
	}
	out->threads = threads;
	out->prefetch = prefetch;
	out->piece = LIMIT_CHUNK;
	for (unsigned t = 0; r.local && t < threads; t++)
		free(r.local[t]);
	free(r.local);
	free(staging);
	return rc;
}
