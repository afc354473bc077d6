/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_lookup.c: `eht bench lookup`: every strategy on the prefill (196,608 ids) and decode
 * (6,144 ids) shapes of a DeepSeek-V4.1 Engram table (264-byte rows, uniform ids), beside the link's
 * own pinned H2D bandwidth measured in the same run. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench_workload.h"
#include "cli.h"
#include "os/numa.h"
#include "cuda/cu_driver.h"
#include "eht.h"
#include "util/env.h"
#include "util/pool.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define MAX_SHAPES 8

/* Parallel fill: every 8-byte word a hash of its index (fast, and no two rows alike). */
struct fill_job {
	uint64_t *p;
	size_t words, per_task;
};
static void fill_task(void *arg, size_t task, unsigned worker)
{
	struct fill_job *j = arg;
	size_t b = task * j->per_task, e = b + j->per_task < j->words ? b + j->per_task : j->words;
	for (size_t i = b; i < e; i++) {
		uint64_t x = i * 0x9e3779b97f4a7c15ull;
		j->p[i] = x ^ (x >> 29);
	}
}

/* Best-of-6 pinned H2D copy of 256 MiB, timed with events: the link's practical ceiling. */
static double link_gbs(int dev)
{
	const size_t bytes = 256u << 20;
	void *h = NULL;
	CUdeviceptr d = 0;
	CUevent e0 = NULL, e1 = NULL;
	double best = 0;
	if (eht_cu_use_device(dev) || EHT_CU_CHECK(cuMemHostAlloc(&h, bytes, CU_MEMHOSTALLOC_PORTABLE)) ||
	    EHT_CU_CHECK(cuMemAlloc(&d, bytes)) || EHT_CU_CHECK(cuEventCreate(&e0, 0)) ||
	    EHT_CU_CHECK(cuEventCreate(&e1, 0)))
		goto out;
	memset(h, 1, bytes);
	for (int i = 0; i < 7; i++) {
		float ms = 0;
		if (EHT_CU_CHECK(cuEventRecord(e0, NULL)) || EHT_CU_CHECK(cuMemcpyHtoDAsync(d, h, bytes, NULL)) ||
		    EHT_CU_CHECK(cuEventRecord(e1, NULL)) || EHT_CU_CHECK(cuEventSynchronize(e1)) ||
		    EHT_CU_CHECK(cuEventElapsedTime(&ms, e0, e1)))
			goto out;
		double g = (double)bytes / (ms * 1e-3) / 1e9;
		if (i && g > best)
			best = g;
	}
out:
	if (best == 0)
		fprintf(stderr, "eht bench lookup: link bandwidth not measured: %s\n", eht_last_error());
	if (e0)
		eht_cu.cuEventDestroy(e0);
	if (e1)
		eht_cu.cuEventDestroy(e1);
	if (d)
		eht_cu.cuMemFree(d);
	if (h)
		eht_cu.cuMemFreeHost(h);
	return best;
}

struct result {
	int strategy;
	size_t n;
	double med_ms, p90_ms, distinct; /* distinct: mean fraction of distinct ids per step */
	int ok;
	char err[160];
};

static void usage(void)
{
	fprintf(stderr, "usage: eht bench lookup [--table-gib G] [--ids N,N...] [--strategies direct,sorted,host,auto]\n"
			"                        [--reps R] [--threads T] [--format raw|bf16] [--device D] [--cpu] [--json]\n"
			"                        [--workload uniform|text:FILE]\n");
}

static int parse_strategy(const char *s)
{
	static const char *names[] = {"auto", "direct", "sorted", "host"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

int bench_lookup(int argc, char **argv)
{
	double gib = 0;
	size_t shapes[MAX_SHAPES] = {196608, 6144};
	int nshapes = 2, strategies[4] = {EHT_LOOKUP_DIRECT, EHT_LOOKUP_SORTED, EHT_LOOKUP_HOST, EHT_LOOKUP_AUTO};
	int nstrat = 4, reps = 20, json = 0, fmt = EHT_LOOKUP_RAW, dev = 0, cpu = 0;
	unsigned threads = 0;
	const char *workload = "uniform";
	struct bench_workload *wl = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--cpu")) {
			cpu = 1;
		} else if (!strcmp(a, "--table-gib") && v) {
			gib = atof(v), i++;
		} else if (!strcmp(a, "--workload") && v) {
			workload = v, i++;
		} else if (!strcmp(a, "--reps") && v) {
			reps = atoi(v), i++;
		} else if (!strcmp(a, "--threads") && v) {
			threads = (unsigned)atoi(v), i++;
		} else if (!strcmp(a, "--device") && v) {
			dev = atoi(v), i++;
		} else if (!strcmp(a, "--format") && v) {
			fmt = !strcmp(v, "bf16") ? EHT_LOOKUP_BF16 : EHT_LOOKUP_RAW, i++;
		} else if (!strcmp(a, "--ids") && v) {
			nshapes = 0;
			for (char *s = argv[++i], *end; *s && nshapes < MAX_SHAPES; s = *end ? end + 1 : end) {
				long long n = strtoll(s, &end, 10);
				if (n <= 0 || (*end && *end != ',')) {
					usage();
					return 2;
				}
				shapes[nshapes++] = (size_t)n;
			}
		} else if (!strcmp(a, "--strategies") && v) {
			nstrat = 0;
			char buf[128];
			snprintf(buf, sizeof(buf), "%s", argv[++i]);
			for (char *tok = strtok(buf, ","); tok && nstrat < 4; tok = strtok(NULL, ",")) {
				int s = parse_strategy(tok);
				if (s < 0) {
					usage();
					return 2;
				}
				strategies[nstrat++] = s;
			}
		} else {
			usage();
			return 2;
		}
	}
	if (reps < 1 || reps > 10000 || nshapes == 0 || nstrat == 0 || gib < 0) {
		usage();
		return 2;
	}
	int gpu = !cpu && eht_cu_device_count() > dev;
	FILE *info = json ? stderr : stdout;
	if (!gpu)
		fprintf(info, "no GPU%s: HOST only, rows gathered into host memory\n", cpu ? " (--cpu)" : "");

	/* Table size: 48 GiB where at least 64 GiB are free, else half of what is free. */
	uint64_t avail = eht_mem_available();
	if (gib == 0) {
		gib = 48;
		if (avail < (64ull << 30)) {
			gib = floor((double)avail / 2 / (1 << 30) * 4) / 4;
			if (gib < 0.25)
				gib = 0.25;
			fprintf(info, "only %.1f GiB of memory available: table scaled down to %.2f GiB (the target assumes 48)\n",
				(double)avail / (1 << 30), gib);
		}
	}
	uint64_t rows = (uint64_t)(gib * (double)(1ull << 30)) / RB;
	size_t bytes = rows * RB;
	if (rows == 0 || rows > INT32_MAX) {
		fprintf(stderr, "eht bench lookup: %.2f GiB gives %llu rows (1..2^31-1 allowed)\n", gib, (unsigned long long)rows);
		return 2;
	}
	if (avail && bytes + (2ull << 30) > avail)
		fprintf(stderr, "eht bench lookup: warning: %.1f GiB table with %.1f GiB available\n", gib,
			(double)avail / (1 << 30));

	int rc = 1;
	eht_pool *pool = NULL;
	eht_table *t = NULL;
	uint8_t *table = MAP_FAILED;
	int32_t *ids = NULL;
	uint8_t *hout = NULL;
	CUdeviceptr dout = 0, dids = 0;
	struct result res[4 * MAX_SHAPES];
	int nres = 0;
	size_t maxn = 0;
	for (int i = 0; i < nshapes; i++)
		if (shapes[i] > maxn)
			maxn = shapes[i];
	const size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	const int batches = reps + 2; /* distinct ids per rep: no cache helps a later rep */

	double t0 = cli_now_s();
	table = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (table == MAP_FAILED) {
		fprintf(stderr, "eht bench lookup: mmap of %zu bytes: %s\n", bytes, strerror(errno));
		return 1;
	}
	madvise(table, bytes, MADV_HUGEPAGE); /* fewer CPU translation misses; a hint only */
	if (eht_pool_create(0, -1, 100, &pool)) {
		cli_fail("bench lookup", NULL);
		goto out;
	}
	struct fill_job fj = {.p = (uint64_t *)(void *)table, .words = bytes / 8, .per_task = 1u << 21};
	eht_pool_run(pool, (fj.words + fj.per_task - 1) / fj.per_task, fill_task, &fj);
	double t_fill = cli_now_s() - t0;
	t0 = cli_now_s();
	if (eht_table_wrap(table, rows, RB, gpu ? dev : -1, "bench", &t)) {
		cli_fail("bench lookup", NULL);
		goto out;
	}
	struct eht_table_info ti = {.size = sizeof(ti)};
	eht_table_get_info(t, &ti);
	double t_pin = cli_now_s() - t0;
	if (gpu && !ti.device_ptr)
		fprintf(info, "table could not be pinned for GPU %d: DIRECT and SORTED will fail\n", dev);
	fprintf(info, "table: %.2f GiB, %llu rows of %d B, filled in %.1f s", gib, (unsigned long long)rows, RB, t_fill);
	if (gpu)
		fprintf(info, ", pinned in %.1f s", t_pin);
	fprintf(info, "\n");

	double link = gpu ? link_gbs(dev) : 0;
	if (gpu)
		fprintf(info, "link: pinned H2D %.1f GB/s (best of 6, 256 MiB)\n", link);

	ids = malloc((size_t)batches * maxn * sizeof(*ids));
	if (!ids) {
		fprintf(stderr, "eht bench lookup: out of memory for ids\n");
		goto out;
	}
	if (bench_workload_open(workload, rows, 0, &wl)) {
		cli_fail("bench lookup", NULL);
		goto out;
	}
	if (gpu) {
		if (EHT_CU_CHECK(cuMemAlloc(&dout, maxn * ob)) ||
		    EHT_CU_CHECK(cuMemAlloc(&dids, (size_t)batches * maxn * sizeof(*ids)))) {
			cli_fail("bench lookup", NULL);
			goto out;
		}
	} else if (!(hout = malloc(maxn * ob))) {
		fprintf(stderr, "eht bench lookup: out of memory for the output\n");
		goto out;
	}

	double *times = malloc((size_t)reps * sizeof(double));
	if (!times)
		goto out;
	for (int si = 0; si < nstrat; si++) {
		int strat = strategies[si];
		struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strat, .format = fmt, .device = gpu ? dev : -1,
					    .numa_node = -1, .threads = threads, .max_batch = maxn,
					    .flags = gpu ? 0 : EHT_LOOKUP_CPU_ONLY};
		eht_lookup *lk = NULL;
		int crc = (!gpu && (strat == EHT_LOOKUP_DIRECT || strat == EHT_LOOKUP_SORTED))
				  ? -ENODEV
				  : eht_lookup_create(t, &o, &lk);
		for (int k = 0; k < nshapes; k++) {
			struct result *r = &res[nres++];
			memset(r, 0, sizeof(*r));
			r->strategy = strat;
			r->n = shapes[k];
			if (crc) {
				snprintf(r->err, sizeof(r->err), "%s", crc == -ENODEV && !gpu ? "needs a GPU" : eht_last_error());
				continue;
			}
			/* GPU strategies get ids in GPU memory (as engines have them); HOST and AUTO host ids. */
			int gpu_ids = strat == EHT_LOOKUP_DIRECT || strat == EHT_LOOKUP_SORTED;
			/* the same steps for every strategy: the workload restarts from its seed per shape */
			bench_workload_free(wl);
			wl = NULL;
			int err = bench_workload_open(workload, rows, 0, &wl) ||
				  bench_workload_fill(wl, r->n, (size_t)batches, maxn, ids, &r->distinct) ||
				  (gpu && EHT_CU_CHECK(cuMemcpyHtoD(dids, ids, (size_t)batches * maxn * sizeof(*ids))));
			for (int rep = -2; rep < reps && !err; rep++) {
				size_t off = (size_t)(rep + 2) * maxn;
				const void *pid = gpu_ids ? (const void *)(uintptr_t)(dids + off * sizeof(*ids)) : ids + off;
				void *pout = gpu ? (void *)(uintptr_t)dout : hout;
				double a = cli_now_s();
				err = eht_lookup_run(lk, pid, EHT_ID_INT32, 0, r->n, pout, NULL, 0, NULL);
				if (!err && gpu)
					err = EHT_CU_CHECK(cuStreamSynchronize(NULL));
				if (rep >= 0)
					times[rep] = cli_now_s() - a;
			}
			if (err) {
				snprintf(r->err, sizeof(r->err), "%s", eht_last_error());
				continue;
			}
			qsort(times, (size_t)reps, sizeof(double), cli_cmp_double);
			r->med_ms = times[reps / 2] * 1e3;
			r->p90_ms = times[(reps * 9) / 10 < reps ? (reps * 9) / 10 : reps - 1] * 1e3;
			r->ok = 1;
		}
		eht_lookup_destroy(lk);
	}
	free(times);

	/* Report. */
	if (json) {
		printf("{\"table_gib\": %.3f, \"rows\": %llu, \"row_bytes\": %d, \"format\": \"%s\", \"gpu\": %s, "
		       "\"link_gbs\": %.2f, \"reps\": %d, \"workload\": \"%s\", \"results\": [",
		       gib, (unsigned long long)rows, RB, fmt ? "bf16" : "raw", gpu ? "true" : "false", link, reps,
		       bench_workload_name(wl));
	} else {
		printf("workload %s\n%-7s %8s %9s %9s %9s %7s %7s %8s %9s\n", bench_workload_name(wl), "strategy", "ids",
		       "med ms", "p90 ms", "Mrows/s", "GB/s", "link%", "vs DIRECT", "distinct");
	}
	for (int i = 0; i < nres; i++) {
		struct result *r = &res[i];
		double direct = 0;
		for (int j = 0; j < nres; j++)
			if (res[j].strategy == EHT_LOOKUP_DIRECT && res[j].n == r->n && res[j].ok)
				direct = res[j].med_ms;
		double rps = r->ok ? (double)r->n / (r->med_ms * 1e-3) : 0, gbs = rps * RB / 1e9;
		if (json) {
			printf("%s{\"strategy\": \"%s\", \"ids\": %zu, \"ok\": %s, \"distinct_fraction\": %.4f", i ? ", " : "",
			       eht_lookup_strategy_name(r->strategy), r->n, r->ok ? "true" : "false", r->distinct);
			if (r->ok)
				printf(", \"median_ms\": %.4f, \"p90_ms\": %.4f, \"rows_per_s\": %.0f, \"gbs\": %.2f, "
				       "\"link_fraction\": %.3f, \"speedup_vs_direct\": %.2f",
				       r->med_ms, r->p90_ms, rps, gbs, link > 0 ? gbs / link : 0, direct > 0 ? direct / r->med_ms : 0);
			else
				printf(", \"error\": \"%s\"", r->err); /* messages carry no quotes */
			printf("}");
		} else if (!r->ok) {
			printf("%-7s %8zu  -- %s\n", eht_lookup_strategy_name(r->strategy), r->n, r->err);
		} else {
			char lf[16] = "-", sp[16] = "-";
			if (link > 0)
				snprintf(lf, sizeof(lf), "%.0f%%", 100 * gbs / link);
			if (direct > 0)
				snprintf(sp, sizeof(sp), "%.2fx", direct / r->med_ms);
			printf("%-7s %8zu %9.3f %9.3f %9.1f %7.2f %7s %8s %8.1f%%\n", eht_lookup_strategy_name(r->strategy), r->n,
			       r->med_ms, r->p90_ms, rps / 1e6, gbs, lf, sp, 100 * r->distinct);
		}
	}
	if (json)
		printf("]}\n");
	else if (link > 0)
		printf("(time per step to the last byte in %s memory, after stream sync; %d fresh steps; "
		       "GB/s counts %d-byte rows; link floor for 196,608 rows: %.2f ms)\n",
		       gpu ? "GPU" : "host", reps, RB, 196608.0 * RB / (link * 1e9) * 1e3);
	else
		printf("(time per step to the last byte in %s memory; %d fresh steps; GB/s counts %d-byte "
		       "rows; no GPU link measured)\n", gpu ? "GPU" : "host", reps, RB);
	rc = 0;
out:
	if (dout)
		eht_cu.cuMemFree(dout);
	if (dids)
		eht_cu.cuMemFree(dids);
	free(hout);
	free(ids);
	bench_workload_free(wl);
	eht_table_close(t);
	if (table != MAP_FAILED)
		munmap(table, bytes);
	eht_pool_destroy(pool);
	return rc;
}
