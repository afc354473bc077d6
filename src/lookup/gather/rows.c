/* SPDX-License-Identifier: Apache-2.0 */
/* rows.c: copying rows the CPU way (rows.h) and the gather's knobs. A random row costs a DRAM miss
 * plus an address translation, ~170 ns per thread on one H200 machine (docs/BENCHMARKS.md), so the
 * pool must spread even a 6,144-id decode batch over all threads: batches are cut into chunks
 * (eht_lk_chunk_for), and each thread prefetches rows ahead. */
#include <pthread.h>

#include "lookup/gather/rows.h"
#include "lookup/gather/metrics.h"
#include "util/settings.h"

/* ------------------------------------------------------------------- the gather's knobs */
/* Chunks per pool worker. Measured on the H200 (48 GiB, THP, 15 workers, ids in GPU memory, graph
 * replays; eht bench lookup --knob-sweep, 2026-12-01): a 6,144-id decode batch took 163 / 124 / 116 /
 * 106 us with 1 / 2 / 4 / 8 chunks per worker (prefetch 0; 144 / 122 / 114 / 106 at prefetch 8): more,
 * smaller chunks (51 rows) even out the threads' finish. A 196,608-id prefill is at the largest chunk
 * either way. Prefetch 8 rows stays: prefill 1.63 ms against 1.73-1.95 at none and 2.1-2.2 at 32
 * (decode: no difference above noise). The largest chunk, 256 rows (LK_CHUNK_DEFAULT_MAX): a
 * prefill request's first chunk is ready sooner and its last one copied sooner (the stage-in kernel
 * copies a chunk with one block at ~1 GB/s: 144 us for the last 1,024 rows, 72 for 256); graph
 * replays on the H200, 2026-12-02, two runs each: HOST 1.27-1.31 ms at 256 against 1.38-1.43 at
 * 1,024 (512: 1.33, 128: 1.29), AUTO 1.28-1.31 against 1.37-1.40; on a slower machine later that day
 * 1.67-1.69 against 1.90 (HOST), 1.60 against 1.85 (AUTO). Rows are prefetched into every cache level
 * (prefetcht0): decode graphs 88-97 against 97-106 us with the non-temporal hint (same runs), and a
 * loop of 15 spinning threads alone (as eht bench lookup's CPU limit) 40-50 against 51-62 us for
 * 6,144 rows on THP, 2 MiB and 1 GiB hugetlb pages, 16 and 48 GiB; prefill within noise. Raw rows
 * are written with memcpy: streaming stores lost on the lent H200's host (decode 122-205 against
 * 88-111 us, prefill 2.3-5.0 against 1.8-3.1 ms; docs/BENCHMARKS.md). */
#define LK_CHUNKS_PER_WORKER 8
/* Read once per process from the environment, so one bench run can sweep them (eht bench lookup
 * --knob-sweep re-reads them between settings: eht_lk_knobs_reload):
 *   EHT_LOOKUP_PREFETCH     rows a thread prefetches ahead (0 = none; default LK_PREFETCH)
 *   EHT_LOOKUP_CHUNK_MAX    the largest chunk in rows (default LK_CHUNK_DEFAULT_MAX, never above
 *                           LK_CHUNK_MAX nor below LK_CHUNK_MIN) */
static struct {
	unsigned prefetch, chunk_max;
} knobs;
static pthread_once_t knobs_once = PTHREAD_ONCE_INIT;

static void knobs_read(void)
{
	/* the table's bounds hold them (0..64; LK_CHUNK_MIN..LK_CHUNK_MAX) */
	knobs.prefetch = (unsigned)eht_setting_u64(EHT_SET_LOOKUP_PREFETCH);
	knobs.chunk_max = (unsigned)eht_setting_u64(EHT_SET_LOOKUP_CHUNK_MAX);
}

void eht_lk_knobs_reload(void)
{
	pthread_once(&knobs_once, knobs_read);
	knobs_read();
}

unsigned eht_lk_prefetch_rows(void)
{
	pthread_once(&knobs_once, knobs_read);
	return knobs.prefetch;
}

int eht_lk_gather_ids(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t begin, size_t end,
		      uint8_t *dst, size_t stride, int fmt, uint64_t *dead)
{
	const uint8_t *host = lk->ti.host;
	const uint32_t rb = lk->rb;
	if (!host) {
		/* A tier without a host pointer (disk): runs of live ids go to read_rows in request order,
		 * straight into their output rows (raw only: stride == rb). */
		uint64_t run[256];
		for (size_t i = begin; i < end;) {
			uint64_t r = eht_lk_local(ids, id64, i, off, lk->lo, lk->hi);
			if (r == LK_DEAD) {
				(*dead)++;
				memset(dst + (i - begin) * stride, 0, rb);
				i++;
				continue;
			}
			size_t s0 = i, m = 0;
			while (i < end && m < sizeof(run) / sizeof(run[0]) &&
			       (r = eht_lk_local(ids, id64, i, off, lk->lo, lk->hi)) != LK_DEAD) {
				run[m++] = r + (uint64_t)lk->lo; /* read_rows takes absolute rows */
				i++;
			}
			int rc = lk->t->ops->read_rows(lk->t, run, m, dst + (s0 - begin) * stride, 0);
			if (rc)
				return rc;
		}
		eht_metrics_gathered(end - begin, (end - begin) * rb);
		return 0;
	}
	const size_t pf = eht_lk_prefetch_rows();
	/* The first rows' misses start together instead of one after the other. */
	for (size_t i = begin; pf && i < begin + pf && i < end; i++) {
		uint64_t r = eht_lk_local(ids, id64, i, off, lk->lo, lk->hi);
		if (r != LK_DEAD)
			eht_lk_prefetch(host + r * rb, rb);
	}
	for (size_t i = begin; i < end; i++) {
		if (pf && i + pf < end) {
			uint64_t r = eht_lk_local(ids, id64, i + pf, off, lk->lo, lk->hi);
			if (r != LK_DEAD)
				eht_lk_prefetch(host + r * rb, rb);
		}
		uint64_t r = eht_lk_local(ids, id64, i, off, lk->lo, lk->hi);
		*dead += r == LK_DEAD;
		eht_lk_put_row(dst + (i - begin) * stride, r == LK_DEAD ? NULL : host + r * rb, rb, fmt);
	}
	eht_metrics_gathered(end - begin, (end - begin) * rb);
	return 0;
}

/* Chunks small enough that every thread gets several (a 6,144-id batch over 15 threads: 51 rows),
 * large enough that the per-chunk DMA call and task claim stay cheap. */
size_t eht_lk_chunk_for(const eht_lookup *lk, size_t n)
{
	pthread_once(&knobs_once, knobs_read);
	size_t workers = lk->nthreads + 1, per = workers * LK_CHUNKS_PER_WORKER, c = (n + per - 1) / per;
	if (c < LK_CHUNK_MIN)
		c = LK_CHUNK_MIN;
	if (c > knobs.chunk_max)
		c = knobs.chunk_max;
	size_t need = (n + c - 1) / c;
	if (need > lk->max_chunks) /* never: max_chunks covers the largest piece at the smallest chunk */
		c = (n + lk->max_chunks - 1) / lk->max_chunks;
	return c;
}
