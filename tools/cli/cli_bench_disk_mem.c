/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_disk_mem.c: `eht bench disk --mem-limit G`: the disk tier inside a memory cgroup smaller
 * than the table (v2 memory.max, else v1 memory.limit_in_bytes), a few hundred steps of a workload:
 * steady-state step times, page-cache hit rate (the tier's resident/uncached split), bytes read. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_workload.h"
#include "cli.h"
#include "cli_bench_disk_mem.h"
#include "eht.h"
#include "os/numa.h"

struct cg {
	char dir[1500];    /* the child cgroup made for the bench */
	char parent[1400]; /* where the process was */
	int v2;
};

/* Writes s to path. 0 or -errno. */
static int put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	int e = n < 0 ? -errno : 0;
	close(fd);
	return e;
}

static uint64_t get_u64(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long v = 0;
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Moves this process into a new memory cgroup limited to `limit` bytes. 0, or -errno with why. */
static int cg_enter(struct cg *c, uint64_t limit, char *why, size_t wl)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[1024];
	int rc = -ENOENT;
	memset(c, 0, sizeof(*c));
	snprintf(why, wl, "no memory cgroup found in /proc/self/cgroup");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		char probe[1600];
		if (!strcmp(c1 + 1, "memory")) {
			snprintf(c->parent, sizeof(c->parent), "/sys/fs/cgroup/memory%s", strcmp(c2 + 1, "/") ? c2 + 1 : "");
			c->v2 = 0;
		} else if (!strcmp(c1 + 1, "")) {
			snprintf(c->parent, sizeof(c->parent), "/sys/fs/cgroup%s", strcmp(c2 + 1, "/") ? c2 + 1 : "");
			snprintf(probe, sizeof(probe), "%s/cgroup.controllers", c->parent);
			FILE *g = fopen(probe, "r");
			char ctl[512] = "";
			if (g) {
				if (!fgets(ctl, sizeof(ctl), g))
					ctl[0] = '\0';
				fclose(g);
			}
			if (!strstr(ctl, "memory"))
				continue; /* v2 without the memory controller here */
			c->v2 = 1;
		} else {
			continue;
		}
		snprintf(c->dir, sizeof(c->dir), "%s/eht-bench-disk-%d", c->parent, (int)getpid());
		if (mkdir(c->dir, 0755) != 0) {
			rc = -errno;
			snprintf(why, wl, "mkdir %s: %s", c->dir, strerror(errno));
			c->dir[0] = '\0';
			continue;
		}
		if (c->v2) { /* the child needs the controller enabled in the parent */
			snprintf(probe, sizeof(probe), "%s/cgroup.subtree_control", c->parent);
			(void)put(probe, "+memory");
		}
		char val[32];
		snprintf(val, sizeof(val), "%" PRIu64, limit);
		snprintf(probe, sizeof(probe), "%s/%s", c->dir, c->v2 ? "memory.max" : "memory.limit_in_bytes");
		if ((rc = put(probe, val)) == 0) {
			snprintf(probe, sizeof(probe), "%s/cgroup.procs", c->dir);
			snprintf(val, sizeof(val), "%d", (int)getpid());
			rc = put(probe, val);
		}
		if (rc) {
			snprintf(why, wl, "%.1500s: %s", probe, strerror(-rc));
			rmdir(c->dir);
			c->dir[0] = '\0';
			continue;
		}
		snprintf(why, wl, "cgroup %s %s = %.2f GiB", c->dir, c->v2 ? "memory.max" : "memory.limit_in_bytes",
			 (double)limit / (1 << 30));
		break;
	}
	if (f)
		fclose(f);
	return c->dir[0] ? 0 : rc;
}

static void cg_leave(struct cg *c)
{
	if (!c->dir[0])
		return;
	char p[1600], val[32];
	snprintf(p, sizeof(p), "%s/cgroup.procs", c->parent);
	snprintf(val, sizeof(val), "%d", (int)getpid());
	if (put(p, val) != 0 || rmdir(c->dir) != 0)
		fprintf(stderr, "eht bench disk: could not remove cgroup %s: %s\n", c->dir, strerror(errno));
}

static uint64_t cg_usage(const struct cg *c)
{
	char p[1600];
	snprintf(p, sizeof(p), "%s/%s", c->dir, c->v2 ? "memory.current" : "memory.usage_in_bytes");
	return c->dir[0] ? get_u64(p) : 0;
}

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

int bench_disk_mem(const struct bench_disk_mem_args *a)
{
	FILE *info = a->json ? stderr : stdout;
	uint64_t table = a->rows * EHT_ENGRAM_ROW_BYTES;
	uint64_t limit = (uint64_t)(a->mem_limit_gib * (double)(1ull << 30));
	struct cg cg;
	char why[1600];
	struct bench_workload *wl = NULL;
	eht_table *t = NULL;
	eht_lookup *lk = NULL;
	int32_t *ids = NULL;
	uint8_t *out = NULL;
	double *ms = NULL;
	int rc = 1;
	size_t n = a->ids;
	if (bench_workload_open(a->workload, a->rows, 7, &wl)) {
		cli_error("bench disk", a->json, NULL);
		return 1;
	}
	ids = malloc(n * sizeof(*ids));
	out = malloc(n * EHT_ENGRAM_ROW_BYTES);
	ms = malloc((size_t)a->steps * sizeof(double));
	if (!ids || !out || !ms) {
		cli_error("bench disk", a->json, "out of memory");
		goto out;
	}
	int in_cg = cg_enter(&cg, limit, why, sizeof(why)) == 0;
	if (in_cg) {
		fprintf(info, "memory limit: %s (table %.2f GiB)\n", why, (double)table / (1 << 30));
	} else {
		uint64_t avail = eht_mem_available();
		fprintf(info, "memory limit: no cgroup could be made (%s); running unlimited: %.2f GiB available for "
			      "a %.2f GiB table%s\n", why, (double)avail / (1 << 30), (double)table / (1 << 30),
			avail > table ? " (the table fits: use --file-gib above the free memory for pressure)" : "");
	}
	/* The hot-row cache from the same budget: 1/16 of it (16 MiB at least). */
	uint64_t cache = limit / 16 > (16ull << 20) ? limit / 16 : (16ull << 20);
	struct eht_disk_opts dop = {.size = sizeof(dop), .weight = "bench.engram.weight", .scale = "bench.engram.scale",
				    .cache_bytes = a->no_cache ? EHT_DISK_NO_CACHE : cache};
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = EHT_LOOKUP_HOST, .device = -1, .numa_node = -1,
				     .threads = a->threads, .max_batch = n, .flags = EHT_LOOKUP_CPU_ONLY};
	if (eht_disk_open(a->path, &dop, &t) || eht_disk_drop_cache(t) || eht_lookup_create(t, &lo, &lk)) {
		cli_error("bench disk", a->json, NULL);
		goto leave;
	}
	struct eht_disk_stats s0 = {.size = sizeof(s0)}, s1 = {.size = sizeof(s1)}, sw = {.size = sizeof(sw)};
	uint64_t io0 = 0, iow = 0;
	int warm = a->steps / 5; /* the first fifth fills the caches: not steady state */
	for (int s = 0; s < a->steps; s++) {
		if (s == warm) {
			if (eht_disk_stats(t, &sw))
				break;
			iow = io_read_bytes();
		}
		if (s == 0) {
			if (eht_disk_stats(t, &s0))
				break;
			io0 = io_read_bytes();
		}
		if (bench_workload_fill(wl, n, 1, n, ids, NULL)) {
			cli_error("bench disk", a->json, NULL);
			goto leave;
		}
		double t0 = cli_now_s();
		if (eht_lookup_run(lk, ids, EHT_ID_INT32, 0, n, out, NULL, EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_HOST,
				   NULL)) {
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
	uint64_t res = s1.resident_rows - sw.resident_rows, unc = s1.uncached_rows - sw.uncached_rows;
	uint64_t hits = s1.cache_hits - sw.cache_hits;
	double hit = res + unc + hits ? (double)(res + hits) / (double)(res + unc + hits) : 0;
	double rows_step = (double)(res + unc + hits) / ss, unc_step = (double)unc / ss;
	double bytes_step = (double)(s1.uncached_bytes - sw.uncached_bytes) / ss;
	double io_step = iow && io1 >= iow ? (double)(io1 - iow) / ss : 0;
	(void)s0, (void)io0;
	if (a->json) {
		json_t *r = cli_report_new("disk-mem");
		json_t *v = json_pack("{s:s, s:s, s:f, s:f, s:b, s:I, s:i, s:i, s:f, s:f, s:f}", "file", a->path, "workload",
				      bench_workload_name(wl), "table_gib", (double)table / (1 << 30), "mem_limit_gib",
				      a->mem_limit_gib, "cgroup", in_cg, "ids", (json_int_t)n, "steps", a->steps,
				      "steady_steps", ss, "first_step_ms", first, "steady_median_ms", med, "steady_p90_ms", p90);
		json_t *w = json_pack("{s:o, s:f, s:f, s:f, s:f, s:I, s:i}", "hit_rate", cli_real_or_null(hit, s1.split_mode != 0),
				      "rows_per_step", rows_step, "uncached_rows_per_step", unc_step,
				      "uncached_page_bytes_per_step", bytes_step, "storage_read_bytes_per_step", io_step,
				      "cache_bytes", (json_int_t)(a->no_cache ? 0 : cache), "split_mode", (int)s1.split_mode);
		if (!v || !w) {
			json_decref(v);
			json_decref(w);
			json_decref(r);
			cli_error("bench disk", a->json, "cannot build the JSON report");
			goto leave;
		}
		json_object_update_new(r, v);
		json_object_update_new(r, w);
		json_object_set_new(r, "cgroup_usage_bytes", json_integer((json_int_t)(in_cg ? cg_usage(&cg) : 0)));
		cli_print_json(r);
	} else {
		printf("workload %s, %zu ids a step, %d steps (%d steady), table %.2f GiB, limit %.2f GiB%s, hot-row "
		       "cache %.0f MiB, uncached rows read with %s\n",
		       bench_workload_name(wl), n, a->steps, ss, (double)table / (1 << 30), a->mem_limit_gib,
		       in_cg ? "" : " (not applied)", a->no_cache ? 0.0 : (double)cache / (1 << 20),
		       s1.split_mode == 2 ? "io_uring" : s1.split_mode == 1 ? "pread" : "page faults (no split)");
		printf("%10s %10s %10s %8s %12s %12s %14s %14s\n", "first ms", "median ms", "p90 ms", "hit %", "rows/step",
		       "uncached/st", "page MiB/step", "read MiB/step");
		if (s1.split_mode)
			printf("%10.1f %10.2f %10.2f %7.1f%% %12.0f %12.0f %14.2f %14.2f\n", first, med, p90, 100 * hit,
			       rows_step, unc_step, bytes_step / (1 << 20), io_step / (1 << 20));
		else /* no split: only the storage layer's count */
			printf("%10.1f %10.2f %10.2f %8s %12s %12s %14s %14.2f\n", first, med, p90, "-", "-", "-", "-",
			       io_step / (1 << 20));
		printf("(steady state: steps after the first fifth; hit: rows served by the hot-row cache or found in the "
		       "page cache; page MiB: pages of uncached rows; read MiB: /proc/self/io read_bytes)\n");
		if (in_cg)
			printf("cgroup memory in use at the end: %.2f GiB\n", (double)cg_usage(&cg) / (1 << 30));
	}
	rc = 0;
leave:
	eht_lookup_destroy(lk);
	eht_table_close(t);
	if (in_cg)
		cg_leave(&cg);
out:
	bench_workload_free(wl);
	free(ids);
	free(out);
	free(ms);
	return rc;
}
