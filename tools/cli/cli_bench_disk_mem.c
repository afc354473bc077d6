/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_disk_mem.c: `eht bench disk --mem-limit G`: the disk tier under a memory limit smaller
 * than the table (bench_cgroup.c: cgroup v2, v1 or a transient scope; else a file larger than free
 * memory), a few hundred steps of a workload, gathered into GPU memory where there is a GPU (with an
 * optional GPU hot set learned from the workload): steady-state step times, hit rates, bytes read. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_cgroup.h"
#include "bench_workload.h"
#include "cli.h"
#include "cli_bench_disk_mem.h"
#include "gpu/dev.h"
#include "eht.h"
#include "os/numa.h"

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

int bench_disk_mem(const struct bench_disk_mem_args *a)
{
	FILE *info = a->json ? stderr : stdout;
	uint64_t table = a->rows * EHT_ENGRAM_ROW_BYTES;
	uint64_t limit = (uint64_t)(a->mem_limit_gib * (double)(1ull << 30));
	struct bench_cg cg = {.mech = BENCH_CG_NONE};
	char why[4096], swhy[700];
	struct bench_workload *wl = NULL;
	eht_table *t = NULL;
	eht_lookup *lk = NULL;
	int32_t *ids = NULL;
	uint8_t *out = NULL;
	double *ms = NULL;
	int64_t *hot = NULL;
	size_t nhot = 0;
	double hot_cov = 0;
	eht_dptr dout = 0;
	int rc = 1, in_cg = 0;
	size_t n = a->ids;

	/* The workload (a text's ids, hashed) and the hot set are made outside the limit: they are the
	 * bench's, not the tier's. */
	if (bench_workload_open(a->workload, a->rows, 7, &wl)) {
		cli_error("bench disk", a->json, NULL);
		goto leave;
	}
	if (a->hotset) {
		/* Learned on the second half of the text, steps drawn from the first. */
		size_t T = bench_workload_tokens(wl);
		if (bench_workload_set_range(wl, 0, T / 2) ||
		    bench_workload_hotset(wl, a->hotset, 0, T / 2, &hot, &nhot, &hot_cov)) {
			cli_error("bench disk", a->json, a->workload && !strncmp(a->workload, "text:", 5) ? NULL
				  : "--hotset needs --workload text:FILE (the hot set is learned from the text)");
			goto leave;
		}
		qsort(hot, nhot, sizeof(*hot), cmp_i64); /* for count_hot; the set's order does not matter */
		if (!a->gpu)
			fprintf(info, "--hotset %zu: no GPU, so no GPU hot set (runs into host memory do not use one)\n",
				a->hotset);
	}
	if (bench_cg_enter(&cg, limit, why, sizeof(why)) == 0) {
		in_cg = 1;
		fprintf(info, "memory limit: %s (table %.2f GiB)\n", why, (double)table / (1 << 30));
	} else {
		/* No cgroup of our own: a transient scope runs this command again inside a limit. */
		int src = bench_cg_scope_exec(limit, swhy, sizeof(swhy));
		if (src >= 0) {
			rc = src;
			goto leave;
		}
		uint64_t avail = mem_available();
		if (avail && table > avail) {
			cg.mech = BENCH_CG_BIGFILE;
			cg.limit = avail;
			fprintf(info, "memory limit: no cgroup could be made (%s; %s); the table (%.2f GiB) is larger than "
				      "the %.2f GiB of free memory, which is the limit this run has\n",
				why, swhy, (double)table / (1 << 30), (double)avail / (1 << 30));
		} else {
			fprintf(info, "memory limit: NOT APPLIED: no cgroup could be made (%s; %s), and the table (%.2f "
				      "GiB) fits in the %.2f GiB of free memory: run as root, in a delegated cgroup, or with "
				      "--file-gib above %.0f for a table larger than free memory\n",
				why, swhy, (double)table / (1 << 30), (double)avail / (1 << 30),
				(double)avail / (1 << 30) + 1);
		}
	}
	uint64_t budget = cg.limit ? cg.limit : limit;
	ids = malloc(n * sizeof(*ids));
	ms = malloc((size_t)a->steps * sizeof(double));
	if (!ids || !ms || (!a->gpu && !(out = malloc(n * EHT_ENGRAM_ROW_BYTES)))) {
		cli_error("bench disk", a->json, "out of memory");
		goto leave;
	}
	/* The disk tier's hot-row cache from the same budget: 1/16 of it (16 MiB at least). */
	uint64_t cache = budget / 16 > (16ull << 20) ? budget / 16 : (16ull << 20);
	struct eht_disk_opts dop = {.size = sizeof(dop), .weight = "bench.engram.weight", .scale = "bench.engram.scale",
				    .cache_bytes = a->no_cache ? EHT_DISK_NO_CACHE : cache};
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = EHT_LOOKUP_HOST, .device = a->gpu ? a->device : -1,
				     .numa_node = -1, .threads = a->threads, .max_batch = n,
				     .flags = a->gpu ? 0 : EHT_LOOKUP_CPU_ONLY};
	if (eht_disk_open(a->path, &dop, &t) || eht_disk_drop_cache(t) || eht_lookup_create(t, &lo, &lk)) {
		cli_error("bench disk", a->json, NULL);
		goto leave;
	}
	/* After the engine: it made the device's context current on this thread. */
	if (a->gpu && eht_dev_alloc(&dout, n * EHT_ENGRAM_ROW_BYTES)) {
		cli_error("bench disk", a->json, NULL);
		goto leave;
	}
	double t_hot = cli_now_s();
	if (hot && a->gpu && eht_lookup_set_hotset(lk, hot, nhot)) {
		cli_error("bench disk", a->json, NULL);
		goto leave;
	}
	t_hot = cli_now_s() - t_hot;
	if (hot && a->gpu)
		fprintf(info, "GPU hot set: %zu rows (%.1f MB of GPU memory) read from the disk tier in %.2f s; they take "
			      "%.1f %% of the ids of the other half of the text\n",
			nhot, (double)nhot * (EHT_ENGRAM_ROW_BYTES + 48) / 1e6, t_hot, 100 * hot_cov);
	const unsigned run_flags = EHT_LOOKUP_RUN_IDS_HOST | (a->gpu ? EHT_LOOKUP_RUN_OUT_DEVICE : EHT_LOOKUP_RUN_OUT_HOST);
	void *pout = a->gpu ? (void *)(uintptr_t)dout : out;
	struct eht_disk_stats s1 = {.size = sizeof(s1)}, sw = {.size = sizeof(sw)};
	uint64_t iow = 0, hot_ids = 0;
	int warm = a->steps / 5; /* the first fifth fills the caches: not steady state */
	for (int s = 0; s < a->steps; s++) {
		if (s == warm) {
			if (eht_disk_stats(t, &sw)) {
				cli_error("bench disk", a->json, NULL);
				goto leave;
			}
			iow = io_read_bytes();
		}
		if (bench_workload_fill(wl, n, 1, n, ids, NULL)) {
			cli_error("bench disk", a->json, NULL);
			goto leave;
		}
		if (s >= warm && a->gpu)
			hot_ids += count_hot(ids, n, hot, nhot);
		double t0 = cli_now_s();
		if (eht_lookup_run(lk, ids, EHT_ID_INT32, 0, n, pout, NULL, run_flags, NULL) ||
		    (a->gpu && eht_dev_stream_sync(NULL))) {
			cli_error("bench disk", a->json, NULL);
			goto leave;
		}
		ms[s] = (cli_now_s() - t0) * 1e3;
	}
	if (eht_disk_stats(t, &s1)) {
		cli_error("bench disk", a->json, NULL);
		goto leave;
	}
	uint64_t io1 = io_read_bytes();
	int ss = a->steps - warm;
	double first = ms[0];
	qsort(ms + warm, (size_t)ss, sizeof(double), cli_cmp_double);
	double med = ms[warm + ss / 2], p90 = ms[warm + (ss * 9) / 10 < a->steps ? warm + (ss * 9) / 10 : a->steps - 1];
	double mean = 0;
	for (int s = warm; s < a->steps; s++)
		mean += ms[s] / ss;
	uint64_t res = s1.resident_rows - sw.resident_rows, unc = s1.uncached_rows - sw.uncached_rows;
	/* Hit rate over ids: with GPU output the engine deduplicates each step and serves hot-set ids from
	 * GPU memory, so the tier sees only the step's distinct misses; an id is a hit unless it cost a
	 * storage read (one read serves every repeat of its row in the step). */
	uint64_t hits = s1.cache_hits - sw.cache_hits, tier = res + unc + hits, all = (uint64_t)n * (uint64_t)ss;
	if (all < tier + hot_ids) /* no dedup (host output): every id reached the tier or the hot set */
		all = tier + hot_ids;
	double hit = all ? (double)(all - unc) / (double)all : 0;
	double pc_hit = res + unc ? (double)res / (double)(res + unc) : 0;
	double rows_step = (double)all / ss, unc_step = (double)unc / ss, hot_step = (double)hot_ids / ss;
	double tier_step = (double)tier / ss;
	double bytes_step = (double)(s1.uncached_bytes - sw.uncached_bytes) / ss;
	double io_step = iow && io1 >= iow ? (double)(io1 - iow) / ss : 0;
	int split = s1.split_mode != 0;
	const char *reads = s1.split_mode == 2 ? "io_uring" : s1.split_mode == 1 ? "pread" : "page faults (no split)";
	if (a->json) {
		json_t *r = cli_report_new("disk-mem");
		json_t *v = json_pack("{s:s, s:s, s:f, s:f, s:b, s:s, s:f, s:s, s:I, s:i, s:i, s:f, s:f, s:f, s:f}", "file",
				      a->path, "workload", bench_workload_name(wl), "table_gib", (double)table / (1 << 30),
				      "mem_limit_gib", a->mem_limit_gib, "cgroup", in_cg, "limit_mechanism", cg.mech,
				      "limit_applied_gib", (double)cg.limit / (1 << 30), "limit_detail", why,
				      "ids", (json_int_t)n, "steps", a->steps, "steady_steps", ss, "first_step_ms", first,
				      "steady_median_ms", med, "steady_mean_ms", mean, "steady_p90_ms", p90);
		json_t *w = json_pack("{s:o, s:o, s:f, s:f, s:f, s:f, s:f, s:I, s:i, s:s, s:s, s:I, s:f}", "hit_rate",
				      cli_real_or_null(hit, split), "page_cache_hit_rate", cli_real_or_null(pc_hit, split),
				      "rows_per_step", rows_step, "uncached_rows_per_step", unc_step, "gpu_hot_ids_per_step",
				      hot_step, "uncached_page_bytes_per_step", bytes_step, "storage_read_bytes_per_step",
				      io_step, "cache_bytes", (json_int_t)(a->no_cache ? 0 : cache), "split_mode",
				      (int)s1.split_mode, "reads", reads, "output", a->gpu ? "gpu" : "host", "hotset_rows",
				      (json_int_t)(a->gpu ? nhot : 0), "hotset_coverage_learned", a->gpu ? hot_cov : 0.0);
		if (!v || !w) {
			json_decref(v);
			json_decref(w);
			json_decref(r);
			cli_error("bench disk", a->json, "cannot build the JSON report");
			goto leave;
		}
		json_object_update_new(r, v);
		json_object_update_new(r, w);
		json_object_set_new(r, "cgroup_usage_bytes", json_integer((json_int_t)bench_cg_usage(&cg)));
		json_object_set_new(r, "tier_rows_per_step", json_real(tier_step));
		cli_print_json(r);
	} else {
		printf("workload %s, %zu ids a step into %s memory, %d steps (%d steady), table %.2f GiB, limit %.2f GiB "
		       "(%s%s), hot-row cache %.0f MiB, GPU hot set %zu rows, uncached rows read with %s\n",
		       bench_workload_name(wl), n, a->gpu ? "GPU" : "host", a->steps, ss, (double)table / (1 << 30),
		       (double)budget / (1 << 30), cg.mech, cg.limit ? "" : ": not applied",
		       a->no_cache ? 0.0 : (double)cache / (1 << 20), a->gpu ? nhot : 0, reads);
		printf("%10s %10s %10s %10s %8s %8s %11s %11s %11s %13s %13s\n", "first ms", "median ms", "mean ms", "p90 ms",
		       "hit %", "pc hit %", "rows/step", "GPU hot/st", "uncached/st", "page MiB/st", "read MiB/st");
		if (split)
			printf("%10.1f %10.2f %10.2f %10.2f %7.1f%% %7.1f%% %11.0f %11.0f %11.0f %13.2f %13.2f\n", first, med,
			       mean, p90, 100 * hit, 100 * pc_hit, rows_step, hot_step, unc_step, bytes_step / (1 << 20),
			       io_step / (1 << 20));
		else /* no split: only the storage layer's count */
			printf("%10.1f %10.2f %10.2f %10.2f %8s %8s %11s %11.0f %11s %13s %13.2f\n", first, med, mean, p90, "-",
			       "-", "-", hot_step, "-", "-", io_step / (1 << 20));
		printf("(steady state: steps after the first fifth; hit: ids served by the GPU hot set, the hot-row cache "
		       "or the page cache; pc hit: rows the disk tier found in the page cache; page MiB: pages of "
		       "uncached rows; read MiB: /proc/self/io read_bytes)\n");
		if (cg.dir[0])
			printf("cgroup memory in use at the end: %.2f GiB\n", (double)bench_cg_usage(&cg) / (1 << 30));
	}
	rc = 0;
leave:
	eht_lookup_destroy(lk);
	eht_table_close(t);
	if (dout)
		eht_dev_free(dout);
	bench_cg_leave(&cg);
	bench_workload_free(wl);
	free(hot);
	free(ids);
	free(out);
	free(ms);
	return rc;
}
