/* SPDX-License-Identifier: Apache-2.0 */
/* poller.c: the process's one doorbell poller (poller.h): a thread that watches every engine's
 * doorbells and has the pool serve each request that rang (serve.c); the kicks that wake it, and the
 * arming of a request around its enqueue. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "lookup/gather/bell/poller.h"
#include "lookup/gather/bell/requests.h"
#include "lookup/gather/bell/serve.h"
#include "lookup/gather/rows.h"
#include "util/clock.h"
#include "util/cpu.h"
#include "util/err.h"
#include "util/futex.h"
#include "util/thread.h"
#include "util/settings.h"
#include "util/pool.h"

#define MAX_ENGINES 256
/* How long the pool's threads woken by an eager arm spin for its gather at most (the gather's start
 * ends it): an eager call's ring follows its arm within microseconds unless its stream is busy. */
#define ARM_WARM_NS 200000u

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
	/* The next captured ring's window (0: none predicted). The poller alone writes it, with mu held;
	 * it reads it without (eht_lk_poller_window, for the tests, takes mu). */
	double win_from, win_until;
} P = {.life = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER};

/* Takes request i's ring (the poller, with P.mu held) and serves it when it is armed: a ring of a
 * request torn down is not ours to serve. */
static void take_ring(eht_lookup *lk, unsigned i)
{
	struct lk_bell *b = lk->bell;
	struct lk_req *r = &b->reqs[i];
	atomic_store_explicit(&eht_lk_bells(b)[i], 0, memory_order_relaxed);
	if (!atomic_load_explicit(&r->armed, memory_order_acquire))
		return;
	if (i < LK_EAGER_REQS) {
		atomic_store_explicit(&r->armed, false, memory_order_relaxed);
		atomic_fetch_sub(&P.pending, 1);
	} else {
		eht_lk_ring_seen(&r->clock, eht_now_s());
	}
	eht_lk_bell_serve(lk, i);
}

/* The earliest window, ending after now, in which a captured request of any engine is due to ring
 * (ring_clock.h), into *from and *until; both 0 when none is (with P.mu held). */
static void next_ring_window(double now, double *from, double *until)
{
	*from = *until = 0;
	for (unsigned e = 0; e < P.n; e++) {
		struct lk_bell *b = P.engines[e]->bell;
		unsigned scan = atomic_load_explicit(&b->scan, memory_order_acquire);
		for (unsigned i = LK_EAGER_REQS; i < scan; i++) {
			double f, u;
			if (eht_lk_ring_window(&b->reqs[i].clock, &f, &u) && u > now && (*until == 0 || f < *from)) {
				*from = f;
				*until = u;
			}
		}
	}
}

/* Polls every doorbell while requests come and, after the last ring or kick, for EHT_BELL_SPIN_US
 * (100; the second table's request of a step follows the first within microseconds) or, when the
 * last idle gaps were all under 1 ms (back-to-back calls), twice the longest of them. Then it sleeps
 * on the kick futex: an eager call wakes it. It naps 50 us at most while an eager request is armed
 * but has not rung (its stream may be busy), or captured requests exist (nothing wakes the poller
 * for their rings) and a ring came in the last second; 1 ms otherwise. A captured request that rings
 * at a steady period (a model's step graph, replayed) is due in a window (ring_clock.h): the poller
 * spins through it instead of finding the ring at a nap's end, up to 50 us and a wake-up late. On an
 * H100 (eht bench step, decode, 2 x 24 GiB, --trace, two runs, one process each way) the model's
 * stream waited 3.4-3.7 us at the joins with the windows against 9.6-10.4 without (the copies alone
 * 7 us), and the background call added +15 / +45 us over the copies back to back against +54 / +138
 * (pair by pair +28 / +51 against +50 / +135; synced +10 / +9 against +23 / +12), for 0.1 ms more
 * CPU a step (an earlier H100 measured no gain from a similar prediction: docs/BENCHMARKS.md). A
 * prefill step's first join waited as long either way (94 us, with 8 background groups). */
static void *poll_main(void *arg)
{
	(void)arg;
	eht_thread_name(EHT_THREAD_BELL);
	prctl(PR_SET_TIMERSLACK, 1000UL); /* naps of tens of microseconds, not the default 50 us slack */
	const double spin_min = (double)eht_setting_u64(EHT_SET_BELL_SPIN_US) * 1e-6, spin_max = 1e-3;
	double spin_s = spin_min, gaps[4] = {0}, last = eht_now_s(), idle_from = -1;
	unsigned seen = atomic_load(&P.kicks), ngaps = 0;
	pthread_mutex_lock(&P.mu);
	P.win_from = P.win_until = 0; /* (a poller before this one may have left one) */
	pthread_mutex_unlock(&P.mu);
	while (!atomic_load(&P.stop)) {
		bool served = false;
		pthread_mutex_lock(&P.mu);
		for (unsigned e = 0; e < P.n; e++) {
			eht_lookup *lk = P.engines[e];
			unsigned scan = atomic_load_explicit(&lk->bell->scan, memory_order_acquire);
			for (unsigned i = 0; i < scan; i++) {
				if (atomic_load_explicit(&eht_lk_bells(lk->bell)[i], memory_order_acquire)) {
					if (idle_from >= 0 && !served) { /* the idle gap this ring ends */
						gaps[ngaps++ % 4] = eht_now_s() - idle_from;
						double g = 0;
						for (unsigned q = 0; q < 4 && q < ngaps; q++)
							g = gaps[q] > g ? gaps[q] : g;
						spin_s = ngaps >= 4 && g <= spin_max ? (2 * g > spin_min ? (2 * g < spin_max ? 2 * g : spin_max) : spin_min) : spin_min;
					}
					take_ring(lk, i);
					served = true;
				}
			}
		}
		/* The clocks change only when a ring is served; a window that passed without its ring
		 * gives way to the next one. */
		double now = eht_now_s();
		if (served || (P.win_until > 0 && now > P.win_until))
			next_ring_window(now, &P.win_from, &P.win_until);
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
		if (t - last < spin_s || (P.win_until > 0 && t >= P.win_from)) {
			eht_cpu_relax();
			continue;
		}
		/* A captured request's ring is seen at a nap's end: 50 us naps, 1 ms ones after a second idle;
		 * one that ends where a ring's window starts. */
		bool pending = atomic_load(&P.pending) != 0;
		bool short_nap = pending || (atomic_load(&P.no_kick) && t - last < 1.0);
		long nap_ns = short_nap ? 50000 : 1000000;
		if (P.win_until > 0 && (P.win_from - t) * 1e9 < (double)nap_ns)
			nap_ns = (long)((P.win_from - t) * 1e9) + 1;
		struct timespec ts = {0, nap_ns};
		atomic_store(&P.napping, true);
		eht_futex(&P.kicks, FUTEX_WAIT, seen, &ts);
		atomic_store(&P.napping, false);
	}
	return NULL;
}

bool eht_lk_poller_window(double *from, double *until)
{
	pthread_mutex_lock(&P.mu);
	*from = P.win_from;
	*until = P.win_until;
	pthread_mutex_unlock(&P.mu);
	return *until > 0;
}

/* Wakes the poller for a request about to ring (safe from any thread, the driver's included). */
static void poller_kick(void)
{
	atomic_fetch_add(&P.kicks, 1); /* seq_cst: either the poller sees it before sleeping, or we see napping */
	if (atomic_load(&P.napping))
		eht_futex(&P.kicks, FUTEX_WAKE, 1, NULL);
}

int eht_lk_poller_join(eht_lookup *lk)
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
		lk->bell->registered = true;
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
	lk->bell->registered = false;
	pthread_mutex_unlock(&P.life);
}

void eht_lk_poller_leave(eht_lookup *lk)
{
	if (lk->bell->registered)
		poller_remove(lk);
	if (lk->bell->no_kick) /* (its captured requests go with it) */
		atomic_fetch_sub(&P.no_kick, 1);
}

/* ------------------------------------------------------------------- a request around its enqueue */
void eht_lk_bell_arm(eht_lookup *lk, unsigned idx)
{
	if (idx >= LK_EAGER_REQS)
		return;
	atomic_store_explicit(&lk->bell->reqs[idx].armed, true, memory_order_release);
	atomic_fetch_add(&P.pending, 1);
	poller_kick();
	/* The ring follows within microseconds on an idle stream: the pool's sleeping threads are woken
	 * now, beside the poller, not after it serves the ring (on a VM each wake starts tens of us late). */
	if (lk->pool) {
		const size_t n = lk->bell->reqs[idx].n, chunk = eht_lk_chunk_for(lk, n ? n : 1);
		const size_t tasks = (n + chunk - 1) / chunk; /* the gather's, about: its threads at most */
		eht_pool_warm(lk->pool, eht_now_ns() + ARM_WARM_NS, tasks > UINT_MAX ? UINT_MAX : (unsigned)tasks);
	}
}

/* lk's captured requests ring without waking the poller (nothing beside their kernels does): the
 * idle poller naps while they may ring (what every capture does). */
static void eht_lk_bell_no_kick(eht_lookup *lk)
{
	struct lk_bell *b = lk->bell;
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
void eht_lk_bell_start(eht_lookup *lk, unsigned idx, bool capturing)
{
	eht_lk_bell_arm(lk, idx);
	if (capturing)
		eht_lk_bell_no_kick(lk);
}

/* Its end, given what the enqueue returned: an eager request records its done event; on an error
 * the request is disarmed. */
int eht_lk_bell_finish(eht_lookup *lk, eht_stream s, unsigned idx, bool capturing, int rc)
{
	struct lk_bell *b = lk->bell;
	struct lk_req *r = &b->reqs[idx];
	if (rc) {
		bell_disarm(idx, r);
		return rc;
	}
	if (!capturing && !(rc = eht_dev_event_record(r->done, s)))
		r->done_used = true;
	return rc;
}
