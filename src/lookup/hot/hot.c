/* SPDX-License-Identifier: Apache-2.0 */
/* hot.c: deduplicating runs and the GPU hot-row cache. eht_lookup_set_hotset copies a fixed set of
 * rows into GPU memory with an open-addressing index. A run through here (a hot set, or
 * EHT_LOOKUP_GPU_DEDUP) is three steps on the stream: a mark kernel sorts every id into dead, hot hit
 * or miss, and gives the misses' distinct rows a place in a compact list (a hash table on the GPU, one
 * atomic per warp); the strategy then reads only those distinct misses (its gather_distinct op: in
 * place on the GPU, by the CPU pool through the doorbell, or both at once; gather/distinct.c), into
 * the compact buffer; an expand
 * kernel writes every position from the hot rows, the compact rows or zeros. Hits and repeats never
 * cross the link, and the CPU gathers each distinct row once. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/gather/gather.h"
#include "lookup/gather/rows.h"
#include "lookup/hot/adapt.h"
#include "lookup/hot/hot.h"
#include "lookup/hot/refresh.h"
#include "table/hotset.h"
#include "util/err.h"
#include "util/log.h"
#include "util/thread.h"

struct lk_hot {
	uint64_t n; /* hot rows (0: dedup only) */
	struct eht_hot_index ix;
	eht_dptr d_keys, d_vals, d_rows;
	uint32_t dbits;
	eht_dptr d_dkeys, d_dvals, d_uniq, d_code;
	bool dirty; /* the dedup table may hold entries of a run that failed half way */
	/* Refresh (eht_lookup_update_hotset): plans from any thread, applied on a run's stream. */
	struct eht_hot_refresh rf;
	_Atomic uint64_t live_rows; /* rows of the set the GPU has (n: the capacity) */
	eht_dptr d_lslot, d_lrows; /* a refresh's new rows pass through these, LOAD_CHUNK at a time */
	eht_event ev_applied;   /* after the last applied plan's copies (its pinned buffers free again) */
	bool applied_used;    /* both only under rf.mu */
	eht_lookup *lk;
	/* Adapting (eht_lookup_hotset_adapt): the mark kernel's samples, read by a thread each period. */
	eht_dptr d_hits, d_ring, d_ring_head; /* u32 per slot; ADAPT_RING u64 rows; u64 head */
	pthread_t adapt_th;
	bool adapt_running;
	unsigned adapt_ms;
	pthread_mutex_t adapt_mu; /* with adapt_cv: the thread's sleep, and stop */
	pthread_cond_t adapt_cv;
	bool adapt_stop;
	_Atomic uint64_t adapt_hits, adapt_samples, refreshes; /* last period's sampled hits of all samples */
};

#define ADAPT_RING (1u << 16)

#define LOAD_CHUNK 65536

/* ------------------------------------------------------------------- the engine's cache */
static void eht_lk_hot_adapt_stop(struct lk_hot *h);

void eht_lk_hot_free(eht_lookup *lk)
{
	struct lk_hot *h = lk->hot;
	if (!h)
		return;
	eht_lk_hot_adapt_stop(h);
	eht_hot_refresh_fini(&h->rf);
	if (h->ev_applied)
		eht_dev_event_destroy(h->ev_applied);
	eht_dptr ds[] = {h->d_keys, h->d_vals, h->d_rows, h->d_dkeys, h->d_dvals, h->d_uniq, h->d_code, h->d_lslot,
			    h->d_lrows, h->d_hits, h->d_ring, h->d_ring_head};
	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
		if (ds[i])
			eht_dev_free(ds[i]);
	eht_hot_index_free(&h->ix);
	free(h);
	lk->hot = NULL;
}

static int dalloc(eht_dptr *d, size_t bytes, int rc)
{
	if (rc)
		return rc;
	rc = eht_dev_alloc(d, bytes ? bytes : 8);
	return rc ? eht_err_prefix(rc, "hot set: %zu bytes of GPU memory", bytes) : 0;
}

/* Copies the hot rows into d_rows through a bounce buffer (from the table's host pointer or
 * read_rows), LOAD_CHUNK rows at a time: whatever the strategy, no staging of its is needed. */
static int fill_rows(eht_lookup *lk, struct lk_hot *h, const int64_t *rows)
{
	size_t step = h->n < LOAD_CHUNK ? (size_t)h->n : LOAD_CHUNK;
	int rc = 0;
	uint8_t *buf = eht_lk_host_alloc(lk, step * lk->rb, &rc);
	for (uint64_t b = 0; !rc && b < h->n; b += step) {
		size_t m = h->n - b < step ? (size_t)(h->n - b) : step;
		uint64_t dead = 0;
		rc = eht_lk_gather_ids(lk, rows + b, 1, 0, 0, m, buf, lk->rb, EHT_LOOKUP_RAW, &dead);
		if (!rc && dead)
			rc = eht_err(EINVAL, "hot set: %llu rows of entries %llu.. are dead", (unsigned long long)dead,
				     (unsigned long long)b);
		if (!rc)
			rc = eht_dev_h2d(h->d_rows + b * lk->rb, buf, m * lk->rb);
	}
	eht_lk_host_free(lk, buf);
	return rc;
}

/* The dedup state every deduplicating run needs, hot set or not: the step's table (2 x max_batch
 * entries or more, empty), codes and distinct rows. */
static int dedup_alloc(eht_lookup *lk, struct lk_hot *h)
{
	if (lk->hi - lk->lo > INT32_MAX)
		return eht_err(EINVAL, "lookup on %s: %lld local rows; GPU dedup and the hot set index at most 2^31 - 1",
			       lk->ti.name, (long long)(lk->hi - lk->lo));
	h->dbits = 1;
	while ((1ull << h->dbits) < 2 * lk->max_batch)
		h->dbits++;
	int rc = eht_dev_use(lk->device);
	rc = dalloc(&h->d_dkeys, (8ull << h->dbits), rc);
	rc = dalloc(&h->d_dvals, (4ull << h->dbits), rc);
	rc = dalloc(&h->d_uniq, lk->max_batch * 4, rc);
	rc = dalloc(&h->d_code, lk->max_batch * 4, rc);
	if (!rc)
		rc = eht_dev_memset8(h->d_dkeys, 0xff, 8ull << h->dbits);
	return rc ? rc : eht_lk_scratch(lk); /* the distinct misses' rows go to its compact buffer */
}

int eht_lk_dedup_init(eht_lookup *lk)
{
	struct lk_hot *h = calloc(1, sizeof(*h));
	if (!h)
		return eht_err(ENOMEM, "lookup: out of memory");
	h->lk = lk;
	lk->hot = h;
	int rc = dedup_alloc(lk, h);
	if (rc)
		eht_lk_hot_free(lk);
	return rc;
}

/* ------------------------------------------------------------------- refresh */
static void *pinned_alloc(void *ctx, size_t bytes)
{
	struct lk_hot *h = ctx;
	void *p = NULL;
	if (eht_dev_use(h->lk->device) || eht_dev_host_alloc(&p, bytes ? bytes : 8, EHT_DEV_HOST_PORTABLE))
		return NULL;
	return p;
}

static void pinned_free(void *ctx, void *p)
{
	(void)ctx;
	eht_dev_host_free(p);
}

/* The last applied plan's copies must have read the pinned buffers before they are rewritten. */
static int applied_wait(void *ctx)
{
	struct lk_hot *h = ctx;
	if (!h->applied_used)
		return 0;
	int rc = eht_dev_use(h->lk->device);
	if (!rc && !(rc = eht_dev_event_sync(h->ev_applied)))
		h->applied_used = false;
	return rc;
}

static int refresh_gather(void *ctx, const int64_t *rows, size_t n, uint8_t *dst)
{
	eht_lookup *lk = ctx;
	uint64_t dead = 0;
	int rc = eht_lk_gather_ids(lk, rows, 1, 0, 0, n, dst, lk->rb, EHT_LOOKUP_RAW, &dead);
	return !rc && dead ? eht_err(EINVAL, "hot set refresh: %llu rows are dead", (unsigned long long)dead) : rc;
}

struct apply_ctx {
	struct lk_hot *h;
	eht_stream s;
};

/* Enqueues a plan on the run's stream: the whole index (same size and hash: captured kernels keep
 * their arguments), then the new rows into their slots through a fixed GPU buffer. */
static int refresh_apply(void *ctx, const struct eht_hot_plan *p)
{
	struct apply_ctx *a = ctx;
	struct lk_hot *h = a->h;
	eht_lookup *lk = h->lk;
	int rc = eht_dev_h2d_async(h->d_keys, p->keys, h->ix.cap * 8, a->s);
	if (!rc)
		rc = eht_dev_h2d_async(h->d_vals, p->vals, h->ix.cap * 4, a->s);
	for (uint64_t b = 0; !rc && b < p->nload; b += LOAD_CHUNK) {
		uint64_t m = p->nload - b < LOAD_CHUNK ? p->nload - b : LOAD_CHUNK;
		rc = eht_dev_h2d_async(h->d_lrows, p->load_bytes + b * lk->rb, m * lk->rb, a->s);
		if (!rc)
			rc = eht_dev_h2d_async(h->d_lslot, p->load_slot + b, m * 4, a->s);
		if (!rc)
			rc = eht_gpu_scatter_rows(&lk->g, a->s, h->d_lslot, m, h->d_lrows, lk->rb, h->d_rows);
	}
	if (!rc && !(rc = eht_dev_event_record(h->ev_applied, a->s))) {
		h->applied_used = true;
		h->live_rows = p->rows;
		atomic_fetch_add(&h->refreshes, 1);
	}
	return rc;
}

static int refresh_init(eht_lookup *lk, struct lk_hot *h, const int64_t *rows)
{
	uint64_t lrows = h->n < LOAD_CHUNK ? h->n : LOAD_CHUNK;
	int rc = eht_dev_event_create(&h->ev_applied, 0);
	rc = dalloc(&h->d_lslot, lrows * 4, rc);
	rc = dalloc(&h->d_lrows, lrows * lk->rb, rc);
	struct eht_hot_mem mem = {.alloc = pinned_alloc, .free = pinned_free, .wait = applied_wait, .ctx = h};
	if (!rc)
		rc = eht_hot_refresh_init(&h->rf, rows, h->n, h->ix.bits, lk->lo, lk->hi, lk->rb, &mem);
	return rc;
}

int eht_lookup_update_hotset(eht_lookup *lk, const int64_t *rows, uint64_t n)
{
	if (!lk)
		return eht_err(EINVAL, "eht_lookup_update_hotset: NULL engine");
	if (!lk->hot || !lk->hot->n)
		return eht_err(EINVAL, "eht_lookup_update_hotset: table %s has no hot set (eht_lookup_set_hotset sets its size)",
			       lk->ti.name);
	return eht_hot_refresh_prepare(&lk->hot->rf, rows, n, refresh_gather, lk);
}

int eht_lk_hot_boundary(eht_lookup *lk, eht_stream s)
{
	struct lk_hot *h = lk->hot;
	if (!h || !h->n)
		return 0;
	struct apply_ctx a = {.h = h, .s = s};
	int rc = eht_hot_refresh_take(&h->rf, refresh_apply, &a);
	return rc < 0 ? rc : 0;
}

int eht_lookup_hotset_apply(eht_lookup *lk, void *stream)
{
	if (!lk)
		return eht_err(EINVAL, "eht_lookup_hotset_apply: NULL engine");
	if (!lk->hot || !lk->hot->n)
		return 0;
	eht_stream s = (eht_stream)stream;
	bool capturing = false;
	int rc = eht_dev_use(lk->device);
	if (!rc && (rc = eht_dev_stream_capturing(s, &capturing)))
		return eht_err_prefix(rc, "eht_lookup_hotset_apply: bad stream");
	if (!rc && capturing)
		return eht_err(EOPNOTSUPP, "eht_lookup_hotset_apply: the stream is capturing (apply between replays)");
	struct apply_ctx a = {.h = lk->hot, .s = s};
	return rc ? rc : eht_hot_refresh_take(&lk->hot->rf, refresh_apply, &a);
}

/* ------------------------------------------------------------------- adapting */
/* Each period: the samples since the last (hit counts per slot by difference, missed rows from the
 * ring), a choice, and a refresh prepared when it changes anything (applied by the run thread at its
 * next step boundary; a period with one still pending only observes). */
static void *adapt_main(void *arg)
{
	struct lk_hot *h = arg;
	eht_thread_name("eht-hot-adapt");
	eht_lookup *lk = h->lk;
	const uint64_t S = h->n, local_rows = (uint64_t)(lk->hi - lk->lo);
	uint32_t *hits = malloc(S * 4), *prev = calloc(S, 4), *delta = malloc(S * 4);
	uint64_t *ring = malloc(ADAPT_RING * 8), *miss = malloc(ADAPT_RING * 8), head = 0, last_head = 0;
	bool first = true; /* the counters may hold an earlier run of adapting: the first read is the base */
	int64_t *live = malloc(S * 8), *next = malloc(S * 8);
	struct eht_hot_adapt a = {0};
	eht_stream st = NULL;
	int rc = eht_dev_use(lk->device);
	if (!rc && (!hits || !prev || !delta || !ring || !miss || !live || !next))
		rc = eht_err(ENOMEM, "hot set %s: out of memory for adapting", lk->ti.name);
	if (!rc)
		rc = eht_hot_adapt_init(&a, S, 0.7f, 2.0f);
	if (!rc)
		rc = eht_dev_stream_create(&st, EHT_STREAM_NONBLOCKING);
	if (rc)
		eht_warn("hot set %s: adapting stopped (%s)", lk->ti.name, eht_last_error());
	pthread_mutex_lock(&h->adapt_mu);
	while (!rc && !h->adapt_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(h->adapt_ms % 1000) * 1000000L;
		ts.tv_sec += h->adapt_ms / 1000 + ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&h->adapt_cv, &h->adapt_mu, &ts);
		if (h->adapt_stop)
			break;
		pthread_mutex_unlock(&h->adapt_mu);
		/* Read while kernels may be writing: counts are monotonic (differences), ring slots
		 * torn or overwritten only misplace a sample or two. */
		int crc = eht_dev_d2h_async(hits, h->d_hits, S * 4, st);
		if (!crc)
			crc = eht_dev_d2h_async(ring, h->d_ring, ADAPT_RING * 8, st);
		if (!crc)
			crc = eht_dev_d2h_async(&head, h->d_ring_head, 8, st);
		if (!crc)
			crc = eht_dev_stream_sync(st);
		if (crc) {
			eht_warn("hot set %s: adapting stopped (%s)", lk->ti.name, eht_last_error());
			pthread_mutex_lock(&h->adapt_mu);
			break;
		}
		if (first) {
			memcpy(prev, hits, S * 4);
			last_head = head;
			first = false;
		}
		uint64_t got = head - last_head < ADAPT_RING ? head - last_head : ADAPT_RING, nm = 0;
		for (uint64_t i = head - got; i < head; i++)
			miss[nm++] = ring[i & (ADAPT_RING - 1)];
		last_head = head;
		for (uint64_t s = 0; s < S; s++) {
			delta[s] = hits[s] - prev[s];
			prev[s] = hits[s];
		}
		eht_hot_adapt_observe(&a, delta, miss, nm, local_rows);
		uint64_t all = a.period_hits + a.period_misses;
		atomic_store(&h->adapt_hits, a.period_hits);
		atomic_store(&h->adapt_samples, all);
		if (!atomic_load(&h->rf.pending)) {
			pthread_mutex_lock(&h->rf.mu);
			memcpy(live, h->rf.live, S * 8);
			pthread_mutex_unlock(&h->rf.mu);
			uint64_t changed = 0, n = eht_hot_adapt_choose(&a, live, lk->lo, next, &changed);
			if (changed && eht_hot_refresh_prepare(&h->rf, next, n, refresh_gather, lk))
				eht_warn("hot set %s: a refresh failed (%s)", lk->ti.name, eht_last_error());
		}
		pthread_mutex_lock(&h->adapt_mu);
	}
	pthread_mutex_unlock(&h->adapt_mu);
	if (st)
		eht_dev_stream_destroy(st);
	eht_hot_adapt_fini(&a);
	free(hits);
	free(prev);
	free(delta);
	free(ring);
	free(miss);
	free(live);
	free(next);
	return NULL;
}

static void eht_lk_hot_adapt_stop(struct lk_hot *h)
{
	if (!h->adapt_running)
		return;
	pthread_mutex_lock(&h->adapt_mu);
	h->adapt_stop = true;
	pthread_cond_signal(&h->adapt_cv);
	pthread_mutex_unlock(&h->adapt_mu);
	pthread_join(h->adapt_th, NULL);
	pthread_mutex_destroy(&h->adapt_mu);
	pthread_cond_destroy(&h->adapt_cv);
	h->adapt_running = false;
}

int eht_lookup_hotset_adapt(eht_lookup *lk, unsigned period_ms)
{
	if (!lk)
		return eht_err(EINVAL, "eht_lookup_hotset_adapt: NULL engine");
	struct lk_hot *h = lk->hot;
	if (!h || !h->n)
		return eht_err(EINVAL, "eht_lookup_hotset_adapt: table %s has no hot set (eht_lookup_set_hotset sets its size)",
			       lk->ti.name);
	eht_lk_hot_adapt_stop(h);
	if (period_ms == 0)
		return 0;
	int rc = eht_dev_use(lk->device);
	if (!h->d_hits || !h->d_ring || !h->d_ring_head) {
		rc = h->d_hits ? rc : dalloc(&h->d_hits, h->n * 4, rc);
		rc = h->d_ring ? rc : dalloc(&h->d_ring, ADAPT_RING * 8, rc);
		rc = h->d_ring_head ? rc : dalloc(&h->d_ring_head, 8, rc);
		if (!rc)
			rc = eht_dev_memset8(h->d_hits, 0, h->n * 4);
		if (!rc)
			rc = eht_dev_memset8(h->d_ring_head, 0, 8);
		if (rc)
			return rc;
	}
	h->adapt_ms = period_ms;
	h->adapt_stop = false;
	pthread_mutex_init(&h->adapt_mu, NULL);
	pthread_cond_init(&h->adapt_cv, NULL);
	int prc = pthread_create(&h->adapt_th, NULL, adapt_main, h);
	if (prc) {
		pthread_mutex_destroy(&h->adapt_mu);
		pthread_cond_destroy(&h->adapt_cv);
		return eht_err(prc, "eht_lookup_hotset_adapt: cannot start its thread");
	}
	h->adapt_running = true;
	return 0;
}

double eht_lookup_hotset_hit_rate(const eht_lookup *lk)
{
	if (!lk || !lk->hot || !lk->hot->adapt_running)
		return -1.0;
	uint64_t all = atomic_load(&lk->hot->adapt_samples);
	return all ? (double)atomic_load(&lk->hot->adapt_hits) / (double)all : 0.0;
}

uint64_t eht_lookup_hotset_refreshes(const eht_lookup *lk)
{
	return lk && lk->hot ? atomic_load(&lk->hot->refreshes) : 0;
}

int eht_lookup_set_hotset(eht_lookup *lk, const int64_t *rows, uint64_t n)
{
	if (!lk)
		return eht_err(EINVAL, "eht_lookup_set_hotset: NULL engine");
	if (!rows && n)
		return eht_err(EINVAL, "eht_lookup_set_hotset: NULL rows");
	if (lk->hot_default && !lk->ran) { /* the table's, taken by default: the caller's replaces it */
		eht_lk_hot_free(lk);
		lk->hot_default = false;
		int drc = (lk->flags & EHT_LOOKUP_GPU_DEDUP) ? eht_lk_dedup_init(lk) : 0;
		if (drc)
			return drc;
	}
	if ((lk->hot && lk->hot->n) || lk->ran)
		return eht_err(EBUSY, "eht_lookup_set_hotset: table %s: the hot set is set once, before the first run",
			       lk->ti.name);
	if (!lk->gpu || !lk->kernels)
		return eht_err(EINVAL, "eht_lookup_set_hotset: table %s: a hot set needs a GPU engine with the kernels",
			       lk->ti.name);
	if (n == 0)
		return 0;
	if (n > UINT32_MAX / 2)
		return eht_err(EINVAL, "eht_lookup_set_hotset: %llu rows (at most 2^31 - 1)", (unsigned long long)n);
	uint64_t *loc = malloc(n * sizeof(*loc));
	int rc = 0;
	const bool had_dedup = lk->hot != NULL; /* EHT_LOOKUP_GPU_DEDUP made it at create */
	if (!loc)
		return eht_err(ENOMEM, "eht_lookup_set_hotset: out of memory for %llu rows", (unsigned long long)n);
	if (!had_dedup && (rc = eht_lk_dedup_init(lk)))
		goto out;
	struct lk_hot *h = lk->hot;
	if ((rc = eht_hot_rows_local(rows, n, lk->lo, lk->hi, loc)) || (rc = eht_hot_index_build(loc, n, &h->ix)))
		goto out;
	h->n = n;
	rc = eht_dev_use(lk->device);
	rc = dalloc(&h->d_keys, h->ix.cap * 8, rc);
	rc = dalloc(&h->d_vals, h->ix.cap * 4, rc);
	rc = dalloc(&h->d_rows, n * lk->rb, rc);
	if (!rc)
		rc = eht_dev_h2d(h->d_keys, h->ix.keys, h->ix.cap * 8);
	if (!rc)
		rc = eht_dev_h2d(h->d_vals, h->ix.vals, h->ix.cap * 4);
	if (!rc)
		rc = fill_rows(lk, h, rows);
	if (!rc)
		rc = refresh_init(lk, h, rows);
	h->live_rows = n;
out:
	free(loc);
	if (rc && lk->hot) { /* back to what it was: dedup alone, or nothing */
		eht_lk_hot_free(lk);
		if (had_dedup && eht_lk_dedup_init(lk))
			eht_warn("lookup on %s: GPU dedup lost after a failed hot set (%s)", lk->ti.name, eht_last_error());
	}
	return rc;
}

uint64_t eht_lookup_hotset_rows(const eht_lookup *lk)
{
	return lk && lk->hot && lk->hot->n ? atomic_load(&lk->hot->live_rows) : 0;
}

int eht_lk_hot_piece(eht_lookup *lk, struct lk_piece *p)
{
	struct lk_hot *h = lk->hot;
	eht_stream s = p->s;
	eht_dptr d, ucount = lk->d_counters + sizeof(uint64_t), compact = lk->scr.d_compact;
	int rc = eht_lk_piece_ids_dev(lk, p->ids, p->ids_dev, p->id64 ? 8 : 4, p->n, s, &d);
	/* A run that failed between mark and expand left entries in the dedup table. */
	if (!rc && h->dirty && !(rc = eht_dev_memset8_async(h->d_dkeys, 0xff, 8ull << h->dbits, s)))
		h->dirty = false;
	/* The distinct count starts at zero: the run's first piece zeroes the counters (a run of one
	 * piece, the common case, needs no second memset node in its graph). */
	const bool first = !lk->counters_zeroed;
	if (!rc)
		rc = eht_lk_counters_zero(lk, s);
	if (!rc && !first)
		rc = eht_dev_memset32_async(ucount, 0, 2, s);
	if (rc)
		return rc;
	struct eht_gpu_ids gi = {.ids = d, .id64 = p->id64, .off = p->off, .lo = lk->lo, .hi = lk->hi};
	struct eht_gpu_hot gh = {.keys = h->n ? h->d_keys : 0, .vals = h->d_vals, .rows = h->d_rows, .bits = h->ix.bits,
				 .dkeys = h->d_dkeys, .dvals = h->d_dvals, .uniq = h->d_uniq, .code = h->d_code,
				 .dbits = h->dbits, .hits = h->adapt_running ? h->d_hits : 0, .ring = h->d_ring,
				 .ring_head = h->d_ring_head, .ring_mask = ADAPT_RING - 1};
	if ((rc = eht_gpu_dedup_mark(&lk->g, s, &gi, p->n, &gh, lk->d_counters)))
		return rc;
	h->dirty = true;
	/* The strategy reads the distinct misses into the compact buffer. */
	const struct lk_distinct misses = {.uniq = h->d_uniq, .ucount = ucount, .compact = compact};
	rc = p->st->gather_distinct(lk, p, &misses);
	if (!rc)
		rc = eht_gpu_expand_codes(&lk->g, s, &gh, p->n, compact, lk->rb, (eht_dptr)(uintptr_t)p->out, lk->fmt);
	if (!rc)
		h->dirty = false;
	return rc;
}

/* The table's hot set, where it can be served here: the rows this process holds (a disk table
 * split over ranks holds a range of them), on an engine that can cache rows on its GPU, and not on a
 * background engine: beside the model its kernel's work cost the step more than the host rows it
 * saved (eht bench step on real text, H200, 2026-12-04: AUTO background with a 1 Mi-row hot set
 * decode +42.5 us [+47.5] against +32.3 [+22.4] without; prefill +0.67 ms synced against +0.41). */
static int table_default(eht_lookup *lk, int64_t **rows, uint64_t *n)
{
	*rows = NULL;
	*n = 0;
	if ((lk->flags & (EHT_LOOKUP_NO_HOTSET | EHT_LOOKUP_BACKGROUND)) || !lk->t->hot_rows || !lk->gpu || !lk->kernels)
		return 0;
	int64_t *r = malloc(lk->t->hot_n * sizeof(*r));
	if (!r)
		return eht_err(ENOMEM, "lookup on %s: out of memory for its table's hot set", lk->ti.name);
	uint64_t k = 0;
	for (uint64_t i = 0; i < lk->t->hot_n; i++)
		if (lk->t->hot_rows[i] >= lk->lo && lk->t->hot_rows[i] < lk->hi)
			r[k++] = lk->t->hot_rows[i];
	*rows = r;
	*n = k;
	return 0;
}

int eht_lk_hot_create(eht_lookup *lk)
{
	const struct eht_lookup_opts *o = &lk->opts;
	if (!o->hotset && o->hotset_rows)
		return eht_err(EINVAL, "lookup on %s: opts hotset_rows %llu without hotset", lk->ti.name,
			       (unsigned long long)o->hotset_rows);
	int64_t *own = NULL;
	const int64_t *rows = o->hotset;
	uint64_t n = o->hotset_rows;
	int rc = rows ? 0 : table_default(lk, &own, &n);
	if (rc)
		return rc;
	rows = rows ? rows : own;
	uint64_t per = (uint64_t)lk->rb + 48;
	if (o->hotset_max_bytes && n > o->hotset_max_bytes / per)
		n = o->hotset_max_bytes / per;
	if (n && (rc = eht_lookup_set_hotset(lk, rows, n))) {
		if (own) { /* the table's, not asked for: an engine without it still serves every row */
			eht_warn("lookup on %s: its table's hot set of %llu rows is not used (%s)", lk->ti.name,
				 (unsigned long long)n, eht_last_error());
			rc = 0;
		} else {
			eht_err_prefix(rc, "lookup on %s: opts hotset", lk->ti.name);
		}
	}
	lk->hot_default = own && !rc && lk->hot && lk->hot->n;
	free(own);
	return rc;
}
