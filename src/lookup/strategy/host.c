/* SPDX-License-Identifier: Apache-2.0 */
/* host.c: the HOST strategy (host.h): its state, and the CPU side of lookups: sort + dedup of ids, the persistent pool copying rows into
 * pinned staging chunk by chunk, and the DMA of each finished run of chunks while later chunks are
 * still being gathered (the main thread only issues copies; a random row costs a DRAM miss plus an address translation,
 * ~170 ns per thread on one H200 machine (docs/BENCHMARKS.md), so the pool must spread even a 6,144-id
 * decode batch over all threads). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/strategy/host.h"
#include "util/cpu.h"
#include "util/env.h"
#include "util/err.h"
#include "util/prefetch.h"
#include "util/radix.h"

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
/* Copies to the GPU per eager HOST job, overlapped with the gather (1 would be one copy after the
 * whole gather). */
#define LK_DMA_SPLIT 8
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
	uint64_t pf = eht_env_u64("EHT_LOOKUP_PREFETCH", LK_PREFETCH);
	knobs.prefetch = pf > 64 ? 64 : (unsigned)pf;
	uint64_t cx = eht_env_u64("EHT_LOOKUP_CHUNK_MAX", LK_CHUNK_DEFAULT_MAX);
	knobs.chunk_max = cx < LK_CHUNK_MIN ? LK_CHUNK_MIN : cx > LK_CHUNK_MAX ? LK_CHUNK_MAX : (unsigned)cx;
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

/* ------------------------------------------------------------------- (a) sort + dedup */
size_t eht_lk_sort_dedup(const uint64_t *rows, size_t n, uint64_t *tmp, uint64_t *uniq, uint32_t *slot,
			 size_t *nu)
{
	/* Live ids packed as row << 32 | position; an LSD radix sort on the row bits (11-bit digits, only
	 * as many passes as the largest row needs) keeps positions in order within equal rows. */
	uint64_t *a = tmp, *b = tmp + n, maxrow = 0;
	size_t m = 0, dead = 0;
	for (size_t p = 0; p < n; p++) {
		if (rows[p] == LK_DEAD) {
			slot[p] = LK_SLOT_DEAD;
			dead++;
			continue;
		}
		if (rows[p] > maxrow)
			maxrow = rows[p];
		a[m++] = rows[p] << 32 | p;
	}
	a = eht_radix_sort(a, b, m, 32, maxrow);
	size_t u = 0;
	for (size_t i = 0; i < m; i++) {
		uint64_t row = a[i] >> 32;
		if (u == 0 || uniq[u - 1] != row)
			uniq[u++] = row;
		slot[a[i] & 0xffffffffu] = (uint32_t)(u - 1);
	}
	*nu = u;
	return dead;
}

/* ------------------------------------------------------------------- pool jobs */
enum { JOB_IDS, JOB_ROWS, JOB_EXPAND };

struct lk_job {
	eht_lookup *lk;
	int kind;
	const void *ids; /* JOB_IDS: ids of this piece */
	int id64;
	int64_t off;
	const uint64_t *rows;   /* JOB_ROWS: local (host pointer) or absolute (read_rows) rows */
	const uint32_t *slot;   /* JOB_EXPAND: slot per position, rows read from src */
	const uint8_t *src;     /* JOB_EXPAND: compact rows */
	size_t n, chunk;
	uint8_t *dst;
	size_t stride; /* bytes per output row */
	int fmt;       /* JOB_IDS / JOB_EXPAND: raw or CPU dequant */
	atomic_int err;
	char errmsg[1024]; /* [disk hook] the message of err, from the worker thread that failed */
};

static inline void prefetch_row(const uint8_t *p, uint32_t rb) { eht_prefetch_row(p, rb); }

static inline void put_row(uint8_t *dst, const uint8_t *src, uint32_t rb, int fmt)
{
	if (!src)
		memset(dst, 0, fmt == EHT_LOOKUP_BF16 ? 2 * EHT_ENGRAM_DIM : rb);
	else if (fmt == EHT_LOOKUP_BF16)
		eht_engram_dequant_row(src, (uint16_t *)(void *)dst);
	else
		memcpy(dst, src, rb);
}

/* Records a worker's read error (the first one wins) with its message: messages are thread-local,
 * so run_job hands it to the caller. Returns rc. */
static int job_fail(struct lk_job *j, int rc)
{
	int zero = 0;
	if (rc && atomic_compare_exchange_strong(&j->err, &zero, rc))
		snprintf(j->errmsg, sizeof(j->errmsg), "%s", eht_last_error());
	return rc;
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
		return 0;
	}
	const size_t pf = eht_lk_prefetch_rows();
	/* The first rows' misses start together instead of one after the other. */
	for (size_t i = begin; pf && i < begin + pf && i < end; i++) {
		uint64_t r = eht_lk_local(ids, id64, i, off, lk->lo, lk->hi);
		if (r != LK_DEAD)
			prefetch_row(host + r * rb, rb);
	}
	for (size_t i = begin; i < end; i++) {
		if (pf && i + pf < end) {
			uint64_t r = eht_lk_local(ids, id64, i + pf, off, lk->lo, lk->hi);
			if (r != LK_DEAD)
				prefetch_row(host + r * rb, rb);
		}
		uint64_t r = eht_lk_local(ids, id64, i, off, lk->lo, lk->hi);
		*dead += r == LK_DEAD;
		put_row(dst + (i - begin) * stride, r == LK_DEAD ? NULL : host + r * rb, rb, fmt);
	}
	return 0;
}

static void job_task(void *arg, size_t c, unsigned worker)
{
	(void)worker;
	struct lk_job *j = arg;
	eht_lookup *lk = j->lk;
	const uint8_t *host = lk->ti.host;
	const uint32_t rb = lk->rb;
	size_t begin = c * j->chunk, end = begin + j->chunk < j->n ? begin + j->chunk : j->n;
	uint64_t dead = 0;
	switch (j->kind) {
	case JOB_IDS:
		job_fail(j, eht_lk_gather_ids(lk, j->ids, j->id64, j->off, begin, end, j->dst + begin * j->stride,
					      j->stride, j->fmt, &dead));
		break;
	case JOB_ROWS:
		if (!host) {
			job_fail(j, lk->t->ops->read_rows(lk->t, j->rows + begin, end - begin, j->dst + begin * rb, 0));
			break;
		}
		const size_t pf = eht_lk_prefetch_rows();
		for (size_t i = begin; pf && i < begin + pf && i < end; i++)
			prefetch_row(host + j->rows[i] * rb, rb);
		for (size_t i = begin; i < end; i++) {
			if (pf && i + pf < end)
				prefetch_row(host + j->rows[i + pf] * rb, rb);
			put_row(j->dst + i * rb, host + j->rows[i] * rb, rb, EHT_LOOKUP_RAW);
		}
		break;
	case JOB_EXPAND:
		for (size_t i = begin; i < end; i++) {
			uint32_t s = j->slot[i];
			put_row(j->dst + i * j->stride, s == LK_SLOT_DEAD ? NULL : j->src + (size_t)s * rb, rb, j->fmt);
		}
		break;
	}
	struct lk_host *H = eht_lk_host(lk);
	H->chunk_dead[c] = dead;
	atomic_store_explicit(&H->chunk_done[c], 1, memory_order_release);
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

/* Runs job j over n rows. With dma_dst, the caller thread issues cuMemcpyHtoDAsync for each run of
 * finished chunks (row i of j->dst goes to dma_dst + i * stride) while the pool works; without, the
 * caller gathers too. Adds the job's dead rows to *dead. */
static int run_job(eht_lookup *lk, struct lk_job *j, eht_dptr dma_dst, eht_stream s, uint64_t *dead)
{
	struct lk_host *H = eht_lk_host(lk);
	if (j->n == 0)
		return 0;
	j->chunk = eht_lk_chunk_for(lk, j->n);
	size_t nchunks = (j->n + j->chunk - 1) / j->chunk;
	atomic_init(&j->err, 0);
	for (size_t c = 0; c < nchunks; c++) {
		atomic_store_explicit(&H->chunk_done[c], 0, memory_order_relaxed);
		H->chunk_dead[c] = 0;
	}
	int rc = 0;
	if (!dma_dst) {
		eht_pool_run(lk->pool, nchunks, job_task, j);
	} else {
		eht_pool_start(lk->pool, nchunks, job_task, j);
		/* Copies of at least an eighth of the job each: every cuMemcpyHtoDAsync costs the caller
		 * microseconds, and a decode batch has ~64 chunks; fewer, larger copies still overlap. */
		size_t c = 0, batch = nchunks / LK_DMA_SPLIT ? nchunks / LK_DMA_SPLIT : 1;
		while (c < nchunks) {
			size_t want = c + batch < nchunks ? c + batch : nchunks, e = c;
			while (e < want) {
				while (!atomic_load_explicit(&H->chunk_done[e], memory_order_acquire))
					eht_cpu_relax();
				e++;
			}
			while (e < nchunks && atomic_load_explicit(&H->chunk_done[e], memory_order_acquire))
				e++;
			size_t b0 = c * j->chunk, b1 = e * j->chunk < j->n ? e * j->chunk : j->n;
			if (!rc)
				rc = eht_dev_h2d_async(dma_dst + b0 * j->stride, j->dst + b0 * j->stride,
								    (b1 - b0) * j->stride, s);
			c = e;
		}
		eht_pool_wait(lk->pool);
	}
	for (size_t c = 0; c < nchunks; c++)
		*dead += H->chunk_dead[c];
	int err = atomic_load(&j->err);
	if (err && j->errmsg[0]) /* [disk hook] error messages are thread-local: move it to the caller */
		eht_err(err, "%s", j->errmsg);
	return err ? err : rc;
}

/* ------------------------------------------------------------------- (b) */
int eht_lk_gather_stage(eht_lookup *lk, const uint64_t *rows, size_t n, eht_dptr dma_dst, eht_stream s)
{
	struct lk_job j = {.lk = lk, .kind = JOB_ROWS, .rows = rows, .n = n, .dst = eht_lk_host(lk)->staging,
			   .stride = lk->rb, .fmt = EHT_LOOKUP_RAW};
	uint64_t dead = 0;
	int rc = run_job(lk, &j, dma_dst, s, &dead);
	return rc ? eht_err_prefix(rc, "lookup: gathering %zu rows of table %s", n, lk->ti.name) : 0;
}

/* Waits until the copies that last read a reused host buffer have finished. */
static int wait_event(eht_event e, bool *used)
{
	if (!*used)
		return 0;
	*used = false;
	return eht_dev_event_sync(e);
}

int eht_lk_host_sorted_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
			     bool out_dev, eht_stream s, uint64_t *dead)
{
	struct lk_host *H = eht_lk_host(lk);
	int rc = 0;
	if (out_dev && (rc = wait_event(H->ev_stage, &H->stage_used)))
		return rc;
	for (size_t p = 0; p < n; p++)
		H->h_rows[p] = eht_lk_local(ids, id64, p, off, lk->lo, lk->hi);
	size_t nu = 0;
	*dead += eht_lk_sort_dedup(H->h_rows, n, H->h_tmp, H->h_uniq, H->h_slot, &nu);
	if (!lk->ti.host)
		for (size_t u = 0; u < nu; u++)
			H->h_uniq[u] += (uint64_t)lk->lo; /* read_rows takes absolute rows */
	if (!out_dev) {
		rc = eht_lk_gather_stage(lk, H->h_uniq, nu, 0, NULL);
		if (rc)
			return rc;
		struct lk_job j = {.lk = lk, .kind = JOB_EXPAND, .slot = H->h_slot, .src = H->staging, .n = n,
				   .dst = out, .stride = lk->out_rb, .fmt = lk->fmt};
		uint64_t none = 0;
		return run_job(lk, &j, 0, NULL, &none);
	}
	rc = eht_lk_gather_stage(lk, H->h_uniq, nu, lk->scr.d_compact, s);
	if (!rc)
		rc = eht_dev_h2d_async(lk->scr.d_slot, H->h_slot, n * sizeof(uint32_t), s);
	if (!rc)
		rc = eht_gpu_expand(&lk->g, s, lk->scr.d_slot, n, lk->scr.d_compact, lk->rb, (eht_dptr)(uintptr_t)out,
				    lk->fmt);
	if (!rc && !(rc = eht_dev_event_record(H->ev_stage, s)))
		H->stage_used = true;
	return rc;
}

int eht_lk_host_direct_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
			     bool out_dev, eht_stream s, uint64_t *dead)
{
	if (!out_dev) {
		struct lk_job j = {.lk = lk, .kind = JOB_IDS, .ids = ids, .id64 = id64, .off = off, .n = n,
				   .dst = out, .stride = lk->out_rb, .fmt = lk->fmt};
		return run_job(lk, &j, 0, NULL, dead);
	}
	/* Staging halves: the pool fills one half while the other half's copies drain. */
	struct lk_host *H = eht_lk_host(lk);
	size_t half = lk->staging_rows / 2, isz = id64 ? 8 : 4;
	int rc = 0;
	for (size_t base = 0, k = 0; base < n && !rc; base += half, k++) {
		size_t m = n - base < half ? n - base : half;
		int h = (int)(k & 1);
		if ((rc = wait_event(H->ev_half[h], &H->half_used[h])))
			break;
		uint8_t *stage = H->staging + (size_t)h * half * lk->rb;
		struct lk_job j = {.lk = lk, .kind = JOB_IDS, .ids = (const uint8_t *)ids + base * isz, .id64 = id64,
				   .off = off, .n = m, .dst = stage, .stride = lk->rb, .fmt = EHT_LOOKUP_RAW};
		eht_dptr o = (eht_dptr)(uintptr_t)out + base * lk->out_rb;
		if (lk->fmt == EHT_LOOKUP_RAW) {
			rc = run_job(lk, &j, o, s, dead);
		} else {
			eht_dptr raw = lk->scr.d_compact + (eht_dptr)h * half * lk->rb;
			rc = run_job(lk, &j, raw, s, dead);
			if (!rc)
				rc = eht_gpu_expand(&lk->g, s, 0, m, raw, lk->rb, o, lk->fmt);
		}
		if (!rc && !(rc = eht_dev_event_record(H->ev_half[h], s)))
			H->half_used[h] = true;
	}
	return rc;
}

/* ------------------------------------------------------------------- the strategy */
int eht_lk_host_piece(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out, bool out_dev,
		      eht_stream s, uint64_t *dead)
{
	/* Without a host pointer (disk) rows come through read_rows: in request order like the
	 * in-memory path (no sort, no expand: measured faster warm), except for CPU-side bf16 output,
	 * which needs the raw rows staged first. */
	if ((lk->flags & EHT_LOOKUP_HOST_SORT) || (!lk->ti.host && !out_dev && lk->fmt != EHT_LOOKUP_RAW)) {
		/* The sorted path's pieces must fit the staging too (distinct rows live there). */
		size_t cap = lk->staging_rows < lk->max_batch ? lk->staging_rows : lk->max_batch, isz = id64 ? 8 : 4;
		for (size_t b = 0; b < n; b += cap) {
			size_t m = n - b < cap ? n - b : cap;
			int rc = eht_lk_host_sorted_piece(lk, (const uint8_t *)ids + b * isz, id64, off, m,
							  (uint8_t *)out + b * lk->out_rb, out_dev, s, dead);
			if (rc)
				return rc;
		}
		return 0;
	}
	return eht_lk_host_direct_piece(lk, ids, id64, off, n, out, out_dev, s, dead);
}

static int eht_lk_host_gpu(eht_lookup *lk, struct lk_piece *p)
{
	p->dead_published = p->publish_dead;
	return eht_lk_bell_piece(lk, p->ids, p->ids_dev, p->id64, p->off, p->n, (eht_dptr)(uintptr_t)p->out, p->s,
				 p->capture, p->publish_dead);
}

static int eht_lk_host_cpu(eht_lookup *lk, struct lk_piece *p)
{
	return eht_lk_host_piece(lk, p->ids, p->id64, p->off, p->n, p->out, p->out_dev, p->s, p->dead);
}

/* Staging and the per-piece host buffers (pinned with a GPU), the staging halves' events, the GPU
 * scratch (the sorted path and BF16 halves expand from it), and the stream-triggered path where the
 * kernels are loaded. */
static int eht_lk_host_init(eht_lookup *lk)
{
	struct lk_host *H = calloc(1, sizeof(*H));
	if (!H)
		return eht_err(ENOMEM, "lookup: out of memory");
	lk->state[EHT_LOOKUP_HOST] = H;
	size_t mb = lk->max_batch;
	int rc = 0;
	H->staging = eht_lk_host_alloc(lk, lk->staging_rows * lk->rb, &rc);
	H->h_slot = eht_lk_host_alloc(lk, mb * sizeof(uint32_t), &rc);
	H->h_rows = malloc(mb * sizeof(uint64_t));
	H->h_tmp = malloc(2 * mb * sizeof(uint64_t));
	H->h_uniq = malloc(mb * sizeof(uint64_t));
	H->chunk_done = calloc(lk->max_chunks, sizeof(atomic_uint));
	H->chunk_dead = calloc(lk->max_chunks, sizeof(uint64_t));
	if (!rc && (!H->h_rows || !H->h_tmp || !H->h_uniq || !H->chunk_done || !H->chunk_dead))
		rc = eht_err(ENOMEM, "lookup: out of memory for %zu-id buffers", mb);
	if (rc || !lk->gpu)
		return rc;
	if ((rc = eht_lk_scratch(lk)))
		return rc;
	eht_event *evs[] = {&H->ev_half[0], &H->ev_half[1], &H->ev_stage};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]) && !rc; i++)
		rc = eht_dev_event_create(evs[i], EHT_EVENT_TIMING);
	if (!rc && lk->kernels)
		rc = eht_lk_bell_init(lk);
	return rc;
}

static void eht_lk_host_fini(eht_lookup *lk)
{
	struct lk_host *H = eht_lk_host(lk);
	if (!H)
		return;
	eht_lk_bell_fini(lk); /* leaves the poller first: nothing reads the engine after */
	eht_event evs[] = {H->ev_half[0], H->ev_half[1], H->ev_stage};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (evs[i])
			eht_dev_event_destroy(evs[i]);
	eht_lk_host_free(lk, H->staging);
	eht_lk_host_free(lk, H->h_slot);
	free(H->h_rows);
	free(H->h_tmp);
	free(H->h_uniq);
	free(H->chunk_done);
	free(H->chunk_dead);
	free(H);
	lk->state[EHT_LOOKUP_HOST] = NULL;
}

const struct lk_strategy eht_lk_host_strategy = {
	.id = EHT_LOOKUP_HOST,
	.name = "host",
	.caps = LK_CAPTURABLE,
	.init = eht_lk_host_init,
	.fini = eht_lk_host_fini,
	.gpu_piece = eht_lk_host_gpu,
	.cpu_piece = eht_lk_host_cpu,
};
