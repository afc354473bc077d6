/* SPDX-License-Identifier: Apache-2.0 */
/* lookup.c: eht_lookup: options, the buffers allocated once, and the per-call dispatch to the
 * strategies (GPU ones here, the CPU side in lk_host.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lookup/lookup_impl.h"
#include "util/env.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"

#define DEFAULT_MAX_BATCH 196608u
#define DEFAULT_STAGING_CAP (256ull << 20)
#define DEFAULT_SPIN_US 2000u

static void *host_alloc(eht_lookup *lk, size_t bytes, int *rc)
{
	void *p = NULL;
	if (*rc)
		return NULL;
	if (bytes == 0)
		bytes = 8;
	if (lk->gpu) {
		/* Pinned once here so every copy is a true async DMA; PORTABLE for any context. */
		*rc = EHT_CU_CHECK(cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE));
		if (*rc)
			eht_err_prefix(*rc, "lookup: pinning %zu bytes of staging", bytes);
	} else if (!(p = malloc(bytes))) {
		*rc = eht_err(ENOMEM, "lookup: out of memory (%zu bytes)", bytes);
	}
	return p;
}

static void host_free(eht_lookup *lk, void *p)
{
	if (!p)
		return;
	if (lk->gpu)
		eht_cu.cuMemFreeHost(p);
	else
		free(p);
}

static CUdeviceptr dev_alloc(size_t bytes, int *rc)
{
	CUdeviceptr d = 0;
	if (*rc)
		return 0;
	*rc = EHT_CU_CHECK(cuMemAlloc(&d, bytes ? bytes : 8));
	if (*rc)
		eht_err_prefix(*rc, "lookup: %zu bytes of GPU memory", bytes);
	return d;
}

void eht_lookup_destroy(eht_lookup *lk)
{
	if (!lk)
		return;
	if (lk->gpu) {
		eht_cu_use_device(lk->device);
		if (lk->side)
			eht_cu.cuStreamSynchronize(lk->side);
		eht_cu.cuCtxSynchronize(); /* copies may still read staging */
		eht_lk_hot_free(lk);
		CUevent *evs[] = {&lk->ev_half[0], &lk->ev_half[1], &lk->ev_ids, &lk->ev_stage, &lk->ev_fork, &lk->ev_join,
				  &lk->ev_t0, &lk->ev_t1};
		for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
			if (*evs[i])
				eht_cu.cuEventDestroy(*evs[i]);
		if (lk->side)
			eht_cu.cuStreamDestroy(lk->side);
		CUdeviceptr ds[] = {lk->d_ids, lk->d_compact, lk->d_uniq, lk->d_slot, lk->d_counters, lk->sb.keys[0],
				    lk->sb.keys[1], lk->sb.vals[0], lk->sb.vals[1], lk->sb.hist, lk->sb.heads};
		for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
			if (ds[i])
				eht_cu.cuMemFree(ds[i]);
		eht_gpu_lookup_unload(&lk->g);
	}
	eht_lk_bell_fini(lk);
	eht_lk_pool_put(lk->pool);
	host_free(lk, lk->staging);
	host_free(lk, lk->h_slot);
	host_free(lk, lk->h_ids);
	host_free(lk, lk->h_counters);
	free(lk->h_rows);
	free(lk->h_tmp);
	free(lk->h_uniq);
	free(lk->chunk_done);
	free(lk->chunk_dead);
	pthread_mutex_destroy(&lk->run_mu);
	free(lk);
}

int eht_lookup_create(eht_table *table, const struct eht_lookup_opts *opts, eht_lookup **out)
{
	struct eht_lookup_opts o = {.size = sizeof(o), .device = -1, .numa_node = -1};
	if (!out)
		return eht_err(EINVAL, "eht_lookup_create: NULL out");
	*out = NULL;
	if (!table)
		return eht_err(EINVAL, "eht_lookup_create: NULL table");
	int orc = eht_opts_in(&o, sizeof(o), opts, "eht_lookup_create: opts");
	if (orc)
		return orc;
	if (o.flags & ~EHT_LOOKUP_OPTS_FLAGS)
		return eht_err(EINVAL, "eht_lookup_create: unknown flags 0x%x", o.flags & ~EHT_LOOKUP_OPTS_FLAGS);
	if (o.strategy < EHT_LOOKUP_AUTO || o.strategy > EHT_LOOKUP_HOST)
		return eht_err(EINVAL, "eht_lookup_create: unknown strategy %d", o.strategy);
	if (o.format != EHT_LOOKUP_RAW && o.format != EHT_LOOKUP_BF16)
		return eht_err(EINVAL, "eht_lookup_create: unknown output format %d", o.format);
	const struct eht_table_info *ti = &table->info;
	if (o.format == EHT_LOOKUP_BF16 && ti->row_bytes != EHT_ENGRAM_ROW_BYTES)
		return eht_err(EINVAL, "lookup: BF16 output needs packed Engram rows of %d bytes; table %s has %llu",
			       EHT_ENGRAM_ROW_BYTES, ti->name, (unsigned long long)ti->row_bytes);
	if (ti->row_bytes == 0 || ti->row_bytes > (1u << 30))
		return eht_err(EINVAL, "lookup: table %s has unsupported row size %llu", ti->name,
			       (unsigned long long)ti->row_bytes);
	if (!ti->host && !(table->ops && table->ops->read_rows))
		return eht_err(EINVAL, "lookup: table %s has neither a host pointer nor read_rows", ti->name);
	if (o.max_batch == 0)
		o.max_batch = DEFAULT_MAX_BATCH;
	if (o.max_batch >= (1ull << 31))
		return eht_err(EINVAL, "lookup: max_batch %llu is over 2^31", (unsigned long long)o.max_batch);

	eht_lookup *lk = calloc(1, sizeof(*lk));
	if (!lk)
		return eht_err(ENOMEM, "lookup: out of memory");
	pthread_mutex_init(&lk->run_mu, NULL);
	lk->t = table;
	lk->ti = *ti;
	lk->rb = (uint32_t)ti->row_bytes;
	lk->fmt = o.format;
	lk->out_rb = o.format == EHT_LOOKUP_BF16 ? 2 * EHT_ENGRAM_DIM : lk->rb;
	lk->strategy = o.strategy;
	lk->flags = o.flags;
	lk->max_batch = o.max_batch;
	uint64_t hi = ti->first_row + ti->local_rows;
	lk->lo = (int64_t)ti->first_row;
	lk->hi = (int64_t)(hi < ti->rows ? hi : ti->rows);
	if (lk->hi < lk->lo)
		lk->hi = lk->lo;
	lk->sortable = (uint64_t)(lk->hi - lk->lo) < UINT32_MAX;
	eht_lk_auto_init(lk);
	/* A miss on a tier without a host pointer (disk) can cost a storage read: there every batch
	 * deduplicates and consults the hot set. */
	lk->dedup_min = eht_env_u64("EHT_LOOKUP_DEDUP_MIN", ti->host ? LK_DEDUP_MIN : 1);
	lk->dedup_min_host = eht_env_u64("EHT_LOOKUP_DEDUP_MIN", ti->host ? LK_DEDUP_MIN_HOST_IDS : 1);
	lk->device = o.device >= 0 ? o.device : ti->device;
	lk->gpu = !(o.flags & EHT_LOOKUP_CPU_ONLY) && lk->device >= 0;
	int rc = 0;
	if (o.strategy == EHT_LOOKUP_DIRECT || o.strategy == EHT_LOOKUP_SORTED) {
		if (!lk->gpu)
			rc = eht_err(ENODEV, "lookup: strategy %s needs a GPU; table %s is not pinned for one",
				     eht_lookup_strategy_name(o.strategy), ti->name);
		else if (!ti->device_ptr || ti->device != lk->device)
			rc = eht_err(EINVAL, "lookup: strategy %s reads the table in place; table %s is not readable by GPU %d",
				     eht_lookup_strategy_name(o.strategy), ti->name, lk->device);
		else if (o.strategy == EHT_LOOKUP_SORTED && !lk->sortable)
			rc = eht_err(EINVAL, "lookup: SORTED needs fewer than 2^32-1 local rows");
	}
	if (!rc && (o.flags & EHT_LOOKUP_GPU_DEDUP) && (o.flags & EHT_LOOKUP_CPU_ONLY))
		rc = eht_err(EINVAL, "lookup: GPU_DEDUP and CPU_ONLY together (dedup runs on the GPU)");
	if (!rc && (o.flags & EHT_LOOKUP_HOST_SORT) && !lk->sortable)
		rc = eht_err(EINVAL, "lookup: HOST_SORT needs fewer than 2^32-1 local rows");
	if (!rc && !ti->host && !lk->sortable)
		rc = eht_err(EINVAL, "lookup: tables without a host pointer need fewer than 2^32-1 local rows");
	if (rc)
		goto fail;
	if (lk->gpu && (rc = eht_cu_use_device(lk->device)))
		goto fail;
	lk->table_gpu = lk->gpu && ti->device_ptr && ti->device == lk->device;

	/* CPU pool: one per process, NUMA-local, shared by every engine (lk_cpu.c). */
	int node = o.numa_node >= 0 ? o.numa_node : ti->numa_node;
	struct eht_table_copy cp = {.size = sizeof(cp)};
	if (eht_table_copy(table, &cp) != 0)
		cp.pool_threads = 0;
	if ((rc = eht_lk_pool_get(o.threads, cp.pool_threads, node, o.spin_us ? o.spin_us : DEFAULT_SPIN_US, &lk->pool)))
		goto fail;
	lk->nthreads = eht_pool_size(lk->pool);

	/* Staging: at least 64 rows (two halves of 32), by default one max_batch of rows. */
	uint64_t sb = o.staging_bytes;
	if (!sb) {
		sb = lk->max_batch * lk->rb;
		if (sb > DEFAULT_STAGING_CAP)
			sb = DEFAULT_STAGING_CAP;
	}
	lk->staging_rows = sb / lk->rb;
	if (lk->staging_rows < 64)
		lk->staging_rows = 64;
	size_t mb = lk->max_batch;
	size_t piece_max = mb > lk->staging_rows ? mb : lk->staging_rows;
	lk->max_chunks = (piece_max + LK_CHUNK_MIN - 1) / LK_CHUNK_MIN + 1;
	lk->staging = host_alloc(lk, lk->staging_rows * lk->rb, &rc);
	lk->h_slot = host_alloc(lk, mb * sizeof(uint32_t), &rc);
	if (lk->gpu) {
		lk->h_ids = host_alloc(lk, mb * 8, &rc);
		lk->h_counters = host_alloc(lk, 2 * sizeof(uint64_t), &rc);
	}
	lk->h_rows = malloc(mb * sizeof(uint64_t));
	lk->h_tmp = malloc(2 * mb * sizeof(uint64_t));
	lk->h_uniq = malloc(mb * sizeof(uint64_t));
	lk->chunk_done = calloc(lk->max_chunks, sizeof(atomic_uint));
	lk->chunk_dead = calloc(lk->max_chunks, sizeof(uint64_t));
	if (!rc && (!lk->h_rows || !lk->h_tmp || !lk->h_uniq || !lk->chunk_done || !lk->chunk_dead))
		rc = eht_err(ENOMEM, "lookup: out of memory for %zu-id buffers", mb);
	if (rc)
		goto fail;
	if (lk->h_counters)
		memset(lk->h_counters, 0, 2 * sizeof(uint64_t));

	if (lk->gpu) {
		int krc = eht_gpu_lookup_load(lk->device, &lk->g);
		lk->kernels = krc == 0;
		if (krc && (o.strategy == EHT_LOOKUP_DIRECT || o.strategy == EHT_LOOKUP_SORTED ||
			    o.format == EHT_LOOKUP_BF16)) {
			rc = krc;
			goto fail;
		}
		if (krc)
			eht_warn_once("lookup: GPU kernels unavailable (%s); HOST only", eht_last_error());
		lk->compact_rows = mb > lk->staging_rows ? mb : lk->staging_rows;
		uint64_t kb, hb, hdb;
		eht_gpu_sort_sizes(mb, &kb, &hb, &hdb);
		lk->d_ids = dev_alloc(mb * 8, &rc);
		lk->d_compact = dev_alloc(lk->compact_rows * lk->rb, &rc);
		lk->d_uniq = dev_alloc(mb * 4, &rc);
		lk->d_slot = dev_alloc(mb * 4, &rc);
		lk->d_counters = dev_alloc(2 * sizeof(uint64_t), &rc);
		for (int i = 0; i < 2; i++) {
			lk->sb.keys[i] = dev_alloc(kb, &rc);
			lk->sb.vals[i] = dev_alloc(kb, &rc);
		}
		lk->sb.hist = dev_alloc(hb, &rc);
		lk->sb.heads = dev_alloc(hdb, &rc);
		CUevent *evs[] = {&lk->ev_half[0], &lk->ev_half[1], &lk->ev_ids, &lk->ev_stage, &lk->ev_fork, &lk->ev_join};
		for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]) && !rc; i++)
			rc = EHT_CU_CHECK(cuEventCreate(evs[i], CU_EVENT_DISABLE_TIMING));
		if (!rc)
			rc = EHT_CU_CHECK(cuEventCreate(&lk->ev_t0, CU_EVENT_DEFAULT));
		if (!rc)
			rc = EHT_CU_CHECK(cuEventCreate(&lk->ev_t1, CU_EVENT_DEFAULT));
		if (!rc)
			rc = EHT_CU_CHECK(cuStreamCreate(&lk->side, CU_STREAM_NON_BLOCKING));
		if (!rc && lk->kernels)
			rc = eht_lk_bell_init(lk);
		if (rc)
			goto fail;
	}
	lk->last_strategy = -1;
	if (lk->strategy == EHT_LOOKUP_AUTO && lk->table_gpu && lk->kernels && lk->ti.host)
		eht_lk_auto_calibrate(lk);
	lk->ran = false; /* calibration's runs are the engine's own: a hot set may still be set */
	if ((o.flags & EHT_LOOKUP_GPU_DEDUP) && lk->gpu) {
		if (!lk->bell.ready_alloc)
			eht_warn_once("lookup: GPU dedup needs the GPU kernels; table %s runs without it", ti->name);
		else if ((rc = eht_lk_dedup_init(lk)))
			goto fail;
	}
	if (!o.hotset && o.hotset_rows) {
		rc = eht_err(EINVAL, "lookup on %s: opts hotset_rows %llu without hotset", ti->name,
			     (unsigned long long)o.hotset_rows);
		goto fail;
	}
	if (o.hotset && o.hotset_rows) {
		uint64_t n = o.hotset_rows, per = (uint64_t)lk->rb + 48;
		if (o.hotset_max_bytes && n > o.hotset_max_bytes / per)
			n = o.hotset_max_bytes / per;
		if (n && (rc = eht_lookup_set_hotset(lk, o.hotset, n))) {
			eht_err_prefix(rc, "lookup on %s: opts hotset", ti->name);
			goto fail;
		}
	}
	eht_debug("lookup on %s: %u threads, staging %zu rows, max_batch %zu, gpu %d (in place %d)", ti->name,
		  lk->nthreads, lk->staging_rows, mb, lk->gpu, lk->table_gpu);
	*out = lk;
	return 0;
fail:
	eht_lookup_destroy(lk);
	return rc;
}

/* ------------------------------------------------------------------- run helpers */
static bool is_device_ptr(const void *p)
{
	int type = 0;
	CUresult r = eht_cu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p);
	return r == CUDA_SUCCESS && (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED);
}

static int lookup_run(eht_lookup *lk, const void *ids, int id_type, int64_t id_offset, uint64_t count, void *out,
		      void *stream, unsigned flags, uint64_t *dead_count)
{
	const unsigned known = EHT_LOOKUP_RUN_DEAD_ERROR | EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_IDS_DEVICE |
			       EHT_LOOKUP_RUN_OUT_HOST | EHT_LOOKUP_RUN_OUT_DEVICE | EHT_LOOKUP_RUN_STRATEGY_MASK;
	if (dead_count)
		*dead_count = 0;
	if (!lk)
		return eht_err(EINVAL, "eht_lookup_run: NULL engine");
	if (flags & ~known)
		return eht_err(EINVAL, "eht_lookup_run: unknown flags 0x%x", flags & ~known);
	if (id_type != EHT_ID_INT32 && id_type != EHT_ID_INT64)
		return eht_err(EINVAL, "eht_lookup_run: unknown id type %d", id_type);
	if ((flags & EHT_LOOKUP_RUN_IDS_HOST) && (flags & EHT_LOOKUP_RUN_IDS_DEVICE))
		return eht_err(EINVAL, "eht_lookup_run: ids cannot be both host and device memory");
	if ((flags & EHT_LOOKUP_RUN_OUT_HOST) && (flags & EHT_LOOKUP_RUN_OUT_DEVICE))
		return eht_err(EINVAL, "eht_lookup_run: out cannot be both host and device memory");
	int strategy = (int)((flags & EHT_LOOKUP_RUN_STRATEGY_MASK) >> 8);
	if (strategy > EHT_LOOKUP_HOST)
		return eht_err(EINVAL, "eht_lookup_run: unknown strategy %d", strategy);
	if (!strategy)
		strategy = lk->strategy;
	lk->last_dead_host = 0;
	lk->last_dead_gpu = false;
	lk->last_dead_bell = false;
	/* A served table whose server is gone is an error, not a read of tables nobody serves. */
	int alive = eht_table_check(lk->t);
	if (alive)
		return alive;
	if (count == 0)
		return 0;
	if (!ids || !out)
		return eht_err(EINVAL, "eht_lookup_run: NULL %s", ids ? "out" : "ids");
	if (count > UINT32_MAX)
		return eht_err(EINVAL, "eht_lookup_run: %llu ids in one call (at most 2^32-1)", (unsigned long long)count);
	if (lk->gpu && (flags & EHT_LOOKUP_RUN_OUT_HOST) == 0 && eht_cu_use_device(lk->device))
		return -ENODEV;
	bool ids_dev = (flags & EHT_LOOKUP_RUN_IDS_DEVICE) || (lk->gpu && !(flags & EHT_LOOKUP_RUN_IDS_HOST) && is_device_ptr(ids));
	bool out_dev = (flags & EHT_LOOKUP_RUN_OUT_DEVICE) || (lk->gpu && !(flags & EHT_LOOKUP_RUN_OUT_HOST) && is_device_ptr(out));
	if ((ids_dev || out_dev) && !lk->gpu)
		return eht_err(EINVAL, "eht_lookup_run: GPU memory given to a CPU-only lookup engine");
	CUstream s = (CUstream)stream;
	int capturing = CU_STREAM_CAPTURE_STATUS_NONE;
	if (lk->gpu && EHT_CU_CHECK(cuStreamIsCapturing(s, &capturing)) != 0)
		return eht_err_prefix(-EINVAL, "eht_lookup_run: bad stream");

	/* Resolve the strategy (lk_strategy.c). */
	bool capture = capturing != CU_STREAM_CAPTURE_STATUS_NONE;
	if (strategy == EHT_LOOKUP_AUTO && (!out_dev || !lk->table_gpu || !lk->kernels))
		strategy = EHT_LOOKUP_HOST;
	const struct lk_strategy *st = eht_lk_strategy(strategy);
	if (!st)
		return eht_err(EINVAL, "eht_lookup_run: unknown strategy %d", strategy);
	if (st->gpu_table) {
		if (!out_dev)
			return eht_err(EINVAL, "eht_lookup_run: strategy %s writes GPU memory; out is host memory", st->name);
		if (!lk->table_gpu || !lk->kernels)
			return eht_err(EINVAL, "eht_lookup_run: strategy %s needs the table readable by GPU %d and the kernels",
				       st->name, lk->device);
		if (strategy == EHT_LOOKUP_SORTED && !lk->sortable)
			return eht_err(EINVAL, "eht_lookup_run: SORTED needs fewer than 2^32-1 local rows");
	}
	if (out_dev && lk->fmt == EHT_LOOKUP_BF16 && (!lk->kernels || ((uintptr_t)out & 15)))
		return eht_err(EINVAL, "eht_lookup_run: BF16 output on the GPU needs the kernels and a 16-byte aligned out");
	/* The GPU piece where the calling thread does not read ids now (ids in GPU memory, a capture) or
	 * the strategy has no CPU piece; host-side GPU pieces need the stream-triggered path's buffers. */
	bool use_gpu = !st->cpu_piece || (out_dev && lk->bell.ready_alloc && (ids_dev || capture));
	/* A hot set (and GPU dedup) serves GPU output only, through the GPU pieces (lk_hot.c), and only
	 * batches of dedup_min ids or more (LK_DEDUP_MIN: below, its two passes cost more than they save).
	 * The table still holds every row, so either way the output is the same. */
	bool hot = lk->hot && out_dev && count >= (ids_dev || capture ? lk->dedup_min : lk->dedup_min_host);
	if (hot && !use_gpu && lk->bell.ready_alloc)
		use_gpu = true;
	if (hot && capture && !ids_dev)
		return eht_err(EOPNOTSUPP, "eht_lookup_run: a lookup with a hot set captures only with ids in GPU memory");
	bool dead_sync = use_gpu && (dead_count || (flags & EHT_LOOKUP_RUN_DEAD_ERROR));
	if (capture && (!st->capturable || dead_sync || !use_gpu || (!ids_dev && !st->cpu_piece)))
		return eht_err(EOPNOTSUPP, "eht_lookup_run: strategy %s%s cannot be captured in a CUDA graph", st->name,
			       dead_sync ? " with a dead count (pass NULL; read eht_lookup_last_dead_count later)"
			       : !use_gpu ? " without the GPU kernels" : " with host ids");
	int brc = eht_lk_bell_take_error(lk);
	if (!brc && lk->hot && !capture)
		brc = eht_lk_hot_boundary(lk, s); /* a step boundary: a pending hot-set refresh goes in here */
	if (brc)
		return brc;
	lk->last_strategy = strategy;
	lk->ran = true;

	int rc = 0;
	const size_t isz = id_type == EHT_ID_INT64 ? 8 : 4;
	const int id64 = id_type == EHT_ID_INT64;
	uint64_t dead = 0;
	if (use_gpu && (rc = EHT_CU_CHECK(cuMemsetD32Async(lk->d_counters, 0, 4, s))))
		return rc;
	bool published = false;
	for (uint64_t b = 0; b < count && !rc; b += lk->max_batch) {
		size_t m = count - b < lk->max_batch ? (size_t)(count - b) : (size_t)lk->max_batch;
		struct lk_piece p = {.ids = (const uint8_t *)ids + b * isz, .ids_dev = ids_dev, .id64 = id64,
				     .off = id_offset, .n = m, .out = (uint8_t *)out + b * lk->out_rb, .out_dev = out_dev,
				     .capture = capture, .s = s, .dead = &dead, .publish_dead = count <= lk->max_batch};
		if (use_gpu) {
			rc = hot ? eht_lk_hot_piece(lk, st, &p) : st->gpu_piece(lk, &p);
			published = p.dead_published;
			continue;
		}
		if (ids_dev) {
			/* No stream-triggered path (no kernels): the CPU must read these ids: copy them back and wait. */
			if (lk->ids_used) {
				lk->ids_used = false;
				if ((rc = EHT_CU_CHECK(cuEventSynchronize(lk->ev_ids))))
					break;
			}
			rc = EHT_CU_CHECK(cuMemcpyDtoHAsync(lk->h_ids, (CUdeviceptr)(uintptr_t)p.ids, m * isz, s));
			if (!rc)
				rc = EHT_CU_CHECK(cuStreamSynchronize(s));
			if (rc)
				break;
			p.ids = lk->h_ids;
			p.ids_dev = false;
		}
		rc = st->cpu_piece(lk, &p);
	}
	if (rc)
		return rc;
	if (use_gpu) {
		/* The count stays on the GPU; a copy (or the stage-in kernel itself) brings it to pinned memory
		 * for eht_lookup_last_dead_count once the stream passes. */
		lk->last_dead_gpu = true;
		lk->last_dead_bell = lk->bell.ready_alloc; /* one place for eager runs and every graph replay */
		if (!published && lk->bell.ready_alloc)
			rc = EHT_CU_CHECK(cuMemcpyDtoHAsync(lk->bell.h_dead, lk->d_counters, sizeof(uint64_t), s));
		else if (!published)
			rc = EHT_CU_CHECK(cuMemcpyDtoHAsync(lk->h_counters, lk->d_counters, 2 * sizeof(uint64_t), s));
		if (!rc && dead_sync)
			rc = EHT_CU_CHECK(cuStreamSynchronize(s));
		if (rc)
			return rc;
		if (dead_sync)
			dead = eht_lookup_last_dead_count(lk);
	} else {
		lk->last_dead_host = dead;
	}
	if (dead_count)
		*dead_count = dead;
	if (dead && (flags & EHT_LOOKUP_RUN_DEAD_ERROR))
		return eht_err(ERANGE, "lookup: %llu of %llu ids are outside the rows [%lld, %lld) of table %s",
			       (unsigned long long)dead, (unsigned long long)count, (long long)lk->lo, (long long)lk->hi,
			       lk->ti.name);
	return 0;
}

int eht_lookup_run(eht_lookup *lk, const void *ids, int id_type, int64_t id_offset, uint64_t count, void *out,
		   void *stream, unsigned flags, uint64_t *dead_count)
{
	if (!lk) {
		if (dead_count)
			*dead_count = 0;
		return eht_err(EINVAL, "eht_lookup_run: NULL engine");
	}
	/* Threads sharing an engine take turns (see run_mu): each call's dead count is its own. */
	pthread_mutex_lock(&lk->run_mu);
	int rc = lookup_run(lk, ids, id_type, id_offset, count, out, stream, flags, dead_count);
	pthread_mutex_unlock(&lk->run_mu);
	return rc;
}

uint64_t eht_lookup_last_dead_count(const eht_lookup *lk)
{
	if (!lk)
		return 0;
	if (lk->last_dead_bell)
		return *(volatile uint64_t *)lk->bell.h_dead;
	return lk->last_dead_gpu ? *(volatile uint64_t *)lk->h_counters : lk->last_dead_host;
}

int eht_lookup_last_strategy(const eht_lookup *lk) { return lk ? lk->last_strategy : -1; }

