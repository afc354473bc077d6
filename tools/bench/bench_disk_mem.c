/* SPDX-License-Identifier: Apache-2.0 */
/* bench_disk_mem.c: `eht bench disk --mem-limit G`: the disk tier under a memory limit smaller
 * than the table (bench_cgroup.c: cgroup v2, v1 or a transient scope; else a file larger than free
 * memory), a few hundred steps of a workload, gathered into GPU memory where there is a GPU (with an
 * optional GPU hot set learned from the workload): steady-state step times, hit rates, bytes read. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_cgroup.h"
#include "bench_workload.h"
#include "bench.h"
#include "cli.h"
#include "bench_disk_mem.h"
#include "gpu/dev.h"
#include "eht.h"
#include "os/numa.h"
#include "util/clock.h"

/* Bytes this process made the storage layer fetch (/proc/self/io read_bytes), or 0. */
static uint64_t io_read_bytes(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[256];
	unsigned long long v = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "read_bytes: %llu", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Ids of a step that the GPU hot set serves. */
static uint64_t count_hot(const int32_t *ids, size_t n, const int64_t *hot, size_t nhot)
{
	uint64_t c = 0;
	for (size_t i = 0; nhot && i < n; i++) {
		int64_t k = ids[i];
		c += bsearch(&k, hot, nhot, sizeof(*hot), cmp_i64) != NULL;
	}
	return c;
}

/* The memory the fallback counts on (EHT_BENCH_MEM_AVAILABLE, bytes, for tests). */
static uint64_t mem_available(void)
{
	const char *e = getenv("EHT_BENCH_MEM_AVAILABLE");
	return e && *e ? strtoull(e, NULL, 10) : eht_mem_available();
}

/* The working set the limit must leave room for (bench_disk_mem_refuse): measured on the CPU path
 * (--ids 6144, no cache) at about 10 MiB of anonymous memory beside the libraries; the base below
 * leaves room for the lookup pool's threads and the engine's staging, a GPU context takes more. */
#define WS_BASE (48ull << 20)
#define WS_GPU (128ull << 20)
#define WS_CACHE_MIN (16ull << 20)

int bench_disk_mem_refuse(double gib, size_t ids, size_t hotset, int gpu, int no_cache)
{
	if (!isfinite(gib))
		return cli_errorf("bench disk", 2, "--mem-limit %g: give a finite size in GiB", gib);
	if (gib > (double)(1ull << 30))
		return cli_errorf("bench disk", 2, "--mem-limit %g: above 2^30 GiB, more memory than any machine has "
						   "(a limit this large limits nothing)", gib);
	uint64_t limit = (uint64_t)(gib * (double)(1ull << 30));
	uint64_t bufs = (uint64_t)ids * (EHT_ENGRAM_ROW_BYTES + 4) * 2, hot = (uint64_t)hotset * (EHT_ENGRAM_ROW_BYTES + 48);
	uint64_t need = WS_BASE + (gpu ? WS_GPU : 0) + (no_cache ? 0 : WS_CACHE_MIN) + bufs + hot;
	if (limit >= need)
		return 0;
	char hs[96] = "";
	if (hotset)
		snprintf(hs, sizeof(hs), ", a hot set of %zu rows %.1f MiB", hotset, (double)hot / (1 << 20));
	return cli_errorf("bench disk", 2, "--mem-limit %g: %.1f MiB is below this bench's own working set (about "
			  "%.0f MiB: the process and its threads %llu MiB%s%s, %zu ids' buffers %.1f MiB%s); the run would be "
			  "OOM-killed: give --mem-limit %.2f or more",
		gib, (double)limit / (1 << 20), (double)need / (1 << 20), WS_BASE >> 20, gpu ? ", the GPU context 128 MiB" : "",
		no_cache ? "" : ", the hot-row cache 16 MiB", ids, (double)bufs / (1 << 20), hs,
		ceil((double)need / (1 << 30) * 100) / 100);
}

/* The run's state (bench_disk_mem's pieces). */
struct dm_run {
	const struct bench_disk_mem_args *a;
	FILE *info;
	uint64_t table, limit, budget, cache;
	struct bench_cg cg;
	char why[4096], swhy[700];
	int in_cg;
	struct bench_workload *wl;
	eht_table *t;
	eht_lookup *lk;
	int32_t *ids;
	uint8_t *out;
	double *ms;
	int64_t *hot;
	size_t nhot;
	double hot_cov;
	eht_dptr dout;
	struct eht_disk_stats s1, sw;
	uint64_t iow, io1, hot_ids;
	int warm;
};

/* The workload (a text's ids, hashed) and the hot set are made outside the limit: they are the
 * bench's, not the tier's. 0 or 1. */
static int dm_workload(struct dm_run *d)
{
	const struct bench_disk_mem_args *a = d->a;
	if (bench_workload_open(a->workload, a->rows, 7, &d->wl))
		return cli_error("bench disk", a->json, NULL);
	if (!a->hotset)
		return 0;
	/* Learned on the second half of the text, steps drawn from the first. */
	size_t T = bench_workload_tokens(d->wl);
	if (bench_workload_set_range(d->wl, 0, T / 2) ||
	    bench_workload_hotset(d->wl, a->hotset, 0, T / 2, &d->hot, &d->nhot, &d->hot_cov))
		return cli_error("bench disk", a->json, a->workload && !strncmp(a->workload, "text:", 5) ? NULL
			  : "--hotset needs --workload text:FILE (the hot set is learned from the text)");
	qsort(d->hot, d->nhot, sizeof(*d->hot), cmp_i64); /* for count_hot; the set's order does not matter */
	if (!a->gpu)
		fprintf(d->info, "--hotset %zu: no GPU, so no GPU hot set (runs into host memory do not use one)\n",
			a->hotset);
	return 0;
}

/* Under the limit: a cgroup, else a transient scope (which runs this command again: *exit_rc set,
 * returns 1), else a table larger than free memory, else none (said). 0 to go on. */
static int dm_limit(struct dm_run *d, int *exit_rc)
{
	FILE *info = d->info;
	if (bench_cg_enter(&d->cg, d->limit, d->why, sizeof(d->why)) == 0) {
		d->in_cg = 1;
		fprintf(info, "memory limit: %s (table %.2f GiB)\n", d->why, (double)d->table / (1 << 30));
		return 0;
	}
	/* No cgroup of our own: a transient scope runs this command again inside a limit. */
	int src = bench_cg_scope_exec(d->limit, d->swhy, sizeof(d->swhy));
	if (src >= 0) {
		*exit_rc = src;
		return 1;
	}
	uint64_t avail = mem_available();
	if (avail && d->table > avail) {
		d->cg.mech = BENCH_CG_BIGFILE;
		d->cg.limit = avail;
		fprintf(info, "memory limit: no cgroup could be made (%s; %s); the table (%.2f GiB) is larger than "
			      "the %.2f GiB of free memory, which is the limit this run has\n",
			d->why, d->swhy, (double)d->table / (1 << 30), (double)avail / (1 << 30));
	} else {
		fprintf(info, "memory limit: NOT APPLIED: no cgroup could be made (%s; %s), and the table (%.2f "
			      "GiB) fits in the %.2f GiB of free memory: run as root, in a delegated cgroup, or with "
			      "--file-gib above %.0f for a table larger than free memory\n",
			d->why, d->swhy, (double)d->table / (1 << 30), (double)avail / (1 << 30),
			(double)avail / (1 << 30) + 1);
	}
	return 0;
}

/* The disk table, its engine (with the hot set), the buffers. 0 or 1. */
static int dm_setup(struct dm_run *d)
{
	const struct bench_disk_mem_args *a = d->a;
	size_t n = a->ids;
	d->budget = d->cg.limit ? d->cg.limit : d->limit;
	d->ids = malloc(n * sizeof(*d->ids));
	d->ms = malloc((size_t)a->steps * sizeof(double));
	if (!d->ids || !d->ms || (!a->gpu && !(d->out = malloc(n * EHT_ENGRAM_ROW_BYTES))))
		return cli_error("bench disk", a->json, "out of memory");
	/* The disk tier's hot-row cache from the same budget: 1/16 of it (16 MiB at least). */
	d->cache = d->budget / 16 > (16ull << 20) ? d->budget / 16 : (16ull << 20);
	struct eht_disk_opts dop = {.size = sizeof(dop), .weight = "bench.engram.weight", .scale = "bench.engram.scale",
				    .cache_bytes = a->no_cache ? EHT_DISK_NO_CACHE : d->cache};
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = EHT_LOOKUP_HOST, .device = a->gpu ? a->device : -1,
				     .numa_node = -1, .threads = a->threads, .max_batch = n,
				     .flags = a->gpu ? 0 : EHT_LOOKUP_CPU_ONLY};
	if (eht_disk_open(a->path, &dop, &d->t) || eht_disk_drop_cache(d->t) || eht_lookup_create(d->t, &lo, &d->lk))
		return cli_error("bench disk", a->json, NULL);
	/* After the engine: it made the device's context current on this thread. */
	if (a->gpu && eht_dev_alloc(&d->dout, n * EHT_ENGRAM_ROW_BYTES))
		return cli_error("bench disk", a->json, NULL);
	double t_hot = eht_now_s();
	if (d->hot && a->gpu && eht_lookup_set_hotset(d->lk, d->hot, d->nhot))
		return cli_error("bench disk", a->json, NULL);
	t_hot = eht_now_s() - t_hot;
	if (d->hot && a->gpu)
		fprintf(d->info, "GPU hot set: %zu rows (%.1f MB of GPU memory) read from the disk tier in %.2f s; they take "
			      "%.1f %% of the ids of the other half of the text\n",
			d->nhot, (double)d->nhot * (EHT_ENGRAM_ROW_BYTES + 48) / 1e6, t_hot, 100 * d->hot_cov);
	return 0;
}

/* The steps; the first fifth fills the caches (not steady state). 0 or 1. */
static int dm_steps(struct dm_run *d)
{
	const struct bench_disk_mem_args *a = d->a;
	size_t n = a->ids;
	const unsigned run_flags = EHT_LOOKUP_RUN_IDS_HOST | (a->gpu ? EHT_LOOKUP_RUN_OUT_DEVICE : EHT_LOOKUP_RUN_OUT_HOST);
	void *pout = a->gpu ? (void *)(uintptr_t)d->dout : d->out;
	d->s1 = (struct eht_disk_stats){.size = sizeof(d->s1)};
	d->sw = (struct eht_disk_stats){.size = sizeof(d->sw)};
	d->warm = a->steps / 5;
	for (int s = 0; s < a->steps; s++) {
		if (s == d->warm) {
			if (eht_disk_stats(d->t, &d->sw))
				return cli_error("bench disk", a->json, NULL);
			d->iow = io_read_bytes();
		}
		if (bench_workload_fill(d->wl, n, 1, n, d->ids, NULL))
			return cli_error("bench disk", a->json, NULL);
		if (s >= d->warm && a->gpu)
			d->hot_ids += count_hot(d->ids, n, d->hot, d->nhot);
		double t0 = eht_now_s();
		if (eht_lookup_run(d->lk, d->ids, EHT_ID_INT32, 0, n, pout, NULL, run_flags, NULL) ||
		    (a->gpu && eht_dev_stream_sync(NULL)))
			return cli_error("bench disk", a->json, NULL);
		d->ms[s] = (eht_now_s() - t0) * 1e3;
	}
	if (eht_disk_stats(d->t, &d->s1))
		return cli_error("bench disk", a->json, NULL);
	d->io1 = io_read_bytes();
	return 0;
}

/* The steady state's figures. */
struct dm_fig {
	int ss, split;
	double first, hit, pc_hit, rows_step, unc_step, hot_step, tier_step, bytes_step, io_step;
	struct bench_stats st;
	const char *reads;
};

static struct dm_fig dm_figures(struct dm_run *d)
{
	const struct bench_disk_mem_args *a = d->a;
	struct dm_fig f = {.ss = a->steps - d->warm, .first = d->ms[0]};
	int ss = f.ss;
	bench_stats(d->ms + d->warm, ss, 1, &f.st);
	uint64_t res = d->s1.resident_rows - d->sw.resident_rows, unc = d->s1.uncached_rows - d->sw.uncached_rows;
	/* Hit rate over ids: with GPU output the engine deduplicates each step and serves hot-set ids from
	 * GPU memory, so the tier sees only the step's distinct misses; an id is a hit unless it cost a
	 * storage read (one read serves every repeat of its row in the step). */
	uint64_t hits = d->s1.cache_hits - d->sw.cache_hits, tier = res + unc + hits, all = (uint64_t)a->ids * (uint64_t)ss;
	if (all < tier + d->hot_ids) /* no dedup (host output): every id reached the tier or the hot set */
		all = tier + d->hot_ids;
	f.hit = all ? (double)(all - unc) / (double)all : 0;
	f.pc_hit = res + unc ? (double)res / (double)(res + unc) : 0;
	f.rows_step = (double)all / ss, f.unc_step = (double)unc / ss, f.hot_step = (double)d->hot_ids / ss;
	f.tier_step = (double)tier / ss;
	f.bytes_step = (double)(d->s1.uncached_bytes - d->sw.uncached_bytes) / ss;
	f.io_step = d->iow && d->io1 >= d->iow ? (double)(d->io1 - d->iow) / ss : 0;
	f.split = d->s1.split_mode != 0;
	f.reads = d->s1.split_mode == 2 ? "io_uring" : d->s1.split_mode == 1 ? "pread" : "page faults (no split)";
	return f;
}

static int dm_report_json(struct dm_run *d, const struct dm_fig *f)
{
	const struct bench_disk_mem_args *a = d->a;
	json_t *r = bench_report_new("disk-mem");
	json_t *v = json_pack("{s:s, s:s, s:f, s:f, s:b, s:s, s:f, s:s, s:I, s:i, s:i, s:f, s:f, s:f, s:f}", "file",
			      a->path, "workload", bench_workload_name(d->wl), "table_gib", (double)d->table / (1 << 30),
			      "mem_limit_gib", a->mem_limit_gib, "cgroup", d->in_cg, "limit_mechanism", d->cg.mech,
			      "limit_applied_gib", (double)d->cg.limit / (1 << 30), "limit_detail", d->why,
			      "ids", (json_int_t)a->ids, "steps", a->steps, "steady_steps", f->ss, "first_step_ms", f->first,
			      "steady_median_ms", f->st.median, "steady_mean_ms", f->st.mean, "steady_p90_ms", f->st.p90);
	json_t *w = json_pack("{s:o, s:o, s:f, s:f, s:f, s:f, s:f, s:I, s:i, s:s, s:s, s:I, s:f}", "hit_rate",
			      bench_real_or_null(f->hit, f->split), "page_cache_hit_rate", bench_real_or_null(f->pc_hit, f->split),
			      "rows_per_step", f->rows_step, "uncached_rows_per_step", f->unc_step, "gpu_hot_ids_per_step",
			      f->hot_step, "uncached_page_bytes_per_step", f->bytes_step, "storage_read_bytes_per_step",
			      f->io_step, "cache_bytes", (json_int_t)(a->no_cache ? 0 : d->cache), "split_mode",
			      (int)d->s1.split_mode, "reads", f->reads, "output", a->gpu ? "gpu" : "host", "hotset_rows",
			      (json_int_t)(a->gpu ? d->nhot : 0), "hotset_coverage_learned", a->gpu ? d->hot_cov : 0.0);
	if (!v || !w) {
		json_decref(v);
		json_decref(w);
		json_decref(r);
		return cli_error("bench disk", a->json, "cannot build the JSON report");
	}
	json_object_update_new(r, v);
	json_object_update_new(r, w);
	json_object_set_new(r, "cgroup_usage_bytes", json_integer((json_int_t)bench_cg_usage(&d->cg)));
	json_object_set_new(r, "tier_rows_per_step", json_real(f->tier_step));
	cli_print_json(r);
	return 0;
}

static void dm_report_table(struct dm_run *d, const struct dm_fig *f)
{
	const struct bench_disk_mem_args *a = d->a;
	printf("workload %s, %zu ids a step into %s memory, %d steps (%d steady), table %.2f GiB, limit %.2f GiB "
	       "(%s%s), hot-row cache %.0f MiB, GPU hot set %zu rows, uncached rows read with %s\n",
	       bench_workload_name(d->wl), a->ids, a->gpu ? "GPU" : "host", a->steps, f->ss, (double)d->table / (1 << 30),
	       (double)d->budget / (1 << 30), d->cg.mech, d->cg.limit ? "" : ": not applied",
	       a->no_cache ? 0.0 : (double)d->cache / (1 << 20), a->gpu ? d->nhot : 0, f->reads);
	printf("%10s %10s %10s %10s %8s %8s %11s %11s %11s %13s %13s\n", "first ms", "median ms", "mean ms", "p90 ms",
	       "hit %", "pc hit %", "rows/step", "GPU hot/st", "uncached/st", "page MiB/st", "read MiB/st");
	if (f->split)
		printf("%10.1f %10.2f %10.2f %10.2f %7.1f%% %7.1f%% %11.0f %11.0f %11.0f %13.2f %13.2f\n", f->first,
		       f->st.median, f->st.mean, f->st.p90, 100 * f->hit, 100 * f->pc_hit, f->rows_step, f->hot_step,
		       f->unc_step, f->bytes_step / (1 << 20), f->io_step / (1 << 20));
	else /* no split: only the storage layer's count */
		printf("%10.1f %10.2f %10.2f %10.2f %8s %8s %11s %11.0f %11s %13s %13.2f\n", f->first, f->st.median,
		       f->st.mean, f->st.p90, "-", "-", "-", f->hot_step, "-", "-", f->io_step / (1 << 20));
	printf("(steady state: steps after the first fifth; hit: ids served by the GPU hot set, the hot-row cache "
	       "or the page cache; pc hit: rows the disk tier found in the page cache; page MiB: pages of "
	       "uncached rows; read MiB: /proc/self/io read_bytes)\n");
	if (d->cg.dir[0])
		printf("cgroup memory in use at the end: %.2f GiB\n", (double)bench_cg_usage(&d->cg) / (1 << 30));
}

int bench_disk_mem(const struct bench_disk_mem_args *a)
{
	/* static: the signal handler undoes its cgroup (bench_cg_undo) */
	static struct dm_run d;
	memset(&d, 0, sizeof(d));
	d.a = a;
	d.info = bench_info(a->json);
	d.table = a->rows * EHT_ENGRAM_ROW_BYTES;
	d.limit = (uint64_t)(a->mem_limit_gib * (double)(1ull << 30));
	d.cg.mech = BENCH_CG_NONE;
	int rc = 1;
	if (cli_undo_push(bench_cg_undo, &d.cg))
		return cli_error("bench disk", a->json, "too many cleanups");
	if (dm_workload(&d) || dm_limit(&d, &rc) || dm_setup(&d) || dm_steps(&d))
		goto leave;
	struct dm_fig f = dm_figures(&d);
	if (a->json) {
		if (dm_report_json(&d, &f))
			goto leave;
	} else {
		dm_report_table(&d, &f);
	}
	rc = 0;
leave:
	eht_lookup_destroy(d.lk);
	eht_table_close(d.t);
	if (d.dout)
		eht_dev_free(d.dout);
	bench_cg_leave(&d.cg);
	cli_undo_pop();
	bench_workload_free(d.wl);
	free(d.hot);
	free(d.ids);
	free(d.out);
	free(d.ms);
	return rc;
}
