/* SPDX-License-Identifier: Apache-2.0 */
/* lookup.c: eht_lookup: options, the engine's geometry, pool and GPU core, the chosen strategy's init
 * (its own state and the gather mechanisms it uses; strategy.c), and the per-call dispatch of a
 * run's pieces through the strategy's ops: its GPU piece, its CPU piece, or the hot cache's
 * (hot/hot.c) around its gather of the distinct misses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lookup/core.h"
#include "lookup/gather/cpu_pool.h"
#include "lookup/gather/gather.h"
#include "lookup/gather/bell/requests.h"
#include "lookup/gather/stage.h"
#include "lookup/hot/hot.h"
#include "lookup/view.h"
#include "lookup/gather/metrics.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"
#include "util/settings.h"

#define DEFAULT_MAX_BATCH 196608u
/* Pool threads spin this long after a job (EHT_POOL_SPIN_US): enough for the second table of a step
 * (its ring follows the first's end within ~20 us), short against a model step's milliseconds between
 * lookups; back-to-back calls get the pool's longer spin (util/pool.c). */

void eht_lookup_destroy(eht_lookup *lk)
{
	if (!lk)
		return;
	if (lk->gpu) {
		eht_dev_use(lk->device);
		if (lk->fork.side)
			eht_dev_stream_sync(lk->fork.side);
		eht_dev_sync(); /* copies may still read staging */
		eht_lk_hot_free(lk);
	}
	eht_lk_strategies_fini(lk);
	if (lk->gpu) {
		eht_lk_gpu_parts_fini(lk);
		eht_gpu_lookup_unload(&lk->g);
	}
	eht_lk_pool_put(lk->pool);
	pthread_mutex_destroy(&lk->run_mu);
	free(lk);
}

/* ------------------------------------------------------------------- create */
/* The options with their defaults, checked against the table. */
static int create_opts(const eht_table *table, const struct eht_lookup_opts *opts, struct eht_lookup_opts *o)
{
	*o = (struct eht_lookup_opts){.size = sizeof(*o), .device = -1, .numa_node = -1};
	int rc = eht_opts_in(o, sizeof(*o), opts, "eht_lookup_create: opts");
	if (rc)
		return rc;
	if (o->flags & ~EHT_LOOKUP_OPTS_FLAGS)
		return eht_err(EINVAL, "eht_lookup_create: unknown flags 0x%x", o->flags & ~EHT_LOOKUP_OPTS_FLAGS);
	if ((o->flags & EHT_LOOKUP_BG_PUSH) && (o->flags & EHT_LOOKUP_BG_STREAM))
		return eht_err(EINVAL, "eht_lookup_create: flags BG_PUSH and BG_STREAM ask for both ways");
	if (!eht_lk_strategy(o->strategy))
		return eht_err(EINVAL, "eht_lookup_create: unknown strategy %d", o->strategy);
	if (o->format != EHT_LOOKUP_RAW && o->format != EHT_LOOKUP_BF16)
		return eht_err(EINVAL, "eht_lookup_create: unknown output format %d", o->format);
	const struct eht_table_info *ti = &table->info;
	if (o->format == EHT_LOOKUP_BF16 && ti->row_bytes != EHT_ENGRAM_ROW_BYTES)
		return eht_err(EINVAL, "lookup: BF16 output needs packed Engram rows of %d bytes; table %s has %llu",
			       EHT_ENGRAM_ROW_BYTES, ti->name, (unsigned long long)ti->row_bytes);
	if (ti->row_bytes == 0 || ti->row_bytes > (1u << 30))
		return eht_err(EINVAL, "lookup: table %s has unsupported row size %llu", ti->name,
			       (unsigned long long)ti->row_bytes);
	if (o->max_batch == 0)
		o->max_batch = DEFAULT_MAX_BATCH;
	if (o->max_batch >= (1ull << 31))
		return eht_err(EINVAL, "lookup: max_batch %llu is over 2^31", (unsigned long long)o->max_batch);
	return 0;
}

/* How the in-place kernels read the table (packed rows at device_ptr, or a split table's two arrays)
 * and whether this engine's GPU can: bf16 from split rows reads 8-byte words of 256 weight and 8
 * scale bytes (the kernels' dequantization), so other split geometries are read by HOST. */
static void geometry_gpu_table(eht_lookup *lk, const eht_table *table)
{
	const struct eht_table_split *sp = &table->split;
	if (sp->w)
		lk->tab = (struct eht_gpu_table){.base = sp->dw, .scales = sp->ds, .rb = lk->rb, .wb = sp->wb};
	else
		lk->tab = (struct eht_gpu_table){.base = lk->ti.device_ptr, .rb = lk->rb};
	const bool fmt_ok = lk->fmt == EHT_LOOKUP_RAW || eht_gpu_table_bf16_ok(&lk->tab);
	lk->table_gpu = lk->gpu && lk->tab.base && lk->ti.device == lk->device && fmt_ok;
}

/* Rows, formats, the device, and the CPU side's geometry (gather/stage.c: staging of at least 64 rows,
 * by default one max_batch of rows). */
static void create_geometry(eht_lookup *lk, eht_table *table, const struct eht_lookup_opts *o)
{
	const struct eht_table_info *ti = &table->info;
	lk->t = table;
	lk->ti = *ti;
	lk->opts = *o;
	lk->rb = (uint32_t)ti->row_bytes;
	lk->fmt = o->format;
	lk->out_rb = o->format == EHT_LOOKUP_BF16 ? 2 * EHT_ENGRAM_DIM : lk->rb;
	lk->st = eht_lk_strategy(o->strategy);
	lk->flags = o->flags;
	lk->max_batch = o->max_batch;
	uint64_t hi = ti->first_row + ti->local_rows;
	lk->lo = (int64_t)ti->first_row;
	lk->hi = (int64_t)(hi < ti->rows ? hi : ti->rows);
	if (lk->hi < lk->lo)
		lk->hi = lk->lo;
	lk->sortable = (uint64_t)(lk->hi - lk->lo) < UINT32_MAX;
	/* A miss on a tier without rows in memory (disk) can cost a storage read: there every batch
	 * deduplicates and consults the hot set. A split table's rows are in memory (two arrays). */
	lk->in_memory = ti->host || table->split.w;
	const bool in_memory = lk->in_memory, dmin_set = eht_setting_is_set(EHT_SET_LOOKUP_DEDUP_MIN);
	const uint64_t dmin = eht_setting_u64(EHT_SET_LOOKUP_DEDUP_MIN);
	lk->dedup_min = dmin_set ? dmin : in_memory ? LK_DEDUP_MIN : 1;
	lk->dedup_min_host = dmin_set ? dmin : in_memory ? LK_DEDUP_MIN_HOST_IDS : 1;
	lk->device = o->device >= 0 ? o->device : ti->device;
	lk->gpu = !(o->flags & EHT_LOOKUP_CPU_ONLY) && lk->device >= 0;
	geometry_gpu_table(lk, table);
	eht_lk_stage_geom(lk->max_batch, lk->rb, o->staging_bytes, &lk->staging_rows, &lk->max_chunks);
	lk->last.strategy = -1;
}

/* The GPU core: the kernels (a failure is an error where the strategy reads the table on the GPU or
 * the output is BF16, else a warning), the SM cap and the background mode, and the parts every GPU
 * engine has (gather/gather.c). */
static int create_gpu(eht_lookup *lk)
{
	int krc = eht_gpu_lookup_load(lk->device, &lk->g);
	lk->kernels = krc == 0;
	lk->g.sm_cap = lk->opts.sm_cap ? lk->opts.sm_cap : (unsigned)eht_setting_u64(EHT_SET_LOOKUP_SM_CAP);
	if ((lk->flags & EHT_LOOKUP_BACKGROUND) || eht_setting_bool(EHT_SET_LOOKUP_BACKGROUND)) {
		lk->background = eht_dev_has(EHT_DEV_FEAT_MEM_OPS);
		if (!lk->background)
			eht_warn_once("lookup: the driver has no stream memory operations; background mode is off");
		/* Beside the model every kernel of the engine leaves half the SMs alone (vLLM's background
		 * grid too). Measured on the lent H200 in `eht bench step`, alternated runs: a cap of half
		 * the SMs with 1024-thread expand blocks added +0.17-0.50 ms to a prefill step synced (none
		 * measurable back to back) against +1.06-1.65 ms with an eighth of the SMs, whose capped
		 * dequant finished late and delayed the layer that consumes the rows; decode a median of
		 * +32 us against +51-67 back to back. */
		if (lk->background && !lk->g.sm_cap && lk->g.sms > 0)
			lk->g.sm_cap = lk->g.sms >= 4 ? (unsigned)lk->g.sms / 2 : 2;
		/* and its small kernels (the ring, the dequant) are scheduled ahead of the model's waiting
		 * blocks, not after the GEMM before them has handed out all of its own. */
		lk->g.urgent = lk->background;
	}
	if (krc && ((lk->st->caps & LK_GPU_TABLE) || lk->fmt == EHT_LOOKUP_BF16))
		return krc;
	if (krc)
		eht_warn_once("lookup: GPU kernels unavailable (%s); HOST only", eht_last_error());
	return eht_lk_gpu_parts_init(lk);
}

/* What the flags and the table allow whatever the strategy. */
static int create_checks(const eht_lookup *lk)
{
	int rc = eht_lk_check_create(lk, lk->st);
	if (!rc && (lk->flags & EHT_LOOKUP_GPU_DEDUP) && (lk->flags & EHT_LOOKUP_CPU_ONLY))
		rc = eht_err(EINVAL, "lookup: GPU_DEDUP and CPU_ONLY together (dedup runs on the GPU)");
	if (!rc && (lk->flags & EHT_LOOKUP_HOST_SORT) && !lk->sortable)
		rc = eht_err(EINVAL, "lookup: HOST_SORT needs fewer than 2^32-1 local rows");
	if (!rc && !lk->ti.host && !lk->sortable)
		rc = eht_err(EINVAL, "lookup: tables without a host pointer need fewer than 2^32-1 local rows");
	return rc;
}

int eht_lookup_create(eht_table *table, const struct eht_lookup_opts *opts, eht_lookup **out)
{
	struct eht_lookup_opts o;
	if (!out)
		return eht_err(EINVAL, "eht_lookup_create: NULL out");
	*out = NULL;
	eht_settings_log_once(); /* one line, at the first engine: the settings that differ from their defaults */
	if (!table)
		return eht_err(EINVAL, "eht_lookup_create: NULL table");
	int rc = create_opts(table, opts, &o);
	if (rc)
		return rc;
	eht_lookup *lk = calloc(1, sizeof(*lk));
	if (!lk)
		return eht_err(ENOMEM, "lookup: out of memory");
	pthread_mutex_init(&lk->run_mu, NULL);
	create_geometry(lk, table, &o);
	if ((rc = create_checks(lk)) || (lk->gpu && (rc = eht_dev_use(lk->device))))
		goto fail;
	/* CPU pool: one per process, NUMA-local, shared by every engine (cpu_pool.c). */
	int node = o.numa_node >= 0 ? o.numa_node : lk->ti.numa_node;
	struct eht_table_copy cp = {.size = sizeof(cp)};
	if (eht_table_copy(table, &cp) != 0)
		cp.pool_threads = 0;
	unsigned spin = o.spin_us ? o.spin_us : (unsigned)eht_setting_u64(EHT_SET_POOL_SPIN_US);
	if ((rc = eht_lk_pool_get(o.threads, cp.pool_threads, node, spin, &lk->pool)))
		goto fail;
	lk->nthreads = eht_pool_size(lk->pool);
	if ((lk->gpu && (rc = create_gpu(lk))) || (rc = eht_lk_strategy_ready(lk, lk->st, false)))
		goto fail;
	lk->st->calibrate(lk);
	lk->ran = false; /* calibration's runs are the engine's own: a hot set may still be set */
	if ((o.flags & EHT_LOOKUP_GPU_DEDUP) && lk->gpu) {
		if (!lk->kernels)
			eht_warn_once("lookup: GPU dedup needs the GPU kernels; table %s runs without it", lk->ti.name);
		else if ((rc = eht_lk_dedup_init(lk)))
			goto fail;
	}
	if ((rc = eht_lk_hot_create(lk)))
		goto fail;
	eht_debug("lookup on %s: %u threads, staging %zu rows, max_batch %zu, gpu %d (in place %d), strategy %s",
		  lk->ti.name, lk->nthreads, lk->staging_rows, (size_t)lk->max_batch, lk->gpu, lk->table_gpu,
		  lk->st->name);
	*out = lk;
	return 0;
fail:
	eht_lookup_destroy(lk);
	return rc;
}

/* ------------------------------------------------------------------- run */
/* How a run goes: through the strategy's GPU piece (everything on the stream), the hot cache's
 * (dedup and hot rows around the strategy's gather), or its CPU piece (the calling thread). */
enum lk_path { PATH_CPU, PATH_GPU, PATH_HOT };

struct lk_run {
	struct lk_call c;
	const struct lk_strategy *st; /* resolved */
	enum lk_path path;
	bool dead_sync; /* the caller wants a GPU-counted dead count now: the stream is synchronized */
	const struct eht_lk_view *view; /* the ids as an engine's view (eht_lk_run_view), else NULL */
};

/* The call's arguments alone: flags, id type, where ids and out live, the stream. */
static int run_args(eht_lookup *lk, const void *ids, int id_type, uint64_t count, void *out, void *stream,
		    unsigned flags, struct lk_run *r)
{
	const unsigned known = EHT_LOOKUP_RUN_DEAD_ERROR | EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_IDS_DEVICE |
			       EHT_LOOKUP_RUN_OUT_HOST | EHT_LOOKUP_RUN_OUT_DEVICE | EHT_LOOKUP_RUN_STRATEGY_MASK;
	if (flags & ~known)
		return eht_err(EINVAL, "eht_lookup_run: unknown flags 0x%x", flags & ~known);
	if (id_type != EHT_ID_INT32 && id_type != EHT_ID_INT64)
		return eht_err(EINVAL, "eht_lookup_run: unknown id type %d", id_type);
	if ((flags & EHT_LOOKUP_RUN_IDS_HOST) && (flags & EHT_LOOKUP_RUN_IDS_DEVICE))
		return eht_err(EINVAL, "eht_lookup_run: ids cannot be both host and device memory");
	if ((flags & EHT_LOOKUP_RUN_OUT_HOST) && (flags & EHT_LOOKUP_RUN_OUT_DEVICE))
		return eht_err(EINVAL, "eht_lookup_run: out cannot be both host and device memory");
	int strategy = (int)((flags & EHT_LOOKUP_RUN_STRATEGY_MASK) >> 8);
	r->st = strategy ? eht_lk_strategy(strategy) : lk->st;
	if (!r->st)
		return eht_err(EINVAL, "eht_lookup_run: unknown strategy %d", strategy);
	lk->last.dead_host = 0;
	lk->last.dead_gpu = false;
	/* A served table whose server is gone is an error, not a read of tables nobody serves. */
	int alive = eht_table_check(lk->t);
	if (alive || count == 0)
		return alive ? alive : 1;
	if (!ids || !out)
		return eht_err(EINVAL, "eht_lookup_run: NULL %s", ids ? "out" : "ids");
	if (count > UINT32_MAX)
		return eht_err(EINVAL, "eht_lookup_run: %llu ids in one call (at most 2^32-1)", (unsigned long long)count);
	if (lk->gpu && (flags & EHT_LOOKUP_RUN_OUT_HOST) == 0 && eht_dev_use(lk->device))
		return -ENODEV;
	r->c.ids_dev = (flags & EHT_LOOKUP_RUN_IDS_DEVICE) || (lk->gpu && !(flags & EHT_LOOKUP_RUN_IDS_HOST) && eht_dev_is_device_ptr(ids));
	r->c.out_dev = (flags & EHT_LOOKUP_RUN_OUT_DEVICE) || (lk->gpu && !(flags & EHT_LOOKUP_RUN_OUT_HOST) && eht_dev_is_device_ptr(out));
	if ((r->c.ids_dev || r->c.out_dev) && !lk->gpu)
		return eht_err(EINVAL, "eht_lookup_run: GPU memory given to a CPU-only lookup engine");
	bool capturing = false;
	if (lk->gpu && eht_dev_stream_capturing((eht_stream)stream, &capturing) != 0)
		return eht_err_prefix(-EINVAL, "eht_lookup_run: bad stream");
	r->c.capture = capturing;
	return 0;
}

/* The strategy that takes the call (its resolve and checks, its init on first use) and the path. */
static int run_plan(eht_lookup *lk, uint64_t count, void *out, bool want_dead, struct lk_run *r)
{
	const struct lk_call *c = &r->c;
	int rc;
	r->st = r->st->resolve(lk, r->st, c);
	if ((rc = eht_lk_check_call(lk, r->st, c)))
		return rc;
	if (c->out_dev && lk->fmt == EHT_LOOKUP_BF16 && (!lk->kernels || ((uintptr_t)out & 15)))
		return eht_err(EINVAL, "eht_lookup_run: BF16 output on the GPU needs the kernels and a 16-byte aligned out");
	if ((rc = eht_lk_strategy_ready(lk, r->st, c->capture)))
		return rc;
	/* The GPU piece where the calling thread does not read ids now (ids in GPU memory, a capture) or
	 * the strategy has no CPU piece; host-side GPU pieces need the stream-triggered path. */
	bool bell = lk->bell != NULL, gpu_host_ids = r->st->caps & LK_GPU_HOST_IDS;
	bool use_gpu = gpu_host_ids || (c->out_dev && bell && (c->ids_dev || c->capture));
	/* A large eager batch of host ids too (LK_BELL_HOST_IDS_MIN): its chunks reach the GPU as the
	 * pool finishes them, where the calling thread's DMA calls added about a millisecond to a
	 * 196,608-id prefill (docs/BENCHMARKS.md). Not a background engine's, nor sorted host ids. (Only
	 * strategies with a CPU piece, HOST and AUTO, get here without use_gpu.) */
	if (!use_gpu && c->out_dev && bell && count >= LK_BELL_HOST_IDS_MIN && lk->ti.host && !lk->background &&
	    !(lk->flags & EHT_LOOKUP_HOST_SORT))
		use_gpu = true;
	/* A hot set (and GPU dedup) serves GPU output only, through the GPU pieces (hot/hot.c), and only
	 * batches of dedup_min ids or more (LK_DEDUP_MIN: below, its two passes cost more than they save).
	 * The table still holds every row, so either way the output is the same. */
	bool hot = lk->hot && c->out_dev && count >= (c->ids_dev || c->capture ? lk->dedup_min : lk->dedup_min_host);
	if (hot && !use_gpu && bell)
		use_gpu = true;
	r->path = !use_gpu ? PATH_CPU : hot ? PATH_HOT : PATH_GPU;
	if (hot && c->capture && !c->ids_dev)
		return eht_err(EOPNOTSUPP, "eht_lookup_run: a lookup with a hot set captures only with ids in GPU memory");
	r->dead_sync = use_gpu && want_dead;
	if (c->capture && (!(r->st->caps & LK_CAPTURABLE) || r->dead_sync || !use_gpu || (!c->ids_dev && gpu_host_ids)))
		return eht_err(EOPNOTSUPP, "eht_lookup_run: strategy %s%s cannot be captured in a CUDA graph", r->st->name,
			       r->dead_sync ? " with a dead count (pass NULL; read eht_lookup_last_dead_count later)"
			       : !use_gpu ? " without the GPU kernels" : " with host ids");
	return eht_lk_bell_take_error(lk);
}

/* The CPU piece of ids in GPU memory (no stream-triggered path: no kernels): the CPU must read these
 * ids: copied back and waited for. */
static int cpu_piece_dev_ids(eht_lookup *lk, struct lk_piece *p)
{
	int rc = eht_lk_ids_to_host(lk, p->ids, p->n * (p->id64 ? 8 : 4), p->s, &p->ids);
	p->ids_dev = false;
	return rc ? rc : p->st->cpu_piece(lk, p);
}

static int cpu_piece(eht_lookup *lk, struct lk_piece *p) { return p->st->cpu_piece(lk, p); }
static int gpu_piece(eht_lookup *lk, struct lk_piece *p) { return p->st->gpu_piece(lk, p); }

/* The run's pieces of at most max_batch ids each; *published: the last GPU piece's kernel
 * publishes the dead count itself. */
static int run_pieces(eht_lookup *lk, const struct lk_run *r, const void *ids, int id64, int64_t off,
		      uint64_t count, void *out, void *s, uint64_t *dead, bool *published)
{
	/* A view goes to the GPU pieces that can take it, in one piece; everywhere else the flat ids are
	 * made in GPU memory first. */
	const struct eht_lk_view *view = r->view;
	if (view && (r->path != PATH_GPU || !(r->st->caps & LK_VIEW_IDS) || count > lk->max_batch)) {
		int rc = view->flatten(view, s);
		if (rc)
			return rc;
		view = NULL;
	}
	int (*piece)(eht_lookup *, struct lk_piece *) = r->path == PATH_HOT ? eht_lk_hot_piece
							: r->path == PATH_GPU ? gpu_piece
							: r->c.ids_dev ? cpu_piece_dev_ids : cpu_piece;
	const size_t isz = id64 ? 8 : 4;
	int rc = 0;
	/* (a CPU run counts on the CPU: an AUTO split's in-place part there leaves junk nobody reads) */
	lk->counters_zeroed = r->path == PATH_CPU;
	for (uint64_t b = 0; b < count && !rc; b += lk->max_batch) {
		size_t m = count - b < lk->max_batch ? (size_t)(count - b) : (size_t)lk->max_batch;
		struct lk_piece p = {.st = r->st, .ids = (const uint8_t *)ids + b * isz, .ids_dev = r->c.ids_dev,
				     .id64 = id64, .off = off, .n = m, .out = (uint8_t *)out + b * lk->out_rb,
				     .out_dev = r->c.out_dev, .capture = r->c.capture, .s = s, .dead = dead,
				     .publish_dead = count <= lk->max_batch, .view = view};
		rc = piece(lk, &p);
		*published = p.dead_published;
	}
	return rc;
}

/* The run's dead count: counted by the CPU (known now), or on the GPU, where it stays; a copy (or
 * the stage-in kernel itself) brings it to lk->h_dead for eht_lookup_last_dead_count once the
 * stream passes, the one place for eager runs and every graph replay. */
static int run_finish(eht_lookup *lk, const struct lk_run *r, bool published, void *s, uint64_t *dead)
{
	if (r->path == PATH_CPU) {
		lk->last.dead_host = *dead;
		eht_metrics_dead(*dead);
		return 0;
	}
	lk->last.dead_gpu = true;
	int rc = 0;
	if (!published && !(rc = eht_lk_counters_zero(lk, s))) /* (zeroed already unless no kernel counted) */
		rc = eht_dev_d2h_async(lk->h_dead, lk->d_counters, sizeof(uint64_t), s);
	if (!rc && r->dead_sync && !(rc = eht_dev_stream_sync(s)))
		*dead = eht_lookup_last_dead_count(lk);
	return rc;
}

static int lookup_run(eht_lookup *lk, const void *ids, int id_type, int64_t id_offset, uint64_t count, void *out,
		      void *stream, unsigned flags, uint64_t *dead_count, int *path, const struct eht_lk_view *view)
{
	struct lk_run r = {.view = view};
	int rc = run_args(lk, ids, id_type, count, out, stream, flags, &r);
	if (rc)
		return rc > 0 ? 0 : rc; /* 1: nothing to look up */
	bool want_dead = dead_count || (flags & EHT_LOOKUP_RUN_DEAD_ERROR);
	if ((rc = run_plan(lk, count, out, want_dead, &r)))
		return rc;
	if (lk->hot && !r.c.capture && (rc = eht_lk_hot_boundary(lk, stream)))
		return rc; /* a step boundary: a pending hot-set refresh goes in here */
	*path = (int)r.path;
	lk->last.strategy = r.st->id;
	lk->ran = true;
	uint64_t dead = 0;
	bool published = false;
	if ((rc = run_pieces(lk, &r, ids, id_type == EHT_ID_INT64, id_offset, count, out, stream, &dead, &published)) ||
	    (rc = run_finish(lk, &r, published, stream, &dead)))
		return rc;
	if (dead_count)
		*dead_count = dead;
	if (dead && (flags & EHT_LOOKUP_RUN_DEAD_ERROR))
		return eht_err(ERANGE, "lookup: %llu of %llu ids are outside the rows [%lld, %lld) of table %s",
			       (unsigned long long)dead, (unsigned long long)count, (long long)lk->lo, (long long)lk->hi,
			       lk->ti.name);
	return 0;
}

/* One run under the engine's run lock, counted in the metrics. Threads sharing an engine take turns
 * (see run_mu): each call's dead count is its own. */
static int locked_run(eht_lookup *lk, const void *ids, int id_type, int64_t id_offset, uint64_t count, void *out,
		      void *stream, unsigned flags, uint64_t *dead_count, const struct eht_lk_view *view)
{
	const uint64_t t0 = eht_now_ns();
	pthread_mutex_lock(&lk->run_mu);
	int path = -1;
	int rc = lookup_run(lk, ids, id_type, id_offset, count, out, stream, flags, dead_count, &path, view);
	pthread_mutex_unlock(&lk->run_mu);
	eht_metrics_call(count, path, rc, eht_now_ns() - t0);
	return rc;
}

int eht_lookup_run(eht_lookup *lk, const void *ids, int id_type, int64_t id_offset, uint64_t count, void *out,
		   void *stream, unsigned flags, uint64_t *dead_count)
{
	if (dead_count)
		*dead_count = 0;
	if (!lk)
		return eht_err(EINVAL, "eht_lookup_run: NULL engine");
	return locked_run(lk, ids, id_type, id_offset, count, out, stream, flags, dead_count, NULL);
}

int eht_lk_run_view(eht_lookup *lk, const struct eht_lk_view *v, uint64_t count, void *out, void *stream,
		    unsigned flags)
{
	if (!lk || !v || !v->flatten || !v->k.ids || !v->flat || v->k.tokens * v->k.part != count)
		return eht_err(EINVAL, "eht_lk_run_view: no engine, or a view that is not %llu ids",
			       (unsigned long long)count);
	return locked_run(lk, (const void *)(uintptr_t)v->flat, v->k.out64 ? EHT_ID_INT64 : EHT_ID_INT32, 0, count,
			  out, stream, flags | EHT_LOOKUP_RUN_IDS_DEVICE, NULL, v);
}

int eht_lk_piece_flatten(struct lk_piece *p)
{
	const struct eht_lk_view *v = p->view;
	p->view = NULL;
	return v ? v->flatten(v, p->s) : 0;
}

uint64_t eht_lookup_last_dead_count(const eht_lookup *lk)
{
	if (!lk)
		return 0;
	return lk->last.dead_gpu ? *(volatile uint64_t *)lk->h_dead : lk->last.dead_host;
}

int eht_lookup_last_strategy(const eht_lookup *lk) { return lk ? lk->last.strategy : -1; }

int eht_lookup_background(const eht_lookup *lk) { return lk && lk->background ? 1 : 0; }
