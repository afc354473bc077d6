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
 * instead of three stream operations per chunk (a decode batch has dozens of chunks), and no
 * dependence on optional driver entry points. The background
 * mode (EHT_LOOKUP_BACKGROUND) trades that for holding no SM: the stream waits for a few groups with
 * memory operations and the copy engine moves them (bg_groups); pushed (EHT_LOOKUP_BG_PUSH) the CPU
 * moves them with its own copies and the stream waits for one word (push_ring_wait). */
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

#include "gpu/kernels/lookup_const.h"
#include "lookup/strategy/host.h"
#include "util/cpu.h"
#include "util/env.h"
#include "util/err.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/thread.h"

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
	atomic_uint pending; /* eager requests enqueued, not served yet */
	/* Bumped by every kick (an eager call's arm): the futex word the idle poller sleeps on. A
	 * captured request rings without a kick (a host node beside its kernel that would wake the
	 * poller put 40-90 us on a decode graph replay on the lent H200). */
	atomic_uint kicks;
	atomic_uint no_kick; /* engines with captured requests (rings nothing wakes the poller for) */
	atomic_bool napping;
} P = {.life = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER};

static _Atomic uint32_t *bells(struct lk_bell *b) { return b->words; }
static _Atomic uint32_t *ready(struct lk_bell *b) { return b->words + LK_REQS; }
/* Request idx's done word: after the bells and the ready words. */
static size_t done_at(const eht_lookup *lk, unsigned idx) { return LK_REQS + lk->max_chunks + idx; }
_Atomic uint32_t *eht_lk_bell_done(struct lk_bell *b, const eht_lookup *lk, unsigned idx)
{
	return b->words + done_at(lk, idx);
}
static eht_dptr d_done(const struct lk_bell *b, const eht_lookup *lk, unsigned idx)
{
	return b->d_words + done_at(lk, idx) * sizeof(uint32_t);
}

/* Makes lk's GPU current on the calling thread (a pool thread or the poller pushing rows). */
static int bell_on_device(const eht_lookup *lk)
{
	int dev = -1;
	int rc = eht_dev_current(NULL, &dev);
	return rc ? rc : dev == lk->device ? 0 : eht_dev_use(lk->device);
}

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
	double t_first; /* EHT_TEST_BELL_TRACE: when chunk 0 was published */
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
	if (c == 0 && b->trace)
		j->t_first = eht_now_s();
}

/* EHT_TEST_BELL_TRACE: the CPU's marks (gtrace[EHT_LK_TRACE_SERVED]: the poller serves the request,
 * [EHT_LK_TRACE_POOL]: the pool starts its gather), which the ringing block waits for and stamps (in
 * the word after each) on the GPU's clock. */
static bool trace_cpu_mark(int i) { return i == EHT_LK_TRACE_SERVED || i == EHT_LK_TRACE_POOL; }

static void trace_mark(struct lk_bell *b, int i)
{
	if (b->gtrace)
		((volatile uint64_t *)b->gtrace)[i] = 1;
}

/* EHT_TEST_BELL_TRACE: adds the GPU times of the last finished stage-in launch to the sums. Called as the
 * next launch is served (started_next) or at teardown. By the time a launch rings it has already
 * stamped its own start and ring over the previous launch's, so those two are kept here when it is
 * served, and matched with its chunk and end stamps (g[2..4]) one launch later. */
static void trace_take(struct lk_bell *b, bool started_next)
{
	volatile uint64_t *g = b->gtrace;
	if (!g)
		return;
	uint64_t t[11] = {b->gprev[0], b->gprev[1], g[2], g[3], g[4], 0, g[6], 0, g[8], g[9], g[10]};
	/* Every stamp is taken from the ring on (chunk 0 and the last chunk may be ready in either
	 * order); a launch with a stamp missing or before its ring (block 0 starting late) is skipped. */
	bool ok = t[0] && t[1] >= t[0];
	for (int i = 2; i < 11; i++)
		ok = ok && (trace_cpu_mark(i) || t[i] >= t[1]);
	int k = b->gclass;
	if (ok) {
		b->g_n[k]++;
		b->g_ring_s[k] += (double)(t[1] - t[0]) * 1e-9;  /* start -> ids copied, doorbell rung */
		b->g_first_s[k] += (double)(t[2] - t[1]) * 1e-9; /* ring -> chunk 0 ready (CPU noticed, gathered it) */
		b->g_span_s[k] += (double)(t[3] - t[1]) * 1e-9;  /* ring -> last chunk ready */
		b->g_tail_s[k] += (double)(t[4] - t[1]) * 1e-9;  /* ring -> kernel done */
		b->g_ans_s[k] += (double)(t[6] - t[1]) * 1e-9;   /* ring -> the GPU saw the poller's answer */
		b->g_pool_s[k] += (double)(t[8] - t[1]) * 1e-9;  /* ring -> the GPU saw the pool's start */
		b->g_copy0_s[k] += (double)(t[9] - t[2]) * 1e-9; /* chunk 0 ready -> copied */
		b->g_copyl_s[k] += (double)(t[10] - t[3]) * 1e-9; /* the last chunk ready -> copied */
	}
	b->gprev[0] = started_next ? g[0] : 0;
	b->gprev[1] = started_next ? g[1] : 0;
	for (int i = 2; i < 11; i++)
		if (!trace_cpu_mark(i))
			g[i] = 0;
}

/* Staging is free for the next request once the previous request's slots have all been read by the
 * GPU and the CPU's copies of the last pushed request are done. */
static void wait_slots_free(eht_lookup *lk, double t0)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	if (b->pushed_used) {
		int d = bell_on_device(lk);
		while (!d && !(d = eht_dev_event_done(b->ev_pushed))) {
			if (eht_now_s() - t0 > STALL_S) {
				d = eht_err(ETIMEDOUT, "lookup: the copies of table %s's last rows to the GPU did not end in %.0f s",
					    lk->ti.name, STALL_S);
				break;
			}
			eht_cpu_relax();
		}
		if (d < 0)
			bell_fail(b, d);
		b->pushed_used = false;
	}
	for (unsigned s = 0; s < b->prev_slots; s++)
		while (atomic_load_explicit(&ready(b)[s], memory_order_acquire) != 0) {
			if (eht_now_s() - t0 > STALL_S) {
				bell_fail(b, eht_err(ETIMEDOUT, "lookup: staging of table %s still busy after %.0f s", lk->ti.name,
						     STALL_S));
				atomic_store(&ready(b)[s], 0);
				break;
			}
			eht_cpu_relax();
		}
}

/* ------------------------------------------------------------------- background requests (CPU side) */
/* Rows per group the stream waits for: few groups keep the stream's nodes (a wait and a copy per
 * group) cheap, enough of them let the copy engine move one while the CPU gathers the next (at most
 * LK_BG_GROUPS of them). */
#define BG_GROUP_ROWS 2048


void eht_lk_bell_bg_geom(const eht_lookup *lk, size_t n, uint32_t *groups, uint32_t *group_rows)
{
	size_t g = (n + BG_GROUP_ROWS - 1) / BG_GROUP_ROWS;
	if (g > LK_BG_GROUPS)
		g = LK_BG_GROUPS;
	if (g > lk->max_chunks)
		g = lk->max_chunks;
	if (g == 0)
		g = 1;
	size_t rows = (n + g - 1) / g;
	*group_rows = (uint32_t)(rows ? rows : 1);
	*groups = (uint32_t)((n + *group_rows - 1) / *group_rows);
	if (*groups == 0)
		*groups = 1;
}

struct bg_job {
	eht_lookup *lk;
	const struct lk_req *r;
	size_t n, chunk, tasks_per_group;
	unsigned idx;
	uint32_t groups, group_rows;
	_Atomic uint64_t dead;
	double t_first; /* EHT_TEST_BELL_TRACE: when group 0 was marked ready */
};

/* A pushed request's rows [begin, end) from staging to their place in push_dst, by the copy engine
 * on push_stream (the CPU emulation of the tests: memcpy). */
static void push_rows(eht_lookup *lk, const struct lk_req *r, size_t begin, size_t end)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	if (begin >= end)
		return;
	const size_t off = begin * lk->rb, bytes = (end - begin) * lk->rb;
	if (!lk->gpu) {
		memcpy((uint8_t *)(uintptr_t)r->push_dst + off, b->staging + off, bytes);
		return;
	}
	int rc = bell_on_device(lk);
	if (!rc)
		rc = eht_dev_h2d_async(r->push_dst + off, b->staging + off, bytes, b->push_stream);
	if (rc)
		bell_fail(b, eht_err_prefix(rc, "lookup: copying rows of table %s to the GPU", lk->ti.name));
}

/* The end of pushed request i: its done word set after its copies (the stream waits for that), and
 * the copies' end recorded for the next request's use of staging. Should the driver refuse, the CPU
 * sets the word itself once the copies are done: the stream goes on, the error is the next call's. */
static void push_done(eht_lookup *lk, unsigned i)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	_Atomic uint32_t *done = eht_lk_bell_done(b, lk, i);
	if (!lk->gpu) {
		atomic_store_explicit(done, 1u, memory_order_release);
		return;
	}
	int rc = bell_on_device(lk);
	if (!rc)
		rc = eht_dev_stream_write32(b->push_stream, d_done(b, lk, i), 1u);
	if (!rc && !(rc = eht_dev_event_record(b->ev_pushed, b->push_stream)))
		b->pushed_used = true;
	if (rc) {
		bell_fail(b, eht_err_prefix(rc, "lookup: ending a pushed request of table %s", lk->ti.name));
		eht_dev_stream_sync(b->push_stream);
		b->pushed_used = false;
		atomic_store_explicit(done, 1u, memory_order_release);
	}
}

/* Task t: rows of group t / tasks_per_group straight into their place in staging (a group's rows lie
 * together, no slot wraps inside a request). The last task of a group marks it ready (pushed: copies
 * it to the GPU), except for the last group, which serve_bg marks (pushes) once the dead count is
 * written. */
static void bg_task(void *arg, size_t t, unsigned worker)
{
	(void)worker;
	struct bg_job *j = arg;
	eht_lookup *lk = j->lk;
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	size_t g = t / j->tasks_per_group, k = t % j->tasks_per_group;
	size_t gend = (g + 1) * j->group_rows < j->n ? (g + 1) * j->group_rows : j->n;
	size_t begin = g * j->group_rows + k * j->chunk, end = begin + j->chunk < gend ? begin + j->chunk : gend;
	if (begin < end) {
		uint64_t dead = 0;
		uint8_t *dst = b->staging + begin * lk->rb;
		int rc = eht_lk_gather_ids(lk, j->r->ids, j->r->id64, j->r->off, begin, end, dst, lk->rb, EHT_LOOKUP_RAW,
					   &dead);
		if (rc) {
			bell_fail(b, rc);
			memset(dst, 0, (end - begin) * lk->rb);
		}
		atomic_fetch_add_explicit(&j->dead, dead, memory_order_relaxed);
	}
	if (atomic_fetch_add_explicit(&b->slot_pub[g], 1, memory_order_acq_rel) + 1 == j->tasks_per_group &&
	    g + 1 < j->groups) {
		if (j->r->push_dst)
			push_rows(lk, j->r, g * j->group_rows, gend);
		else
			atomic_store_explicit(&ready(b)[g], LK_READY(j->idx, g), memory_order_release);
		if (g == 0 && b->trace)
			j->t_first = eht_now_s();
	}
}

/* n rows of request i (r->n for a plain one, the GPU's count for a compact one). The groups are the
 * bound's (r->n), as the stream's waits: those past n are published empty. */
static void serve_bg(eht_lookup *lk, const struct lk_req *r, unsigned i, size_t n)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	double t0 = eht_now_s();
	struct bg_job j = {.lk = lk, .r = r, .n = n, .idx = i};
	eht_lk_bell_bg_geom(lk, r->n, &j.groups, &j.group_rows);
	wait_slots_free(lk, t0);
	b->prev_slots = r->push_dst ? 0 : j.groups; /* (a pushed request's groups have no ready words) */
	j.chunk = eht_lk_chunk_for(lk, n ? n : 1); /* >= 1 row for n >= 1; a group holds >= 1 too */
	if (j.chunk > j.group_rows)
		j.chunk = j.group_rows;
	j.tasks_per_group = (j.group_rows + j.chunk - 1) / j.chunk;
	for (unsigned g = 0; g < j.groups; g++)
		atomic_store_explicit(&b->slot_pub[g], 0, memory_order_relaxed);
	double t1 = eht_now_s();
	eht_pool_run(lk->pool, j.groups * j.tasks_per_group, bg_task, &j);
	/* A plain background request is its run's only piece: its dead count is the run's. A compact
	 * one's rows are valid local rows; the stream copies the dead count of its dedup pass. */
	if (!r->compact)
		*(volatile uint64_t *)lk->h_dead = atomic_load(&j.dead);
	atomic_fetch_add_explicit(&b->bg_reqs, 1, memory_order_relaxed);
	if (r->compact)
		atomic_fetch_add_explicit(&b->bg_compact_reqs, 1, memory_order_relaxed);
	if (r->push_dst) {
		push_rows(lk, r, (size_t)(j.groups - 1) * j.group_rows, n);
		b->pushed_reqs++;
		push_done(lk, i);
	} else {
		atomic_store_explicit(&ready(b)[j.groups - 1], LK_READY(i, j.groups - 1), memory_order_release);
	}
	int k = LK_AUTO_CLASS(r->n);
	b->st_reqs[k]++;
	b->st_rows[k] += n;
	b->st_wait_s[k] += t1 - t0;
	double t2 = eht_now_s();
	b->st_gather_s[k] += t2 - t1;
	b->st_first_s[k] += (j.t_first > t1 ? j.t_first : t2) - t1; /* (one group: at the end) */
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
	if (r->bg) { /* even with no rows: the stream waits for every group */
		serve_bg(lk, r, i, n);
		return;
	}
	trace_take(b, true); /* (before a request with no rows returns: its launch stamps too) */
	trace_mark(b, EHT_LK_TRACE_SERVED);
	if (n == 0) {
		trace_mark(b, EHT_LK_TRACE_POOL);
		return;
	}
	struct bell_job j = {.lk = lk, .r = r, .n = n, .idx = i, .t0 = eht_now_s()};
	eht_lk_bell_geom(lk, r->n, &j.chunk, &j.nslots); /* the kernel's: it knows only the bound */
	wait_slots_free(lk, j.t0);
	for (unsigned s = 0; s < j.nslots; s++)
		atomic_store_explicit(&b->slot_pub[s], 0, memory_order_relaxed);
	b->prev_slots = j.nslots;
	size_t nchunks = (n + j.chunk - 1) / j.chunk;
	if (nchunks < j.nslots)
		j.nslots = (uint32_t)nchunks; /* as the kernel's geometry for n rows: slots wrap at the same place */
	double t1 = eht_now_s();
	trace_mark(b, EHT_LK_TRACE_POOL);
	eht_pool_run(lk->pool, nchunks, bell_task, &j);
	int k = LK_AUTO_CLASS(r->n);
	b->gclass = k;
	b->st_reqs[k]++;
	b->st_rows[k] += n;
	b->st_wait_s[k] += t1 - j.t0;
	b->st_gather_s[k] += eht_now_s() - t1;
	b->st_first_s[k] += j.t_first > t1 ? j.t_first - t1 : 0;
}

static long futex(atomic_uint *w, int op, unsigned val, const struct timespec *ts)
{
	return syscall(SYS_futex, (unsigned *)(void *)w, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

/* Polls every doorbell while requests come and, after the last ring or kick, for EHT_BELL_SPIN_US
 * (100; the second table's request of a step follows the first within microseconds) or, when the
 * last idle gaps were all under 1 ms (back-to-back calls), twice the longest of them. Then it sleeps
 * on the kick futex: an eager call wakes it. It naps 50 us at most while an eager request is armed
 * but has not rung (its stream may be busy), or captured requests exist (nothing wakes the poller
 * for their rings) and a ring came in the last second; 1 ms otherwise. */
static void *poll_main(void *arg)
{
	(void)arg;
	eht_thread_name(EHT_THREAD_BELL);
	prctl(PR_SET_TIMERSLACK, 1000UL); /* naps of tens of microseconds, not the default 50 us slack */
	const double spin_min = (double)eht_env_u64("EHT_BELL_SPIN_US", 100) * 1e-6, spin_max = 1e-3;
	double spin_s = spin_min, gaps[4] = {0}, last = eht_now_s(), idle_from = -1;
	unsigned seen = atomic_load(&P.kicks), ngaps = 0;
	while (!atomic_load(&P.stop)) {
		bool served = false;
		pthread_mutex_lock(&P.mu);
		for (unsigned e = 0; e < P.n; e++) {
			eht_lookup *lk = P.engines[e];
			unsigned scan = atomic_load_explicit(&eht_lk_host(lk)->bell.scan, memory_order_acquire);
			for (unsigned i = 0; i < scan; i++) {
				if (atomic_load_explicit(&bells(&eht_lk_host(lk)->bell)[i], memory_order_acquire)) {
					if (idle_from >= 0 && !served) { /* the idle gap this ring ends */
						gaps[ngaps++ % 4] = eht_now_s() - idle_from;
						double g = 0;
						for (unsigned q = 0; q < 4 && q < ngaps; q++)
							g = gaps[q] > g ? gaps[q] : g;
						spin_s = ngaps >= 4 && g <= spin_max ? (2 * g > spin_min ? (2 * g < spin_max ? 2 * g : spin_max) : spin_min) : spin_min;
					}
					serve(lk, i);
					served = true;
				}
			}
		}
		pthread_mutex_unlock(&P.mu);
		double t = eht_now_s();
		unsigned k = atomic_load(&P.kicks);
		if (served || k != seen) {
			last = t;
			if (served)
				idle_from = t;
			seen = k;
			continue;
		}
		if (t - last < spin_s) {
			eht_cpu_relax();
			continue;
		}
		/* A captured request's ring is seen at a nap's end: 50 us naps, 1 ms ones after a second idle. */
		bool pending = atomic_load(&P.pending) != 0;
		bool short_nap = pending || (atomic_load(&P.no_kick) && t - last < 1.0);
		struct timespec ts = {0, short_nap ? 50000 : 1000000};
		atomic_store(&P.napping, true);
		futex(&P.kicks, FUTEX_WAIT, seen, &ts);
		atomic_store(&P.napping, false);
	}
	return NULL;
}

/* Wakes the poller for a request about to ring (safe from any thread, the driver's included). */
static void poller_kick(void)
{
	atomic_fetch_add(&P.kicks, 1); /* seq_cst: either the poller sees it before sleeping, or we see napping */
	if (atomic_load(&P.napping))
		futex(&P.kicks, FUTEX_WAKE, 1, NULL);
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
		poller_kick();
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
	b->words = bell_alloc(lk, (2 * LK_REQS + lk->max_chunks) * sizeof(uint32_t), &b->d_words, &rc);
	b->cdead = bell_alloc(lk, lk->max_chunks * sizeof(uint64_t), &b->d_cdead, &rc);
	if (!lk->gpu && !lk->h_dead) { /* the CPU emulation: a background request writes its dead count here */
		lk->h_dead = bell_alloc(lk, sizeof(uint64_t), NULL, &rc);
		b->own_h_dead = lk->h_dead != NULL;
	}
	b->arena_cap = 2 * lk->max_batch * 8;
	b->arena = bell_alloc(lk, b->arena_cap, &b->d_arena, &rc);
	b->h_count = bell_alloc(lk, LK_REQS * sizeof(uint64_t), &b->d_h_count, &rc);
	b->trace = eht_env_u64("EHT_TEST_BELL_TRACE", 0) != 0;
	if (b->trace)
		b->gtrace = bell_alloc(lk, 11 * sizeof(uint64_t), &b->d_gtrace, &rc);
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
	/* One stage-in block relays the ready words into GPU memory for the others (stage_in.cu). */
	if (!rc && lk->gpu) {
		rc = eht_dev_alloc(&b->d_mirror, lk->max_chunks * sizeof(uint32_t));
		if (!rc)
			rc = eht_dev_memset8(b->d_mirror, 0, lk->max_chunks * sizeof(uint32_t));
	}
	if (!rc && lk->gpu && lk->background && lk->fmt != EHT_LOOKUP_RAW) {
		rc = eht_dev_stream_create(&b->bg_xstream, EHT_STREAM_NONBLOCKING);
		for (unsigned g = 0; g < LK_BG_GROUPS && !rc; g++)
			rc = eht_dev_event_create(&b->bg_copied[g], 0);
		if (!rc)
			rc = eht_dev_event_create(&b->bg_xdone, 0);
	}
	/* EHT_LOOKUP_BG_PUSH (the flag, or 1 / 0 in the environment for every engine): background
	 * requests pushed (push_ring_wait says what that saves and eht.h when to use it) */
	b->bg_push = eht_env_u64("EHT_LOOKUP_BG_PUSH", (lk->flags & EHT_LOOKUP_BG_PUSH) ? 1 : 0) != 0;
	if (!rc && lk->gpu && lk->background && b->bg_push) {
		rc = eht_dev_stream_create(&b->push_stream, EHT_STREAM_NONBLOCKING);
		if (!rc)
			rc = eht_dev_event_create(&b->ev_pushed, 0);
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
	trace_take(b, false);
	for (int k = 0; k < LK_AUTO_NCLASS; k++)
		if (b->g_n[k])
			fprintf(stderr, "eht: %s (%s): GPU side of %llu stage-in launches (class %s): start to doorbell %.1f us, "
				"doorbell to the poller's answer %.1f us, to the pool's start %.1f us, to chunk 0 ready %.1f us, "
				"to the last chunk ready %.1f us, to the kernel's end %.1f us; copying chunk 0 took %.1f us, "
				"the last chunk %.1f us\n", lk->ti.name, lk->st->name,
				(unsigned long long)b->g_n[k], k == 2 ? "prefill" : k == 1 ? "decode" : "small", b->g_ring_s[k] / (double)b->g_n[k] * 1e6,
				b->g_ans_s[k] / (double)b->g_n[k] * 1e6, b->g_pool_s[k] / (double)b->g_n[k] * 1e6,
				b->g_first_s[k] / (double)b->g_n[k] * 1e6, b->g_span_s[k] / (double)b->g_n[k] * 1e6,
				b->g_tail_s[k] / (double)b->g_n[k] * 1e6, b->g_copy0_s[k] / (double)b->g_n[k] * 1e6,
				b->g_copyl_s[k] / (double)b->g_n[k] * 1e6);
	for (int k = 0; k < LK_AUTO_NCLASS; k++)
		if (b->st_reqs[k] && b->trace)
			fprintf(stderr, "eht: %s (%s): %llu stream-triggered requests of %.0f rows on average: CPU waited "
				"%.1f us for free staging, gathered in %.1f us (%.1f M rows/s; chunk 0 after %.1f us)\n", lk->ti.name,
				lk->st->name, (unsigned long long)b->st_reqs[k],
				(double)b->st_rows[k] / (double)b->st_reqs[k], b->st_wait_s[k] / (double)b->st_reqs[k] * 1e6,
				b->st_gather_s[k] / (double)b->st_reqs[k] * 1e6,
				(double)b->st_rows[k] / b->st_gather_s[k] / 1e6, b->st_first_s[k] / (double)b->st_reqs[k] * 1e6);
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
	if (b->d_mirror)
		eht_dev_free(b->d_mirror);
	for (unsigned g = 0; g < LK_BG_GROUPS; g++)
		eht_dev_event_destroy(b->bg_copied[g]);
	eht_dev_event_destroy(b->bg_xdone);
	eht_dev_stream_destroy(b->bg_xstream);
	if (b->push_stream)
		eht_dev_stream_sync(b->push_stream);
	eht_dev_event_destroy(b->ev_pushed);
	eht_dev_stream_destroy(b->push_stream);
	if (b->no_kick)
		atomic_fetch_sub(&P.no_kick, 1);
	bell_free(lk, b->arena);
	bell_free(lk, b->h_count);
	bell_free(lk, b->gtrace);
	bell_free(lk, b->staging);
	bell_free(lk, (void *)b->words);
	bell_free(lk, b->cdead);
	if (b->own_h_dead) {
		bell_free(lk, lk->h_dead);
		lk->h_dead = NULL;
	}
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
			bool compact, bool bg, eht_dptr push_dst, bool capturing, unsigned *idx)
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
			    q->compact == compact && q->bg == bg && q->push_dst == push_dst) {
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
	r->bg = bg;
	r->push_dst = bg ? push_dst : 0;
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
	poller_kick();
}

void eht_lk_bell_no_kick(eht_lookup *lk)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	if (!b->no_kick) { /* counted once: fini takes one back */
		b->no_kick = true;
		atomic_fetch_add(&P.no_kick, 1);
	}
}

static void bell_disarm(unsigned idx, struct lk_req *r)
{
	if (idx < LK_EAGER_REQS && atomic_exchange(&r->armed, false))
		atomic_fetch_sub(&P.pending, 1);
}

/* The start of every stream-triggered request's enqueue: armed before the stream can ring (the
 * poller ignores a ring of a request that is not); under capture nothing will wake the poller for
 * its rings, so the idle poller naps while they may come. */
static void bell_start(eht_lookup *lk, unsigned idx, bool capturing)
{
	eht_lk_bell_arm(lk, idx);
	if (capturing)
		eht_lk_bell_no_kick(lk);
}

/* Its end, given what the enqueue returned: an eager request records its done event; on an error
 * the request is disarmed. */
static int bell_finish(eht_lookup *lk, eht_stream s, unsigned idx, bool capturing, int rc)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	struct lk_req *r = &b->reqs[idx];
	if (rc) {
		bell_disarm(idx, r);
		return rc;
	}
	if (!capturing && !(rc = eht_dev_event_record(r->done, s)))
		r->done_used = true;
	return rc;
}

/* Enqueues request idx's stage-in kernel (a: everything but the request's own fields). */
static int bell_launch(eht_lookup *lk, struct eht_gpu_stage_in *a, size_t n, eht_dptr out, eht_stream s,
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
	a->mirror = b->d_mirror;
	eht_lk_bell_geom(lk, n, &a->chunk, &a->nslots);
	a->tag = (uint32_t)idx << LK_TAG_SHIFT;
	bell_start(lk, idx, capturing);
	int rc = eht_gpu_stage_in(&lk->g, s, a, n, lk->rb, out, lk->d_counters);
	return bell_finish(lk, s, idx, capturing, rc);
}

/* Background mode (EHT_LOOKUP_BACKGROUND): nothing on an SM waits for the CPU. The stream copies GPU
 * ids to pinned memory (copy engine), rings the doorbell (cuStreamWriteValue32), then bg_groups
 * moves the rows group by group. */

/* Per group of request idx: wait for its ready value (cuStreamWaitValue32), copy it from staging to
 * dst (copy engine) and, when expand, dequantize it into out (a small kernel, the SM cap): on the
 * dequant stream after the group's copy (an event), else behind the copy on s. Then one memset frees
 * every group's ready word (the CPU's next request waits for that before it reuses the staging; one
 * node instead of a write per group), and s joins the dequant stream. On the copies' stream each
 * dequant, waiting for SMs beside the model, also held up the next group's copy. Measured on the H200
 * (eht bench step, prefill, 2 x 24 GiB, back to back, three runs of each alternated): HOST background
 * added +0.16 / +0.74 / +0.55 ms with the dequant stream against +1.18 / +0.77 / +1.12 ms without,
 * AUTO background +0.35 / +0.62 / +0.19 against +1.44 / +1.38 / +1.22 ms. */
static int bg_groups(eht_lookup *lk, eht_stream s, unsigned idx, size_t n, eht_dptr dst, eht_dptr out, bool expand)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	const eht_dptr d_ready = b->d_words + LK_REQS * sizeof(uint32_t);
	uint32_t groups, grows;
	eht_lk_bell_bg_geom(lk, n, &groups, &grows);
	const bool per_group = expand && n > LK_BG_DEQUANT_ROWS;
	const eht_stream xs = per_group ? b->bg_xstream : NULL; /* (groups <= LK_BG_GROUPS events) */
	int rc = 0;
	for (uint32_t g = 0; g < groups && !rc; g++) {
		size_t r0 = (size_t)g * grows, m = n - r0 < grows ? n - r0 : grows;
		rc = eht_dev_stream_wait32(s, d_ready + g * sizeof(uint32_t), LK_READY(idx, g), EHT_WAIT_EQ);
		if (!rc)
			rc = eht_dev_h2d_async(dst + r0 * lk->rb, b->staging + r0 * lk->rb, m * lk->rb, s);
		if (rc || !per_group)
			continue;
		if (xs) {
			rc = eht_dev_event_record(b->bg_copied[g], s);
			if (!rc)
				rc = eht_dev_stream_wait_event(xs, b->bg_copied[g]);
		}
		if (!rc)
			rc = eht_gpu_expand(&lk->g, xs ? xs : s, 0, m, dst + r0 * lk->rb, lk->rb, out + r0 * lk->out_rb,
					    lk->fmt);
		if (!rc && xs)
			b->bg_side_dequants++;
	}
	if (!rc)
		rc = eht_dev_memset32_async(d_ready, 0, groups, s);
	if (!rc && expand && !per_group)
		rc = eht_gpu_expand(&lk->g, s, 0, n, dst, lk->rb, out, lk->fmt);
	/* (after an error too: a capture must not leave the dequant stream forked) */
	if (xs) {
		int jrc = eht_dev_event_record(b->bg_xdone, xs);
		if (!jrc)
			jrc = eht_dev_stream_wait_event(s, b->bg_xdone);
		rc = rc ? rc : jrc;
	}
	return rc;
}

/* A pushed request on the stream (bg_piece, bg_compact): the ring kernel (the ids or distinct rows
 * into pinned memory, the done word cleared, the doorbell), then one wait for the done word, which
 * the CPU sets once its own copies have moved every group into GPU memory. Two nodes where the
 * stream-driven way has a copy and a wait per group, a copy of the ids, a write and a memset: on the
 * lent H200 a graph's launch call pays about 1.7 us per copy node touching host memory and 1.3 us
 * per memory op, next to nothing per kernel node, and a synced decode step pays that launch. */
static int push_ring_wait(eht_lookup *lk, eht_stream s, unsigned idx, struct eht_gpu_ring *a)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	a->h_ids = b->reqs[idx].d_h_ids;
	a->done = d_done(b, lk, idx);
	a->bell = b->d_words + idx * sizeof(uint32_t);
	a->sync = b->d_sync + idx * 2 * sizeof(uint32_t);
	int rc = eht_gpu_ring(&lk->g, s, a);
	return rc ? rc : eht_dev_stream_wait32(s, a->done, 1u, EHT_WAIT_EQ);
}

/* Background requests are pushed (EHT_LOOKUP_BG_PUSH) unless their bf16 rows are
 * dequantized group by group (prefill: bg_groups' dequant stream), which needs the stream to see
 * each group arrive. */
static bool bg_pushed(const eht_lookup *lk, size_t n)
{
	const struct lk_bell *b = &eht_lk_host(lk)->bell;
	return b->bg_push && (lk->fmt == EHT_LOOKUP_RAW || n <= LK_BG_DEQUANT_ROWS);
}

static int bg_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n, eht_dptr out,
		    eht_stream es, bool capturing)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	const bool raw = lk->fmt == EHT_LOOKUP_RAW, push = bg_pushed(lk, n);
	const eht_dptr dst = raw ? out : lk->scr.d_compact;
	unsigned idx;
	int rc = eht_lk_bell_prepare(lk, ids, ids_dev, id64, off, n, false, true, push ? dst : 0, capturing, &idx);
	if (rc)
		return rc;
	struct lk_req *r = &b->reqs[idx];
	bell_start(lk, idx, capturing);
	if (push) {
		struct eht_gpu_ring a = {.ids = ids_dev ? (eht_dptr)(uintptr_t)ids : 0,
					 .id_words = ids_dev ? n * (id64 ? 2 : 1) : 0, .n = n};
		if (!rc)
			rc = push_ring_wait(lk, es, idx, &a);
		if (!rc && !raw)
			rc = eht_gpu_expand(&lk->g, es, 0, n, dst, lk->rb, out, lk->fmt);
		return bell_finish(lk, es, idx, capturing, rc);
	}
	if (!rc && ids_dev)
		rc = eht_dev_d2h_async(r->h_ids, (eht_dptr)(uintptr_t)ids, n * (id64 ? 8 : 4), es);
	if (!rc)
		rc = eht_dev_stream_write32(es, b->d_words + idx * sizeof(uint32_t), 1);
	if (!rc) {
		bool raw = lk->fmt == EHT_LOOKUP_RAW;
		rc = bg_groups(lk, es, idx, n, raw ? out : lk->scr.d_compact, out, !raw);
	}
	return bell_finish(lk, es, idx, capturing, rc);
}

int eht_lk_bell_piece(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t n,
		      eht_dptr out, eht_stream s, bool capturing, bool publish_dead)
{
	/* Background: the run's only piece (its dead count is the CPU's) and a request that fits the
	 * staging whole (groups never wrap). */
	if (lk->background && publish_dead && n <= eht_lk_host(lk)->bell.staging_rows)
		return bg_piece(lk, ids, ids_dev, id64, off, n, out, s, capturing);
	unsigned idx;
	int rc = eht_lk_bell_prepare(lk, ids, ids_dev, id64, off, n, false, false, 0, capturing, &idx);
	if (rc)
		return rc;
	/* The kernel copies GPU ids into the pinned copy itself (a copy on the stream before it measured
	 * microseconds of extra latency per step). */
	struct eht_gpu_stage_in a = {.ids = ids_dev ? (eht_dptr)(uintptr_t)ids : 0,
				     .id_bytes = n * (id64 ? 8 : 4)};
	/* bf16: the kernel moves the raw rows into the scratch (HOST's init made it; n <= max_batch <=
	 * compact_rows) and one expand dequantizes them there from GPU memory. Measured on the H200
	 * (graph, GPU ids, 24 GiB): a block's raw copy of a chunk out of staging takes half the time of
	 * dequantizing it on the way, and the lookup with the expand after it took 92 against 113 us for
	 * decode, 1.34 against 2.06 ms for prefill. */
	if (lk->fmt == EHT_LOOKUP_RAW)
		return bell_launch(lk, &a, n, out, s, capturing, publish_dead, idx);
	rc = bell_launch(lk, &a, n, lk->scr.d_compact, s, capturing, publish_dead, idx);
	return rc ? rc : eht_gpu_expand(&lk->g, s, 0, n, lk->scr.d_compact, lk->rb, out, lk->fmt);
}

/* Background mode for the distinct misses of a dedup pass (a hot set, GPU dedup), all of them the
 * CPU's: as bg_piece, but their count exists only on the GPU. The stream copies it and the bound's
 * local rows to pinned memory before it rings; the CPU gathers that many and publishes every group of
 * the bound (those past the count at once, empty); the copy engine moves whole groups into compact
 * (rows past the count are never read: the hot path's expand takes them by code). Its dead count is
 * the dedup pass's (lk->d_counters[0]), copied to lk->h_dead at the end with publish_dead. */
static int bg_compact(eht_lookup *lk, eht_dptr uniq, eht_dptr ucount, eht_dptr compact, size_t n, eht_stream s,
		      bool capturing, bool publish_dead)
{
	struct lk_bell *b = &eht_lk_host(lk)->bell;
	const bool push = b->bg_push;
	unsigned idx;
	int rc = eht_lk_bell_prepare(lk, (const void *)(uintptr_t)uniq, true, 0, lk->lo, n, true, true, push ? compact : 0,
				     capturing, &idx);
	if (rc)
		return rc;
	struct lk_req *r = &b->reqs[idx];
	bell_start(lk, idx, capturing);
	if (push) {
		struct eht_gpu_ring a = {.ids = uniq, .ucount = ucount, .n = n,
					 .h_count = b->d_h_count + idx * sizeof(uint64_t),
					 .dead = publish_dead ? lk->d_counters : 0, .h_dead = publish_dead ? lk->d_h_dead : 0};
		if (!rc)
			rc = push_ring_wait(lk, s, idx, &a);
		return bell_finish(lk, s, idx, capturing, rc);
	}
	if (!rc)
		rc = eht_dev_d2h_async(&b->h_count[idx], ucount, sizeof(uint64_t), s);
	if (!rc)
		rc = eht_dev_d2h_async(r->h_ids, uniq, n * sizeof(uint32_t), s);
	if (!rc)
		rc = eht_dev_stream_write32(s, b->d_words + idx * sizeof(uint32_t), 1);
	if (!rc)
		rc = bg_groups(lk, s, idx, n, compact, 0, false);
	if (!rc && publish_dead)
		rc = eht_dev_d2h_async(lk->h_dead, lk->d_counters, sizeof(uint64_t), s);
	return bell_finish(lk, s, idx, capturing, rc);
}

int eht_lk_bell_compact(eht_lookup *lk, eht_dptr uniq, eht_dptr ucount, eht_dptr compact, float share,
			size_t n, eht_stream s, bool capturing, bool publish_dead)
{
	/* Background: every distinct miss the CPU's, a request that fits the staging whole (on the lent
	 * H200 a text decode step's lookups added +93 us that way against +317 us through the stage-in
	 * kernel). */
	if (lk->background && share <= 0.0f && publish_dead && n <= eht_lk_host(lk)->bell.staging_rows)
		return bg_compact(lk, uniq, ucount, compact, n, s, capturing, publish_dead);
	unsigned idx;
	/* u32 local rows: off = lo makes them absolute for the CPU's gather */
	int rc = eht_lk_bell_prepare(lk, (const void *)(uintptr_t)uniq, true, 0, lk->lo, n, true, false, 0, capturing,
				     &idx);
	if (rc)
		return rc;
	struct eht_gpu_stage_in a = {.ids = uniq, .id_bytes = n * 4, .ucount = ucount, .share = share,
				     .h_count = eht_lk_host(lk)->bell.d_h_count + idx * sizeof(uint64_t)};
	return bell_launch(lk, &a, n, compact, s, capturing, publish_dead, idx);
}
