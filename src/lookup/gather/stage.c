/* SPDX-License-Identifier: Apache-2.0 */
/* stage.c: the CPU pool's gather into pinned staging (stage.h): jobs of chunks on the process's pool,
 * and the DMA of each finished run of chunks to the GPU while later chunks are still being gathered
 * (the calling thread only issues copies). Two ways for a piece of host ids: in request order
 * (eht_lk_stage_ids: rows copied or dequantized straight into host out, or through two staging
 * halves into GPU out) and sorted (eht_lk_stage_sorted: (a) sort + dedup of the ids on the CPU,
 * (b) the distinct rows into staging and on to the GPU scratch, (c) expanded to the request order). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/gather/gather.h"
#include "lookup/gather/bell/requests.h"
#include "lookup/gather/rows.h"
#include "lookup/gather/stage.h"
#include "lookup/gather/metrics.h"
#include "util/cpu.h"
#include "util/err.h"
#include "util/radix.h"

#define DEFAULT_STAGING_CAP (256ull << 20)
/* Copies to the GPU per eager job, overlapped with the gather (1 would be one copy after the whole
 * gather; eht bench lookup's knob sweep measured 1, 2, 4 and 16 no better). */
#define LK_DMA_SPLIT 8

/* ------------------------------------------------------------------- geometry and state */
void eht_lk_stage_geom(uint64_t max_batch, uint32_t rb, uint64_t staging_bytes, size_t *staging_rows,
		       size_t *max_chunks)
{
	uint64_t sb = staging_bytes;
	if (!sb) {
		sb = max_batch * rb;
		if (sb > DEFAULT_STAGING_CAP)
			sb = DEFAULT_STAGING_CAP;
	}
	size_t rows = sb / rb;
	if (rows < 64)
		rows = 64;
	/* Two slots of the widest chunk a stream-triggered request can need (LK_TAG_CHUNKS per request). */
	if (rows < 2 * (max_batch / LK_TAG_CHUNKS + 1))
		rows = 2 * (max_batch / LK_TAG_CHUNKS + 1);
	size_t piece_max = max_batch > rows ? max_batch : rows;
	*staging_rows = rows;
	*max_chunks = (piece_max + LK_CHUNK_MIN - 1) / LK_CHUNK_MIN + 1;
}

int eht_lk_stage_init(eht_lookup *lk)
{
	struct lk_stage *S = calloc(1, sizeof(*S));
	if (!S)
		return eht_err(ENOMEM, "lookup: out of memory");
	lk->stage = S;
	size_t mb = lk->max_batch;
	int rc = 0;
	S->staging = eht_lk_host_alloc(lk, lk->staging_rows * lk->rb, &rc);
	S->h_slot = eht_lk_host_alloc(lk, mb * sizeof(uint32_t), &rc);
	S->h_rows = malloc(mb * sizeof(uint64_t));
	S->h_tmp = malloc(2 * mb * sizeof(uint64_t));
	S->h_uniq = malloc(mb * sizeof(uint64_t));
	S->chunk_done = calloc(lk->max_chunks, sizeof(atomic_uint));
	S->chunk_dead = calloc(lk->max_chunks, sizeof(uint64_t));
	if (!rc && (!S->h_rows || !S->h_tmp || !S->h_uniq || !S->chunk_done || !S->chunk_dead))
		rc = eht_err(ENOMEM, "lookup: out of memory for %zu-id buffers", mb);
	if (rc || !lk->gpu)
		return rc;
	if ((rc = eht_lk_scratch(lk)))
		return rc;
	eht_event *evs[] = {&S->ev_half[0], &S->ev_half[1], &S->ev_stage};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]) && !rc; i++)
		rc = eht_dev_event_create(evs[i], 0);
	return rc;
}

void eht_lk_stage_fini(eht_lookup *lk)
{
	struct lk_stage *S = lk->stage;
	if (!S)
		return;
	eht_event evs[] = {S->ev_half[0], S->ev_half[1], S->ev_stage};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (evs[i])
			eht_dev_event_destroy(evs[i]);
	eht_lk_host_free(lk, S->staging);
	eht_lk_host_free(lk, S->h_slot);
	free(S->h_rows);
	free(S->h_tmp);
	free(S->h_uniq);
	free(S->chunk_done);
	free(S->chunk_dead);
	free(S);
	lk->stage = NULL;
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

/* Records a worker's read error (the first one wins) with its message: messages are thread-local,
 * so run_job hands it to the caller. Returns rc. */
static int job_fail(struct lk_job *j, int rc)
{
	int zero = 0;
	if (rc && atomic_compare_exchange_strong(&j->err, &zero, rc))
		snprintf(j->errmsg, sizeof(j->errmsg), "%s", eht_last_error());
	return rc;
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
			eht_lk_prefetch(host + j->rows[i] * rb, rb);
		for (size_t i = begin; i < end; i++) {
			if (pf && i + pf < end)
				eht_lk_prefetch(host + j->rows[i + pf] * rb, rb);
			eht_lk_put_row(j->dst + i * rb, host + j->rows[i] * rb, rb, EHT_LOOKUP_RAW);
		}
		eht_metrics_gathered(end - begin, (end - begin) * rb);
		break;
	case JOB_EXPAND:
		for (size_t i = begin; i < end; i++) {
			uint32_t s = j->slot[i];
			eht_lk_put_row(j->dst + i * j->stride, s == LK_SLOT_DEAD ? NULL : j->src + (size_t)s * rb, rb, j->fmt);
		}
		break;
	}
	struct lk_stage *S = lk->stage;
	S->chunk_dead[c] = dead;
	atomic_store_explicit(&S->chunk_done[c], 1, memory_order_release);
}

/* Runs job j over n rows. With dma_dst, the caller thread issues cuMemcpyHtoDAsync for each run of
 * finished chunks (row i of j->dst goes to dma_dst + i * stride) while the pool works; without, the
 * caller gathers too. Adds the job's dead rows to *dead. */
static int run_job(eht_lookup *lk, struct lk_job *j, eht_dptr dma_dst, eht_stream s, uint64_t *dead)
{
	struct lk_stage *S = lk->stage;
	if (j->n == 0)
		return 0;
	j->chunk = eht_lk_chunk_for(lk, j->n);
	size_t nchunks = (j->n + j->chunk - 1) / j->chunk;
	atomic_init(&j->err, 0);
	for (size_t c = 0; c < nchunks; c++) {
		atomic_store_explicit(&S->chunk_done[c], 0, memory_order_relaxed);
		S->chunk_dead[c] = 0;
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
				while (!atomic_load_explicit(&S->chunk_done[e], memory_order_acquire))
					eht_cpu_relax();
				e++;
			}
			while (e < nchunks && atomic_load_explicit(&S->chunk_done[e], memory_order_acquire))
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
		*dead += S->chunk_dead[c];
	int err = atomic_load(&j->err);
	if (err && j->errmsg[0]) /* [disk hook] error messages are thread-local: move it to the caller */
		eht_err(err, "%s", j->errmsg);
	return err ? err : rc;
}

/* ------------------------------------------------------------------- (b), and the two ways */
int eht_lk_gather_stage(eht_lookup *lk, const uint64_t *rows, size_t n, eht_dptr dma_dst, eht_stream s)
{
	struct lk_job j = {.lk = lk, .kind = JOB_ROWS, .rows = rows, .n = n, .dst = lk->stage->staging,
			   .stride = lk->rb, .fmt = EHT_LOOKUP_RAW};
	uint64_t dead = 0;
	int rc = run_job(lk, &j, dma_dst, s, &dead);
	return rc ? eht_err_prefix(rc, "lookup: gathering %zu rows of table %s", n, lk->ti.name) : 0;
}


static int wait_event(eht_event e, bool *used)
{
	if (!*used)
		return 0;
	*used = false;
	return eht_dev_event_sync(e);
}

int eht_lk_stage_sorted(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
			bool out_dev, eht_stream s, uint64_t *dead)
{
	struct lk_stage *S = lk->stage;
	int rc = 0;
	if (out_dev && (rc = wait_event(S->ev_stage, &S->stage_used)))
		return rc;
	for (size_t p = 0; p < n; p++)
		S->h_rows[p] = eht_lk_local(ids, id64, p, off, lk->lo, lk->hi);
	size_t nu = 0;
	*dead += eht_lk_sort_dedup(S->h_rows, n, S->h_tmp, S->h_uniq, S->h_slot, &nu);
	if (!lk->ti.host)
		for (size_t u = 0; u < nu; u++)
			S->h_uniq[u] += (uint64_t)lk->lo; /* read_rows takes absolute rows */
	if (!out_dev) {
		rc = eht_lk_gather_stage(lk, S->h_uniq, nu, 0, NULL);
		if (rc)
			return rc;
		struct lk_job j = {.lk = lk, .kind = JOB_EXPAND, .slot = S->h_slot, .src = S->staging, .n = n,
				   .dst = out, .stride = lk->out_rb, .fmt = lk->fmt};
		uint64_t none = 0;
		return run_job(lk, &j, 0, NULL, &none);
	}
	rc = eht_lk_gather_stage(lk, S->h_uniq, nu, lk->scr.d_compact, s);
	if (!rc)
		rc = eht_dev_h2d_async(lk->scr.d_slot, S->h_slot, n * sizeof(uint32_t), s);
	if (!rc)
		rc = eht_gpu_expand(&lk->g, s, lk->scr.d_slot, n, lk->scr.d_compact, lk->rb, (eht_dptr)(uintptr_t)out,
				    lk->fmt);
	if (!rc && !(rc = eht_dev_event_record(S->ev_stage, s)))
		S->stage_used = true;
	return rc;
}

int eht_lk_stage_ids(eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n, void *out,
		     bool out_dev, eht_stream s, uint64_t *dead)
{
	if (!out_dev) {
		struct lk_job j = {.lk = lk, .kind = JOB_IDS, .ids = ids, .id64 = id64, .off = off, .n = n,
				   .dst = out, .stride = lk->out_rb, .fmt = lk->fmt};
		return run_job(lk, &j, 0, NULL, dead);
	}
	/* Staging halves: the pool fills one half while the other half's copies drain. */
	struct lk_stage *S = lk->stage;
	size_t half = lk->staging_rows / 2, isz = id64 ? 8 : 4;
	int rc = 0;
	for (size_t base = 0, k = 0; base < n && !rc; base += half, k++) {
		size_t m = n - base < half ? n - base : half;
		int h = (int)(k & 1);
		if ((rc = wait_event(S->ev_half[h], &S->half_used[h])))
			break;
		uint8_t *stage = S->staging + (size_t)h * half * lk->rb;
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
		if (!rc && !(rc = eht_dev_event_record(S->ev_half[h], s)))
			S->half_used[h] = true;
	}
	return rc;
}
