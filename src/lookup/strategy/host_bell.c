/* SPDX-License-Identifier: Apache-2.0 */
/* host_bell.c: HOST lookups triggered by the stream itself, so that ids in GPU memory and CUDA-graph
 * replays need no host synchronization. The call only enqueues work: a copy of the ids into pinned
 * memory, then the stage-in kernel (src/gpu/kernels/lookup/stage_in.cu), whose first block writes a doorbell
 * word in host-mapped memory. One poller thread per process watches every engine's doorbells and
 * runs the gather on the shared CPU pool: chunk c of the request into staging slot c % nslots, then
 * ready[slot] = the request's tag | (c + 1). The kernel copies each slot into the output as soon as it is ready and frees it
 * (ready[slot] = 0), so gather, transfer and the CPU's next chunks overlap. Every value the stream
 * writes or waits for depends only on the call's arguments, so a captured graph replays it as is.
 *
 * Why a kernel and not cuStreamWriteValue/WaitValue plus one DMA per chunk: one launch per request
 * instead of three stream operations per chunk (a decode batch has dozens of chunks), the dequant to
 * bf16 fused into the same pass, and no dependence on optional driver entry points. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lookup/strategy/host.h"
#include "util/cpu.h"
#include "util/env.h"
#include "util/err.h"
#include "util/log.h"
#include "util/clock.h"

#define MAX_ENGINES 256
/* A stuck GPU (or a request that never comes) must not hang the poller forever. */
#define STALL_S 10.0

static struct poller {
	pthread_mutex_t life; /* serializes register / unregister (thread start and join) */
	pthread_mutex_t mu;   /* the engine list; held while serving */
	eht_lookup *engines[MAX_ENGINES];
	unsigned n;
	pthread_t th;
	bool running;
	atomic_bool stop;
	atomic_uint pending; /* eager requests enqueued, not served yet (also the futex word) */
	atomic_bool napping;
} P = {.life = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER};

static _Atomic uint32_t *bells(struct lk_bell *b) { return b->words; }
static _Atomic uint32_t *ready(struct lk_bell *b) { return b->words + LK_REQS; }

void eht_lk_bell_geom(const eht_lookup *lk, size_t n, uint32_t *chunk, uint32_t *nslots)
{
	size_t c = eht_lk_chunk_for(lk, n);
	if (n / c >= LK_TAG_CHUNKS) /* chunk + 1 must stay below the tag bits (LK_TAG_SHIFT) */
		c = n / LK_TAG_CHUNKS + 1;
	if (c > eht_lk_host(lk)->bell.staging_rows / 2) /* two slots at least (eht_lookup_create sizes
							 * staging so that this never undoes the line above) */
		c = eht_lk_host(lk)->bell.staging_rows / 2;
	size_t nchunks = (n + c - 1) / c, s = eht_lk_host(lk)->bell.staging_rows / c;
	if (s > nchunks)
		s = nchunks;
	*chunk = (uint32_t)c;
	*nslots = (uint32_t)(s ? s : 1);
}

/* ------------------------------------------------------------------- the gather (CPU side) */
struct bell_job {
	eht_lookup *lk;
	const struct lk_req *r;
	size_t n; /* rows of this request (of a compact one: what its kernel found) */
	unsigned idx;
	uint32_t chunk, nslots;
	double t0;
};

static void bell_fail(struct lk_bell *b, int rc)
{
	int zero = 0;
	if (rc && atomic_compare_exchange_strong(&b->err, &zero, rc))
		snprintf(b->errmsg, sizeof(b->errmsg), "%s", eht_last_error());
}

static void bell_task(void *arg, size_t c, unsigned worker)
{
	(void)worker;
	struct bell_job *j = arg;
	eht_lookup *lk = j->lk;
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	const struct lk_req *r = j->r;
	uint32_t slot = (uint32_t)(c % j->nslots);
	if (c >= j->nslots) {
		/* The slot's previous chunk must be gathered (by another thread) and then read by the GPU. */
		while (atomic_load_explicit(&b->slot_pub[slot], memory_order_acquire) != (unsigned)(c - j->nslots + 1) ||
		       atomic_load_explicit(&ready(b)[slot], memory_order_acquire) != 0) {
			if (eht_now_s() - j->t0 > STALL_S) {
				bell_fail(b, eht_err(ETIMEDOUT, "lookup: the GPU did not take chunk %zu of a stream-triggered gather on table %s in %.0f s",
						     c - j->nslots, lk->ti.name, STALL_S));
				break;
			}
			eht_cpu_relax();
		}
	}
	size_t begin = c * j->chunk, end = begin + j->chunk < j->n ? begin + j->chunk : j->n;
	uint64_t dead = 0;
	uint8_t *dst = b->staging + (size_t)slot * j->chunk * lk->rb;
	int rc = eht_lk_gather_ids(lk, r->ids, r->id64, r->off, begin, end, dst, lk->rb, EHT_LOOKUP_RAW, &dead);
	if (rc) {
		bell_fail(b, rc);
		memset(dst, 0, (end - begin) * lk->rb); /* the GPU still gets the chunk: it must not wait forever */
	}
	b->cdead[c] = dead;
	/* ready first: a thread that sees slot_pub == c + 1 must then see ready != 0 until the GPU read it. */
	atomic_store_explicit(&ready(b)[slot], LK_READY(j->idx, c), memory_order_release);
	atomic_store_explicit(&b->slot_pub[slot], (unsigned)(c + 1), memory_order_release);
}

/* EHT_BELL_TRACE: adds the GPU times of the last finished stage-in launch to the sums (called
 * before the next one is served, so the last launch's stamps are complete, or at teardown). */
static void trace_take(struct lk_bell *b)
{
	volatile uint64_t *g = b->gtrace;
	if (!g || !g[4])
		return;
	/* Blocks stamp in any order; a launch whose stamps are not in order (chunk 0 and the last chunk
	 * seen by blocks that ran late, or block 0 starting after the ring) is skipped. */
	int64_t d[4];
	bool ok = true;
	for (int i = 0; i < 4; i++) {
		d[i] = (int64_t)(g[i + 1] - g[i]);
		ok = ok && g[i] && d[i] >= 0;
	}
	int k = b->gclass;
	if (ok) {
		b->g_n[k]++;
		b->g_ring_s[k] += (double)d[0] * 1e-9;  /* start -> ids copied, doorbell rung */
		b->g_first_s[k] += (double)d[1] * 1e-9; /* ring -> first chunk ready (CPU noticed, gathered it) */
		b->g_span_s[k] += (double)d[2] * 1e-9;  /* first -> last chunk ready */
		b->g_tail_s[k] += (double)d[3] * 1e-9;  /* last chunk ready -> kernel done */
	}
	for (int i = 0; i < 5; i++)
		g[i] = 0;
}

/* Serves request i of lk: its doorbell rang. Called by the poller with P.mu held. */
static void serve(eht_lookup *lk, unsigned i)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	struct lk_req *r = &b->reqs[i];
	atomic_store_explicit(&bells(b)[i], 0, memory_order_relaxed);
	if (!atomic_load_explicit(&r->armed, memory_order_acquire))
		return; /* not ours to serve (a ring of a request torn down) */
	if (i < LK_EAGER_REQS) {
		atomic_store_explicit(&r->armed, false, memory_order_relaxed);
		atomic_fetch_sub(&P.pending, 1);
	}
	size_t n = r->n;
	if (r->compact) { /* its kernel wrote the count before it rang */
		uint64_t c = *(volatile uint64_t *)&b->h_count[i];
		n = c < n ? (size_t)c : n;
	}
	if (n == 0)
		return;
	trace_take(b);
	struct bell_job j = {.lk = lk, .r = r, .n = n, .idx = i, .t0 = eht_now_s()};
	eht_lk_bell_geom(lk, r->n, &j.chunk, &j.nslots); /* the kernel's: it knows only the bound */
	/* The previous request's slots must all have been read by its kernel before they are reused. */
	for (unsigned s = 0; s < b->prev_slots; s++)
		while (atomic_load_explicit(&ready(b)[s], memory_order_acquire) != 0) {
			if (eht_now_s() - j.t0 > STALL_S) {
				bell_fail(b, eht_err(ETIMEDOUT, "lookup: staging of table %s still busy after %.0f s", lk->ti.name,
						     STALL_S));
				atomic_store(&ready(b)[s], 0);
				break;
			}
			eht_cpu_relax();
		}
	for (unsigned s = 0; s < j.nslots; s++)
		atomic_store_explicit(&b->slot_pub[s], 0, memory_order_relaxed);
	b->prev_slots = j.nslots;
	size_t nchunks = (n + j.chunk - 1) / j.chunk;
	if (nchunks < j.nslots)
		j.nslots = (uint32_t)nchunks; /* as the kernel's geometry for n rows: slots wrap at the same place */
	double t1 = eht_now_s();
	eht_pool_run(lk->pool, nchunks, bell_task, &j);
	int k = LK_AUTO_CLASS(r->n);
	b->gclass = k;
	b->st_reqs[k]++;
	b->st_rows[k] += n;
	b->st_wait_s[k] += t1 - j.t0;
	b->st_gather_s[k] += eht_now_s() - t1;
}

static long futex(atomic_uint *w, int op, unsigned val, const struct timespec *ts)
{
	return syscall(SYS_futex, (unsigned *)(void *)w, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

/* Polls every doorbell. Spins while requests come (and for a while after the last one: decode
 * replays arrive milliseconds apart), then naps: short naps first, long ones once idle. Eager calls
 * wake it at once through the pending futex; graph replays are seen at the next nap's end. */
static void *poll_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1000UL); /* naps of tens of microseconds, not the default 50 us slack */
	double spin_s = (double)eht_env_u64("EHT_BELL_SPIN_US", 20000) * 1e-6;
	double last = eht_now_s();
	while (!atomic_load(&P.stop)) {
		bool served = false;
		pthread_mutex_lock(&P.mu);
		for (unsigned e = 0; e < P.n; e++) {
			eht_lookup *lk = P.engines[e];
			unsigned scan = atomic_load_explicit(&eht_lk_host(lk)->bell.scan, memory_order_acquire);
			for (unsigned i = 0; i < scan; i++)
				if (atomic_load_explicit(&bells(&eht_lk_host(lk)->bell)[i], memory_order_acquire)) {
					serve(lk, i);
					served = true;
				}
		}
		pthread_mutex_unlock(&P.mu);
		double t = eht_now_s();
		if (served || atomic_load(&P.pending)) {
			if (served)
				last = t;
			continue;
		}
		if (t - last < spin_s) {
			eht_cpu_relax();
			continue;
		}
		struct timespec ts = {0, t - last < 1.0 ? 50000 : 1000000};
		atomic_store(&P.napping, true);
		futex(&P.pending, FUTEX_WAIT, 0, &ts);
		atomic_store(&P.napping, false);
	}
	return NULL;
}

static void poller_wake(void)
{
	if (atomic_load(&P.napping))
		futex(&P.pending, FUTEX_WAKE, 1, NULL);
}

static int poller_add(eht_lookup *lk)
{
	int rc = 0;
	pthread_mutex_lock(&P.life);
	pthread_mutex_lock(&P.mu);
	if (P.n == MAX_ENGINES)
		rc = eht_err(ENOSPC, "lookup: more than %d engines with stream-triggered lookups in one process", MAX_ENGINES);
	else
		P.engines[P.n++] = lk;
	pthread_mutex_unlock(&P.mu);
	if (!rc && !P.running) {
		atomic_store(&P.stop, false);
		int prc = pthread_create(&P.th, NULL, poll_main, NULL);
		if (prc) {
			rc = eht_err(prc, "lookup: cannot start the doorbell poller thread");
			pthread_mutex_lock(&P.mu);
			P.n--;
			pthread_mutex_unlock(&P.mu);
		} else {
			P.running = true;
		}
	}
	if (!rc)
		eht_lk_host(lk)->bell.registered = true;
	pthread_mutex_unlock(&P.life);
	return rc;
}

static void poller_remove(eht_lookup *lk)
{
	pthread_mutex_lock(&P.life);
	pthread_mutex_lock(&P.mu);
	for (unsigned e = 0; e < P.n; e++)
		if (P.engines[e] == lk) {
			P.engines[e] = P.engines[--P.n];
			break;
		}
	bool last = P.n == 0;
	pthread_mutex_unlock(&P.mu);
	if (last && P.running) {
		atomic_store(&P.stop, true);
		futex(&P.pending, FUTEX_WAKE, 1, NULL);
		pthread_join(P.th, NULL);
		P.running = false;
	}
	eht_lk_host(lk)->bell.registered = false;
	pthread_mutex_unlock(&P.life);
}

/* ------------------------------------------------------------------- set-up and teardown */
static void *bell_alloc(eht_lookup *lk, size_t bytes, eht_dptr *dptr, int *rc)
{
	void *p = NULL;
	if (*rc)
		return NULL;
	if (!lk->gpu) { /* the CPU-only emulation used by the tests */
		if (!(p = calloc(1, bytes)))
			*rc = eht_err(ENOMEM, "lookup: out of memory (%zu bytes)", bytes);
		if (dptr)
			*dptr = (eht_dptr)(uintptr_t)p;
		return p;
	}
	*rc = eht_dev_host_alloc(&p, bytes, EHT_DEV_HOST_PORTABLE | EHT_DEV_HOST_MAPPED);
	if (!*rc && dptr)
		*rc = eht_dev_host_dptr(dptr, p);
	if (*rc)
		eht_err_prefix(*rc, "lookup: %zu bytes of pinned memory for stream-triggered lookups", bytes);
	else
		memset(p, 0, bytes);
	return p;
}

static void bell_free(eht_lookup *lk, void *p)
{
	if (p && lk->gpu)
		eht_dev_host_free(p);
	else
		free(p);
}

int eht_lk_bell_init(eht_lookup *lk)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	int rc = 0;
	b->staging_rows = lk->staging_rows;
	b->staging = bell_alloc(lk, b->staging_rows * lk->rb, &b->d_staging, &rc);
	b->words = bell_alloc(lk, (LK_REQS + lk->max_chunks) * sizeof(uint32_t), &b->d_words, &rc);
	b->cdead = bell_alloc(lk, lk->max_chunks * sizeof(uint64_t), &b->d_cdead, &rc);
	b->arena_cap = 2 * lk->max_batch * 8;
	b->arena = bell_alloc(lk, b->arena_cap, &b->d_arena, &rc);
	b->h_count = bell_alloc(lk, LK_REQS * sizeof(uint64_t), &b->d_h_count, &rc);
	b->trace = eht_env_u64("EHT_BELL_TRACE", 0) != 0;
	if (b->trace)
		b->gtrace = bell_alloc(lk, 5 * sizeof(uint64_t), &b->d_gtrace, &rc);
	for (unsigned i = 0; i < LK_EAGER_REQS && !rc; i++) {
		b->reqs[i].h_cap = lk->max_batch * 8;
		b->reqs[i].h_ids = bell_alloc(lk, b->reqs[i].h_cap, &b->reqs[i].d_h_ids, &rc);
		if (!rc && lk->gpu)
			rc = eht_dev_event_create(&b->reqs[i].done, EHT_EVENT_TIMING);
	}
	if (!rc && !(b->slot_pub = calloc(lk->max_chunks, sizeof(*b->slot_pub))))
		rc = eht_err(ENOMEM, "lookup: out of memory");
	if (!rc && lk->gpu) {
		rc = eht_dev_alloc(&b->d_sync, LK_REQS * 2 * sizeof(uint32_t));
		if (!rc)
			rc = eht_dev_memset8(b->d_sync, 0, LK_REQS * 2 * sizeof(uint32_t));
	}
	atomic_store(&b->scan, LK_EAGER_REQS);
	if (!rc)
		rc = poller_add(lk);
	b->ready_alloc = true;
	return rc;
}

void eht_lk_bell_fini(eht_lookup *lk)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	if (!b->ready_alloc)
		return;
	if (b->registered)
		poller_remove(lk);
	trace_take(b);
	for (int k = 0; k < LK_AUTO_NCLASS; k++)
		if (b->g_n[k])
			fprintf(stderr, "eht: %s (%s): GPU side of %llu stage-in launches (class %s): start to doorbell %.1f us, "
				"doorbell to first chunk ready %.1f us, first to last chunk ready %.1f us, last chunk to kernel "
				"end %.1f us\n", lk->ti.name, lk->st->name,
				(unsigned long long)b->g_n[k], k == 2 ? "prefill" : k == 1 ? "decode" : "small", b->g_ring_s[k] / (double)b->g_n[k] * 1e6,
				b->g_first_s[k] / (double)b->g_n[k] * 1e6, b->g_span_s[k] / (double)b->g_n[k] * 1e6,
				b->g_tail_s[k] / (double)b->g_n[k] * 1e6);
	for (int k = 0; k < LK_AUTO_NCLASS; k++)
		if (b->st_reqs[k] && eht_env_u64("EHT_BELL_TRACE", 0))
			fprintf(stderr, "eht: %s (%s): %llu stream-triggered requests of %.0f rows on average: CPU waited "
				"%.1f us for free staging, gathered in %.1f us (%.1f M rows/s)\n", lk->ti.name,
				lk->st->name, (unsigned long long)b->st_reqs[k],
				(double)b->st_rows[k] / (double)b->st_reqs[k], b->st_wait_s[k] / (double)b->st_reqs[k] * 1e6,
				b->st_gather_s[k] / (double)b->st_reqs[k] * 1e6,
				(double)b->st_rows[k] / b->st_gather_s[k] / 1e6);
	for (unsigned i = 0; i < LK_REQS; i++) {
		if (i < LK_EAGER_REQS)
			bell_free(lk, b->reqs[i].h_ids);
		else if (b->reqs[i].h_ids && ((uint8_t *)b->reqs[i].h_ids < b->arena ||
					      (uint8_t *)b->reqs[i].h_ids >= b->arena + b->arena_cap))
			bell_free(lk, b->reqs[i].h_ids);
		if (b->reqs[i].done)
			eht_dev_event_destroy(b->reqs[i].done);
	}
	if (b->d_sync)
		eht_dev_free(b->d_sync);
	bell_free(lk, b->arena);
	bell_free(lk, b->h_count);
	bell_free(lk, b->gtrace);
	bell_free(lk, b->staging);
	bell_free(lk, (void *)b->words);
	bell_free(lk, b->cdead);
	free(b->slot_pub);
	memset(b, 0, sizeof(*b));
}

int eht_lk_bell_take_error(eht_lookup *lk)
{
	struct lk_bell *b = eht_lk_bell(lk);
	if (!b || !atomic_load(&b->err))
		return 0;
	int rc = atomic_exchange(&b->err, 0);
	return rc ? eht_err(rc, "%s (in an earlier stream-triggered lookup)", b->errmsg) : 0;
}

/* ------------------------------------------------------------------- the call's side */
int eht_lk_bell_prepare(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
			bool compact, bool capturing, unsigned *idx)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	size_t bytes = n * (id64 ? 8 : 4);
	struct lk_req *r = NULL;
	int rc = 0;
	if (!capturing) {
		unsigned i = b->eager_next;
		b->eager_next = (i + 1) % LK_EAGER_REQS;
		r = &b->reqs[i];
		*idx = i;
		if (r->done_used) { /* its last kernel has long finished in practice */
			r->done_used = false;
			if ((rc = eht_dev_event_sync(r->done)))
				return rc;
		}
		while (atomic_load_explicit(&r->armed, memory_order_acquire)) /* CPU emulation: not served yet */
			eht_cpu_relax();
		r->ids = ids_dev ? r->h_ids : ids;
	} else {
		unsigned scan = atomic_load(&b->scan);
		for (unsigned i = LK_EAGER_REQS; i < scan; i++) {
			struct lk_req *q = &b->reqs[i];
			if (q->key == ids && q->n == n && q->id64 == id64 && q->off == off && (q->h_ids != NULL) == ids_dev &&
			    q->compact == compact) {
				*idx = i;
				return 0;
			}
		}
		if (scan == LK_REQS)
			return eht_err(ENOSPC, "lookup: more than %d distinct captured lookups on table %s (ids buffer, count, "
					       "type and offset make one)", LK_CAPTURED_REQS, lk->ti.name);
		r = &b->reqs[scan];
		*idx = scan;
		memset(r, 0, sizeof(*r));
		if (ids_dev) {
			size_t a = (bytes + 63) & ~(size_t)63;
			if (b->arena_used + a <= b->arena_cap) {
				r->h_ids = b->arena + b->arena_used;
				r->d_h_ids = b->d_arena + b->arena_used;
				b->arena_used += a;
			} else {
				void *p = bell_alloc(lk, bytes, &r->d_h_ids, &rc);
				if (rc)
					return rc;
				r->h_ids = p;
			}
			r->h_cap = bytes;
		}
		r->key = ids;
		r->ids = ids_dev ? r->h_ids : ids;
		r->taken = true;
	}
	r->n = n;
	r->id64 = id64;
	r->off = off;
	r->compact = compact;
	if (capturing) {
		atomic_store_explicit(&r->armed, true, memory_order_release);
		atomic_store_explicit(&b->scan, *idx + 1, memory_order_release);
	}
	return 0;
}

void eht_lk_bell_arm(eht_lookup *lk, unsigned idx)
{
	if (idx >= LK_EAGER_REQS)
		return;
	atomic_store_explicit(&eht_lk_host(lk)->bell.reqs[idx].armed, true, memory_order_release);
	atomic_fetch_add(&P.pending, 1);
	poller_wake();
}

static void bell_disarm(unsigned idx, struct lk_req *r)
{
	if (idx < LK_EAGER_REQS && atomic_exchange(&r->armed, false))
		atomic_fetch_sub(&P.pending, 1);
}

/* Enqueues request idx's stage-in kernel (a: everything but the request's own fields). */
static int bell_launch(eht_lookup *lk, struct eht_gpu_stage_in *a, size_t n, eht_dptr out, int fmt, eht_stream s,
		       bool capturing, bool publish_dead, unsigned idx)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	struct lk_req *r = &b->reqs[idx];
	a->h_ids = r->d_h_ids;
	a->staging = b->d_staging;
	a->ready = b->d_words + LK_REQS * sizeof(uint32_t);
	a->chunk_dead = b->d_cdead;
	a->bell = b->d_words + idx * sizeof(uint32_t);
	a->sync = b->d_sync + idx * 2 * sizeof(uint32_t);
	a->h_dead = publish_dead ? lk->d_h_dead : 0;
	a->trace = b->d_gtrace;
	eht_lk_bell_geom(lk, n, &a->chunk, &a->nslots);
	a->tag = (uint32_t)idx << LK_TAG_SHIFT;
	/* Armed before the kernel can ring: the poller ignores a ring of a request that is not. */
	eht_lk_bell_arm(lk, idx);
	int rc = eht_gpu_stage_in(&lk->g, s, a, n, lk->rb, out, fmt, lk->d_counters);
	if (rc)
		bell_disarm(idx, r);
	if (!rc && !capturing && !(rc = eht_dev_event_record(r->done, s)))
		r->done_used = true;
	return rc;
}

int eht_lk_bell_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
		      eht_dptr out, eht_stream s, bool capturing, bool publish_dead)
{
	unsigned idx;
	int rc = eht_lk_bell_prepare(lk, ids, ids_dev, id64, off, n, false, capturing, &idx);
	if (rc)
		return rc;
	/* The kernel copies GPU ids into the pinned copy itself (a copy on the stream before it measured
	 * microseconds of extra latency per step). */
	struct eht_gpu_stage_in a = {.ids = ids_dev ? (eht_dptr)(uintptr_t)ids : 0,
				     .id_bytes = n * (id64 ? 8 : 4)};
	return bell_launch(lk, &a, n, out, lk->fmt, s, capturing, publish_dead, idx);
}

int eht_lk_bell_compact(eht_lookup *lk, eht_dptr uniq, eht_dptr ucount, eht_dptr compact, float share,
			size_t n, eht_stream s, bool capturing, bool publish_dead)
{
	unsigned idx;
	/* u32 local rows: off = lo makes them absolute for the CPU's gather */
	int rc = eht_lk_bell_prepare(lk, (const void *)(uintptr_t)uniq, true, 0, lk->lo, n, true, capturing, &idx);
	if (rc)
		return rc;
	struct eht_gpu_stage_in a = {.ids = uniq, .id_bytes = n * 4, .ucount = ucount, .share = share,
				     .h_count = eht_lk_host(lk)->bell.d_h_count + idx * sizeof(uint64_t)};
	return bell_launch(lk, &a, n, compact, EHT_LOOKUP_RAW, s, capturing, publish_dead, idx);
}
