/* SPDX-License-Identifier: Apache-2.0 */
/* auto.c: AUTO: per place of the ids (host or GPU memory) and batch-size class, the side that
 * takes the batch, or the share the GPU's in-place gather takes while the CPU pool gathers the rest at
 * the same time; all of it measured at create on this machine (no constants from another one), and
 * the share of host-id splits following each call's measured times so both sides finish together.
 * It composes HOST (its CPU piece, through the ops) and the gather mechanisms: the in-place gather,
 * the doorbell, the distinct rows' split. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lookup/gather/bell/bell.h"
#include "lookup/gather/distinct.h"
#include "lookup/gather/gather.h"
#include "lookup/gather/inplace.h"
#include "lookup/view.h"
#include "util/err.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/settings.h"

/* Per place of the ids (host, GPU) and batch-size class: which side takes the batch, or what
 * fraction the GPU takes when both gather at once. Calibrated at create; the split fraction then
 * follows each call's measured times, so both sides finish together. */
enum { AUTO_CPU, AUTO_GPU, AUTO_SPLIT };
struct lk_auto {
	int mode;          /* AUTO_CPU (HOST), AUTO_GPU (DIRECT) or AUTO_SPLIT (both) */
	double f;          /* GPU's share of a split batch */
	double f0;         /* the share calibration settled on */
	double t_cpu;      /* last split: seconds of the CPU part */
	size_t k, n;       /* last split: GPU ids, all ids (k == 0: nothing to learn from) */
	bool pending;      /* ev_t0/ev_t1 of the last split not read yet */
};

/* AUTO's state (lk->state[EHT_LOOKUP_AUTO]): it composes HOST and the in-place gather, on the fork. */
struct lk_autos {
	struct lk_auto a[2][LK_AUTO_NCLASS]; /* [ids in GPU memory][class] */
	eht_event ev_t0, ev_t1; /* timing events around the GPU part of a split */
	float force_share; /* EHT_TEST_DEDUP_SHARE: the GPU share of a dedup pass; < 0: calibrated */
};

static struct lk_autos *A(const eht_lookup *lk) { return lk->state[EHT_LOOKUP_AUTO]; }

static int auto_init(eht_lookup *lk)
{
	struct lk_autos *st = calloc(1, sizeof(*st));
	if (!st)
		return eht_err(ENOMEM, "lookup: out of memory");
	lk->state[EHT_LOOKUP_AUTO] = st;
	/* Until calibrated (or where it cannot be: no in-place GPU reads): the CPU pool alone. */
	for (int p = 0; p < 2; p++)
		for (int c = 0; c < LK_AUTO_NCLASS; c++)
			st->a[p][c] = (struct lk_auto){.mode = AUTO_CPU, .f = 0.5, .f0 = 0.5};
	st->force_share = eht_setting_is_set(EHT_SET_TEST_DEDUP_SHARE)
				  ? (float)eht_setting_double(EHT_SET_TEST_DEDUP_SHARE) : -1.0f;
	int rc = eht_lk_strategy_ready(lk, eht_lk_strategy(EHT_LOOKUP_HOST), false);
	if (rc || !lk->gpu)
		return rc;
	rc = eht_lk_fork_init(lk);
	if (!rc)
		rc = eht_dev_event_create(&st->ev_t0, EHT_EVENT_TIMING);
	if (!rc)
		rc = eht_dev_event_create(&st->ev_t1, EHT_EVENT_TIMING);
	return rc;
}

static void auto_fini(eht_lookup *lk)
{
	struct lk_autos *st = A(lk);
	if (!st)
		return;
	if (st->ev_t0)
		eht_dev_event_destroy(st->ev_t0);
	if (st->ev_t1)
		eht_dev_event_destroy(st->ev_t1);
	free(st);
	lk->state[EHT_LOOKUP_AUTO] = NULL;
}

/* Ids [0, k) of an n-id batch go to the GPU's in-place gather. */
static size_t split_k(const struct lk_auto *a, size_t n)
{
	size_t k = a->mode == AUTO_GPU ? n : 0;
	if (a->mode == AUTO_SPLIT && eht_setting_bool(EHT_SET_LOOKUP_AUTO_SPLIT)) {
		k = (size_t)((double)n * a->f);
		if (k < 256 && k < n) /* a sliver is not worth a kernel launch */
			k = 0;
	}
	return k;
}

static uint64_t count_dead(const eht_lookup *lk, const void *ids, int id64, int64_t off, size_t n)
{
	uint64_t d = 0;
	for (size_t i = 0; i < n; i++)
		d += eht_lk_local(ids, id64, i, off, lk->lo, lk->hi) == LK_DEAD;
	return d;
}

/* Learns from the last host-id split of class a, once its GPU part has finished: the rates both
 * sides had while running together give the fraction at which they finish together (moving average). */
static void auto_learn(eht_lookup *lk, struct lk_auto *a)
{
	struct lk_autos *st = A(lk);
	if (!a->pending || eht_dev_event_done(st->ev_t1) != 1)
		return;
	a->pending = false;
	float ms = 0;
	if (eht_dev_event_ms(&ms, st->ev_t0, st->ev_t1) != 0 || ms <= 0 || a->t_cpu <= 0 ||
	    a->k == 0 || a->k >= a->n)
		return;
	double rg = (double)a->k / (ms * 1e-3), rc = (double)(a->n - a->k) / a->t_cpu;
	double target = rg / (rg + rc);
	a->f = 0.7 * a->f + 0.3 * target;
	/* Within a factor of the calibrated share: one odd measurement must not move the whole batch. */
	double lo = a->f0 * 0.5, hi = a->f0 * 1.5 < 0.95 ? a->f0 * 1.5 : 0.95;
	a->f = a->f < lo ? lo : a->f > hi ? hi : a->f;
}

/* Forks ids [0, k) to the in-place gather on the side stream (events, so a capture follows it). */
static int fork_direct(eht_lookup *lk, const void *ids, bool ids_dev, int id64, int64_t off, size_t k,
		       eht_dptr out, eht_stream s, bool timed)
{
	struct lk_autos *st = A(lk);
	int rc = eht_lk_fork(lk, s);
	if (!rc && timed)
		rc = eht_dev_event_record(st->ev_t0, lk->fork.side);
	if (!rc)
		rc = eht_lk_inplace_piece(lk, ids, ids_dev, id64, off, k, out, lk->fork.side);
	if (!rc && timed)
		rc = eht_dev_event_record(st->ev_t1, lk->fork.side);
	if (!rc)
		rc = eht_dev_event_record(lk->fork.ev_join, lk->fork.side);
	return rc;
}

/* Host ids, read now by the calling thread: the calibrated side takes the batch, or ids [0, k) go to
 * the in-place gather on the side stream and [k, n) to HOST on s, both at once. */
static int auto_cpu(eht_lookup *lk, struct lk_piece *p)
{
	const struct lk_strategy *host = eht_lk_strategy(EHT_LOOKUP_HOST);
	if (!p->out_dev || !lk->table_gpu || !lk->in_memory || (lk->flags & EHT_LOOKUP_HOST_SORT))
		return host->cpu_piece(lk, p);
	struct lk_auto *a = &A(lk)->a[0][LK_AUTO_CLASS(p->n)];
	auto_learn(lk, a);
	size_t n = p->n, k = split_k(a, n), isz = p->id64 ? 8 : 4;
	bool timed = k && k < n && !a->pending;
	eht_dptr out = (eht_dptr)(uintptr_t)p->out;
	int rc = 0;
	if (k == n) { /* the GPU counts into its counter, which this (host-counted) run does not read */
		*p->dead += count_dead(lk, p->ids, p->id64, p->off, n);
		return eht_lk_inplace_piece(lk, p->ids, false, p->id64, p->off, n, out, p->s);
	}
	if (k && (rc = fork_direct(lk, p->ids, false, p->id64, p->off, k, out, p->s, timed)))
		return rc;
	double t0 = eht_now_s();
	struct lk_piece rest = *p;
	rest.ids = (const uint8_t *)p->ids + k * isz;
	rest.n = n - k;
	rest.out = (uint8_t *)p->out + k * lk->out_rb;
	rc = host->cpu_piece(lk, &rest);
	if (timed && !rc) {
		a->t_cpu = eht_now_s() - t0;
		a->k = k;
		a->n = n;
		a->pending = true;
	}
	if (k) {
		*p->dead += count_dead(lk, p->ids, p->id64, p->off, k); /* the GPU part, counted while it runs */
		int jrc = eht_lk_join(lk, p->s);
		if (!rc)
			rc = jrc;
	}
	return rc;
}

/* Ids the calling thread does not read (GPU memory, a capture, or a large eager batch of host ids:
 * LK_BELL_HOST_IDS_MIN): the same split, the CPU part triggered by the stream (gather/bell/). With
 * host ids in a capture the GPU cannot read the ids: CPU. */
static int auto_gpu(eht_lookup *lk, struct lk_piece *p)
{
	size_t n = p->n, k = 0, isz = p->id64 ? 8 : 4;
	if (lk->table_gpu && (p->ids_dev || !p->capture))
		k = split_k(&A(lk)->a[p->ids_dev ? 1 : 0][LK_AUTO_CLASS(n)], n);
	eht_dptr out = (eht_dptr)(uintptr_t)p->out;
	if (k == n) /* (from the view itself where it is the run's only piece) */
		return eht_lk_inplace_whole(lk, p);
	int rc = k ? eht_lk_piece_flatten(p) : 0; /* (a split's in-place part reads flat ids) */
	if (rc)
		return rc;
	if (k && (rc = fork_direct(lk, p->ids, p->ids_dev, p->id64, p->off, k, out, p->s, false)))
		return rc;
	p->dead_published = p->publish_dead && k == 0;
	rc = eht_lk_bell_piece(lk, (const uint8_t *)p->ids + k * isz, p->ids_dev, p->id64, p->off, n - k,
			       out + k * lk->out_rb, p->s, p->capture, p->dead_published, p->view);
	if (k) {
		int jrc = eht_lk_join(lk, p->s);
		if (!rc)
			rc = jrc;
	}
	return rc;
}

/* ------------------------------------------------------------------- calibration */
/* Times one shape: the median of reps after one warm-up run (medians: one slow run, e.g. a pool
 * thread that was asleep, must not decide). d_ids: ids in GPU memory (copied there untimed), else
 * host ids. Returns seconds, or a negative errno. */
static double time_runs(eht_lookup *lk, int64_t *ids, eht_dptr d_ids, size_t n, eht_dptr out, int strategy,
			int reps, uint64_t *seed)
{
	double t[16];
	uint64_t rows = (uint64_t)(lk->hi - lk->lo);
	if (reps > 16)
		reps = 16;
	for (int rep = 0; rep <= reps; rep++) {
		/* Fresh uniform ids every run, as Engram hashes give: repeating ids would let the GPU's
		 * translation caches make in-place reads look several times faster than they are. */
		uint64_t x = *seed;
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			ids[i] = lk->lo + (int64_t)(x % rows);
		}
		*seed = x;
		int rc = d_ids ? eht_dev_h2d(d_ids, ids, n * sizeof(*ids)) : 0;
		if (!rc && d_ids)
			rc = eht_dev_sync();
		if (rc)
			return rc;
		double t0 = eht_now_s();
		unsigned fl = EHT_LOOKUP_RUN_OUT_DEVICE | EHT_LOOKUP_RUN_STRATEGY(strategy) |
			      (d_ids ? EHT_LOOKUP_RUN_IDS_DEVICE : EHT_LOOKUP_RUN_IDS_HOST);
		rc = eht_lookup_run(lk, d_ids ? (const void *)(uintptr_t)d_ids : ids, EHT_ID_INT64, 0, n,
				    (void *)(uintptr_t)out, NULL, fl, NULL);
		if (!rc)
			rc = eht_dev_sync();
		if (rc)
			return rc;
		if (rep)
			t[rep - 1] = eht_now_s() - t0;
	}
	for (int i = 1; i < reps; i++) /* insertion sort of a handful */
		for (int k = i; k > 0 && t[k - 1] > t[k]; k--) {
			double x = t[k];
			t[k] = t[k - 1];
			t[k - 1] = x;
		}
	return t[reps / 2];
}

/* For each place of the ids and batch-size class, times DIRECT alone, HOST alone and both at once
 * (at three GPU shares) on uniform ids (the shape of Engram lookups), and keeps the fastest for AUTO.
 * The two gatherers share the host's memory and IOMMU, so running both at once is not always a win;
 * measuring is the only honest way to choose. */
static void auto_calibrate(eht_lookup *lk)
{
	if (!lk->table_gpu || !lk->kernels || !lk->in_memory || lk->background) /* background: always HOST */
		return;
	/* 128: a tp-8 rank's 768-id decode step is in class 1; 48 ids (a tp-4 rank's 8 tokens) took 31-32
	 * us as a HOST graph on the lent H200 against 18-20 through DIRECT, while at 1,024 ids the two
	 * tie (0.049 against 0.050 ms), so one class for both kept HOST for the tiny batches. */
	const size_t sizes[LK_AUTO_NCLASS] = {128, 1024, 6144, 196608};
	size_t nmax = lk->max_batch < sizes[LK_AUTO_NCLASS - 1] ? lk->max_batch : sizes[LK_AUTO_NCLASS - 1];
	uint64_t rows = (uint64_t)(lk->hi - lk->lo);
	if (rows == 0 || nmax < 256)
		return;
	int64_t *ids = malloc(nmax * sizeof(*ids));
	eht_dptr out = 0, d_ids = 0;
	if (!ids || eht_dev_alloc(&out, nmax * lk->out_rb) != 0 ||
	    eht_dev_alloc(&d_ids, nmax * sizeof(*ids)) != 0) {
		eht_warn("lookup: calibration skipped (%s)", eht_last_error());
		goto out;
	}
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	for (int place = 0; place < 2; place++) {
		if (place == 1 && !lk->bell)
			break; /* GPU ids then go through the old synchronous path: CPU */
		for (int c = 0; c < LK_AUTO_NCLASS; c++) {
			size_t n = sizes[c] < nmax ? sizes[c] : nmax;
			struct lk_auto *a = &A(lk)->a[place][c];
			eht_dptr di = place ? d_ids : 0;
			int reps = c < LK_AUTO_NCLASS - 1 ? 9 : 5;
			double td = time_runs(lk, ids, di, n, out, EHT_LOOKUP_DIRECT, reps, &seed);
			double th = time_runs(lk, ids, di, n, out, EHT_LOOKUP_HOST, reps, &seed);
			if (td < 0 || th < 0) {
				eht_warn("lookup: calibration failed (%s); AUTO uses HOST", eht_last_error());
				goto out;
			}
			/* Both at once: th / (td + th) would have both sides finish together if they did not
			 * slow each other down, but they share the link and the host's memory, so smaller
			 * GPU shares are timed too and the fastest kept. */
			const double ideal = th / (td + th), scale[] = {1.0, 0.5, 0.25};
			double ts = 1e30, fs = ideal;
			for (size_t i = 0; i < sizeof(scale) / sizeof(scale[0]); i++) {
				double f = ideal * scale[i];
				*a = (struct lk_auto){.mode = AUTO_SPLIT, .f = f, .f0 = f};
				if (split_k(a, n) == 0)
					break; /* a share that small is not split (split_k): neither is a smaller one */
				double t = time_runs(lk, ids, di, n, out, EHT_LOOKUP_AUTO, reps + 4, &seed);
				if (t >= 0 && t < ts)
					ts = t, fs = f;
			}
			*a = (struct lk_auto){.mode = AUTO_SPLIT, .f = fs, .f0 = fs};
			/* HOST unless another choice is clearly (5%) faster: it has the steadiest times. */
			double best = th;
			a->mode = AUTO_CPU;
			if (td < 0.95 * best) {
				a->mode = AUTO_GPU;
				best = td;
			}
			if (ts < 0.95 * best)
				a->mode = AUTO_SPLIT;
			a->f0 = a->f;
			char both[64] = "both at once: not split at this size";
			if (ts < 1e30)
				snprintf(both, sizeof(both), "both at once %.3f ms (GPU share %.2f)", ts * 1e3, a->f);
			eht_info("lookup %s, %zu ids in %s memory: DIRECT %.3f ms, HOST %.3f ms, %s: AUTO uses %s",
				 lk->ti.name, n, place ? "GPU" : "host", td * 1e3, th * 1e3, both,
				 a->mode == AUTO_SPLIT ? "both" : a->mode == AUTO_GPU ? "direct" : "host");
			if (n == nmax) { /* batches never reach the larger classes: the same choice */
				for (int k = c + 1; k < LK_AUTO_NCLASS; k++)
					A(lk)->a[place][k] = *a;
				break;
			}
		}
	}
out:
	if (out)
		eht_dev_free(out);
	if (d_ids)
		eht_dev_free(d_ids);
	free(ids);
	lk->last.strategy = -1;
}

/* Where AUTO cannot split (host output, no in-place GPU reads, no kernels): HOST. */
static const struct lk_strategy *auto_resolve(eht_lookup *lk, const struct lk_strategy *self,
					      const struct lk_call *c)
{
	/* Background mode: no in-place share beside the model (measured in eht bench step: it costs the
	 * step more than it saves), so AUTO is HOST there. */
	if (!c->out_dev || !lk->table_gpu || !lk->kernels || lk->background)
		return eht_lk_strategy(EHT_LOOKUP_HOST);
	return self;
}

/* The GPU's share of a dedup pass's distinct misses: as calibrated for ids in GPU memory. */
static float miss_share(const eht_lookup *lk, size_t n)
{
	const struct lk_autos *st = A(lk);
	if (!lk->table_gpu)
		return 0.0f;
	if (st->force_share >= 0.0f)
		return st->force_share > 1.0f ? 1.0f : st->force_share;
	const struct lk_auto *a = &st->a[1][LK_AUTO_CLASS(n)];
	return a->mode == AUTO_GPU ? 1.0f : a->mode == AUTO_SPLIT ? (float)a->f : 0.0f;
}

static int auto_distinct(eht_lookup *lk, struct lk_piece *p, const struct lk_distinct *d)
{
	return eht_lk_gather_distinct(lk, p, d, miss_share(lk, p->n));
}

const struct lk_strategy eht_lk_auto = {
	.id = EHT_LOOKUP_AUTO,
	.name = "auto",
	.caps = LK_CAPTURABLE | LK_VIEW_IDS,
	.init = auto_init,
	.fini = auto_fini,
	.calibrate = auto_calibrate,
	.resolve = auto_resolve,
	.gpu_piece = auto_gpu,
	.cpu_piece = auto_cpu,
	.gather_distinct = auto_distinct,
};
