/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_lookup.c: `eht bench lookup`: every strategy on the prefill (196,608 ids) and decode
 * (6,144 ids) shapes of a DeepSeek-V4.1 Engram table (264-byte rows, uniform ids), or a sweep of batch
 * sizes, as engines call it: ids in host memory (eager), ids in GPU memory (eager), and a CUDA graph
 * captured once and replayed with fresh ids written into its id buffer; beside the link floor (the
 * rows' bytes at the pinned H2D bandwidth measured in the same run). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_workload.h"
#include "lookup/lk_hot.h"
#include "cli.h"
#include "os/numa.h"
#include "gpu/dev.h"
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
	eht_dptr d = 0;
	eht_event e0 = NULL, e1 = NULL;
	double best = 0;
	if (eht_dev_use(dev) || eht_dev_host_alloc(&h, bytes, EHT_DEV_HOST_PORTABLE) ||
	    eht_dev_alloc(&d, bytes) || eht_dev_event_create(&e0, EHT_EVENT_TIMING) ||
	    eht_dev_event_create(&e1, EHT_EVENT_TIMING))
		goto out;
	memset(h, 1, bytes);
	for (int i = 0; i < 7; i++) {
		float ms = 0;
		if (eht_dev_event_record(e0, NULL) || eht_dev_h2d_async(d, h, bytes, NULL) ||
		    eht_dev_event_record(e1, NULL) || eht_dev_event_sync(e1) ||
		    eht_dev_event_ms(&ms, e0, e1))
			goto out;
		double g = (double)bytes / (ms * 1e-3) / 1e9;
		if (i && g > best)
			best = g;
	}
out:
	if (best == 0)
		fprintf(stderr, "eht bench lookup: link bandwidth not measured: %s\n", eht_last_error());
	if (e0)
		eht_dev_event_destroy(e0);
	if (e1)
		eht_dev_event_destroy(e1);
	if (d)
		eht_dev_free(d);
	if (h)
		eht_dev_host_free(h);
	return best;
}

enum { ON_HOST, ON_GPU, ON_GRAPH, NMODES };
static const char *mode_names[NMODES] = {"host_ids", "gpu_ids", "graph"};

struct result {
	int strategy;
	size_t n;
	double med_ms[NMODES], p90_ms[NMODES];
	double distinct; /* mean fraction of distinct ids per step */
	double hit;      /* fraction of ids in the hot set (-1: none) */
	int ok[NMODES];
	char err[NMODES][160];
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Fraction of the steps' ids (batches steps of n, stride apart) found in the sorted hot set. */
static double hit_fraction(const int64_t *hot, size_t nhot, const int32_t *ids, size_t n, size_t batches,
			   size_t stride)
{
	uint64_t hits = 0;
	for (size_t b = 0; b < batches; b++)
		for (size_t i = 0; i < n; i++) {
			int64_t key = ids[b * stride + i];
			hits += nhot && bsearch(&key, hot, nhot, sizeof(*hot), cmp_i64) != NULL;
		}
	return n && batches ? (double)hits / ((double)n * (double)batches) : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: eht bench lookup [--table-gib G] [--ids N,N...] [--sweep] [--strategies direct,sorted,host,auto]\n"
		   "                        [--ids-on host|gpu|both] [--graph] [--reps R] [--threads T] [--format raw|bf16]\n"
		   "                        [--device D] [--cpu] [--workload uniform|text:FILE] [--hotset K|FILE] [--dedup]\n"
		   "                        [--json] [--help]\n"
		   "  --ids-on   where the ids live: host memory, GPU memory, or both side by side (default: both with a GPU)\n"
		   "  --graph    also capture each lookup once in a CUDA graph and replay it with fresh ids written into\n"
		   "             its id buffer (ids in GPU memory)\n"
		   "  --sweep    batch sizes 256 ... 196,608 (latency against batch size) instead of prefill and decode\n"
		   "  --workload uniform (default) or text:FILE: a stream of compressed token ids (uint32 LE, documents\n"
		   "             listed by FILE.starts.json) hashed with the DeepSeek-V4.1 layout into per-step ids\n"
		   "             (prefill: consecutive-token windows; decode: sequences at random positions);\n"
		   "             tests/workloads/text_500k.compressed.u32 is one\n"
		   "  --hotset K|FILE  a GPU hot set per engine (eht_lookup_set_hotset): the K most frequent ids of the\n"
		   "             text outside the measured tokens, or a file of `eht hotset build` (built for this\n"
		   "             table: --table-rows); the steps then come from tokens [0, T/2) unless --workload-range\n"
		   "  --workload-range A:B  draw the steps from tokens [A, B) of the text only\n"
		   "  --dedup    engines deduplicate ids on the GPU (EHT_LOOKUP_GPU_DEDUP; always so with --hotset)\n");
}

static int parse_strategy(const char *s)
{
	static const char *names[] = {"auto", "direct", "sorted", "host"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static void sort_times(double *t, int reps, double *med, double *p90)
{
	qsort(t, (size_t)reps, sizeof(double), cli_cmp_double);
	*med = t[reps / 2] * 1e3;
	*p90 = t[(reps * 9) / 10 < reps ? (reps * 9) / 10 : reps - 1] * 1e3;
}

struct bench_ctx {
	eht_stream s;
	int gpu, reps, batches;
	size_t maxn;
	const int32_t *ids;  /* host: batches x maxn */
	eht_dptr dids;    /* GPU copy of ids */
	eht_dptr dcap;    /* the captured graph's id buffer */
	void *out;           /* GPU or host output */
	double *times;
};

/* One mode of one shape: median time per step to the last byte, after a stream sync. */
static int time_mode(struct bench_ctx *c, eht_lookup *lk, int strat, int mode, size_t n, double *med, double *p90)
{
	int err = 0;
	unsigned fl = EHT_LOOKUP_RUN_STRATEGY(strat);
	if (c->gpu)
		fl |= EHT_LOOKUP_RUN_OUT_DEVICE | (mode == ON_HOST ? EHT_LOOKUP_RUN_IDS_HOST : EHT_LOOKUP_RUN_IDS_DEVICE);
	eht_graph g = NULL;
	eht_graph_exec ge = NULL;
	if (mode == ON_GRAPH) {
		err = eht_dev_capture_begin(c->s, EHT_CAPTURE_GLOBAL);
		if (!err) {
			err = eht_lookup_run(lk, (const void *)(uintptr_t)c->dcap, EHT_ID_INT32, 0, n, c->out, c->s, fl, NULL);
			int erc = eht_dev_capture_end(c->s, &g);
			if (!err)
				err = erc;
		}
		if (!err)
			err = eht_dev_graph_instantiate(&ge, g);
	}
	for (int rep = -2; rep < c->reps && !err; rep++) {
		size_t off = (size_t)(rep + 2) * c->maxn;
		const void *pid = mode == ON_HOST ? (const void *)(c->ids + off)
						  : (const void *)(uintptr_t)(c->dids + off * sizeof(int32_t));
		if (mode == ON_GRAPH) { /* fresh ids into the captured buffer, not timed */
			err = eht_dev_d2d_async(c->dcap, c->dids + off * sizeof(int32_t), n * sizeof(int32_t), c->s);
			if (!err)
				err = eht_dev_stream_sync(c->s);
		}
		double a = cli_now_s();
		if (!err)
			err = mode == ON_GRAPH ? eht_dev_graph_launch(ge, c->s)
					       : eht_lookup_run(lk, pid, EHT_ID_INT32, 0, n, c->out, c->gpu ? c->s : NULL, fl, NULL);
		if (!err && c->gpu)
			err = eht_dev_stream_sync(c->s);
		if (rep >= 0)
			c->times[rep] = cli_now_s() - a;
	}
	if (ge)
		eht_dev_graph_exec_destroy(ge);
	if (g)
		eht_dev_graph_destroy(g);
	if (!err)
		sort_times(c->times, c->reps, med, p90);
	return err;
}

int bench_lookup(int argc, char **argv)
{
	double gib = 0;
	size_t shapes[MAX_SHAPES] = {196608, 6144};
	static const size_t sweep[] = {256, 1024, 4096, 6144, 16384, 49152, 98304, 196608};
	int nshapes = 2, strategies[4] = {EHT_LOOKUP_DIRECT, EHT_LOOKUP_SORTED, EHT_LOOKUP_HOST, EHT_LOOKUP_AUTO};
	int nstrat = 4, reps = 20, json = 0, fmt = EHT_LOOKUP_RAW, dev = 0, cpu = 0, graph = 0, ids_on = -1, dedup = 0;
	unsigned threads = 0;
	const char *workload = "uniform", *hotset = NULL;
	struct bench_workload *wl = NULL;
	long long rbeg = -1, rend = -1;
	int64_t *hot = NULL, *hot_sorted = NULL;
	size_t nhot = 0;
	double t_hot = 0;
	static const struct option longopts[] = {
		{"table-gib", required_argument, NULL, 'g'}, {"ids", required_argument, NULL, 'i'},
		{"sweep", no_argument, NULL, 'w'},           {"strategies", required_argument, NULL, 's'},
		{"ids-on", required_argument, NULL, 'o'},    {"graph", no_argument, NULL, 'G'},
		{"reps", required_argument, NULL, 'r'},      {"threads", required_argument, NULL, 't'},
		{"format", required_argument, NULL, 'f'},    {"device", required_argument, NULL, 'd'},
		{"cpu", no_argument, NULL, 'c'},             {"json", no_argument, NULL, 'j'},
		{"workload", required_argument, NULL, 'W'},  {"help", no_argument, NULL, 'h'},
		{"hotset", required_argument, NULL, 'H'},    {"workload-range", required_argument, NULL, 'R'},
		{"dedup", no_argument, NULL, 'D'},           {NULL, 0, NULL, 0}};
	optind = 1;
	opterr = 0;
	int opt;
	char *end;
	while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (opt) {
		case 'g':
			gib = strtod(optarg, &end);
			if (*end || gib < 0) {
				fprintf(stderr, "eht bench lookup: --table-gib needs a size in GiB, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'i':
			nshapes = 0;
			for (char *p = optarg; *p && nshapes < MAX_SHAPES; p = *end ? end + 1 : end) {
				long long n = strtoll(p, &end, 10);
				if (n <= 0 || (*end && *end != ',')) {
					fprintf(stderr, "eht bench lookup: --ids needs counts like 196608,6144, not '%s'\n", optarg);
					return 2;
				}
				shapes[nshapes++] = (size_t)n;
			}
			break;
		case 'W':
			workload = optarg;
			break;
		case 'H':
			hotset = optarg;
			break;
		case 'R':
			if (sscanf(optarg, "%lld:%lld", &rbeg, &rend) != 2 || rbeg < 0 || rend <= rbeg) {
				fprintf(stderr, "eht bench lookup: --workload-range needs A:B tokens with A < B, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'w':
			nshapes = (int)(sizeof(sweep) / sizeof(sweep[0]));
			memcpy(shapes, sweep, sizeof(sweep));
			break;
		case 's': {
			nstrat = 0;
			char buf[128];
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (char *tok = strtok(buf, ","); tok && nstrat < 4; tok = strtok(NULL, ",")) {
				int st = parse_strategy(tok);
				if (st < 0) {
					fprintf(stderr, "eht bench lookup: unknown strategy '%s' (direct, sorted, host, auto)\n", tok);
					return 2;
				}
				strategies[nstrat++] = st;
			}
			break;
		}
		case 'o':
			ids_on = !strcmp(optarg, "host") ? ON_HOST : !strcmp(optarg, "gpu") ? ON_GPU : !strcmp(optarg, "both") ? NMODES : -2;
			if (ids_on == -2) {
				fprintf(stderr, "eht bench lookup: --ids-on is host, gpu or both, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'G': graph = 1; break;
		case 'D': dedup = 1; break;
		case 'r': reps = (int)strtol(optarg, &end, 10); if (*end) reps = 0; break;
		case 't': threads = (unsigned)strtoul(optarg, &end, 10); break;
		case 'f':
			if (strcmp(optarg, "raw") && strcmp(optarg, "bf16")) {
				fprintf(stderr, "eht bench lookup: --format is raw or bf16, not '%s'\n", optarg);
				return 2;
			}
			fmt = !strcmp(optarg, "bf16") ? EHT_LOOKUP_BF16 : EHT_LOOKUP_RAW;
			break;
		case 'd': dev = (int)strtol(optarg, &end, 10); break;
		case 'c': cpu = 1; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "eht bench lookup: %s needs a value\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		default:
			fprintf(stderr, "eht bench lookup: unknown option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "eht bench lookup: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (reps < 1 || reps > 10000) {
		fprintf(stderr, "eht bench lookup: --reps must be 1..10000\n");
		return 2;
	}
	int gpu = !cpu && eht_dev_count() > dev;
	int want[NMODES] = {0};
	if (!gpu) {
		want[ON_HOST] = 1;
	} else {
		want[ON_HOST] = ids_on == -1 || ids_on == ON_HOST || ids_on == NMODES;
		want[ON_GPU] = ids_on == -1 || ids_on == ON_GPU || ids_on == NMODES;
		want[ON_GRAPH] = graph;
	}
	FILE *info = json ? stderr : stdout;
	if (!gpu)
		fprintf(info, "no GPU%s: HOST only, host ids, rows gathered into host memory\n", cpu ? " (--cpu)" : "");

	/* Table size: a quarter of the available memory, at most 48 GiB (cli_bench.c). */
	uint64_t avail = eht_mem_available();
	if (gib == 0)
		gib = cli_bench_default_gib(avail, info);
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
	eht_dptr dout = 0, dids = 0, dcap = 0;
	eht_stream s = NULL;
	eht_lookup *engines[4] = {NULL};
	struct result res[4 * MAX_SHAPES];
	int nres = 0;
	size_t maxn = 0;
	for (int i = 0; i < nshapes; i++)
		if (shapes[i] > maxn)
			maxn = shapes[i];
	const size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	const int batches = reps + 2; /* distinct ids per rep: no cache helps a later rep */
	double *times = NULL;

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
	eht_pool_destroy(pool); /* its threads would sit beside the lookups' own */
	pool = NULL;
	double t_fill = cli_now_s() - t0;
	t0 = cli_now_s();
	if (eht_table_wrap(table, rows, RB, gpu ? dev : -1, "bench", &t)) {
		cli_fail("bench lookup", NULL);
		goto out;
	}
	struct eht_table_info ti = {.size = sizeof(ti)};
	if (eht_table_get_info(t, &ti)) {
		cli_fail("bench lookup", NULL);
		goto out;
	}
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
	times = malloc((size_t)reps * sizeof(double));
	if (!ids || !times) {
		fprintf(stderr, "eht bench lookup: out of memory for ids\n");
		goto out;
	}
	if (bench_workload_open(workload, rows, 0, &wl)) {
		cli_fail("bench lookup", NULL);
		goto out;
	}
	if (hotset || rbeg >= 0) {
		size_t T = bench_workload_tokens(wl);
		size_t b = rbeg >= 0 ? (size_t)rbeg : 0, e = rbeg >= 0 ? (size_t)rend : T / 2;
		if (bench_workload_set_range(wl, b, e)) {
			cli_fail("bench lookup", NULL);
			goto out;
		}
		if (hotset) {
			char *hend;
			unsigned long long k = strtoull(hotset, &hend, 10);
			double cov = 0;
			uint64_t nh = 0;
			int hrc = *hend || !*hotset ? eht_hotset_read(hotset, &hot, &nh)
						    : bench_workload_hotset(wl, (size_t)k, b, e, &hot, &nhot, &cov);
			if (*hend || !*hotset)
				nhot = (size_t)nh;
			if (hrc || !(hot_sorted = malloc((nhot ? nhot : 1) * sizeof(*hot_sorted)))) {
				cli_fail("bench lookup", hrc ? NULL : "out of memory");
				goto out;
			}
			memcpy(hot_sorted, hot, nhot * sizeof(*hot));
			qsort(hot_sorted, nhot, sizeof(*hot_sorted), cmp_i64);
			fprintf(info, "hot set: %zu rows (%.1f MB of GPU memory per engine), steps from tokens [%zu, %zu)", nhot,
				(double)nhot * (RB + 48) / 1e6, b, e);
			if (!*hend && *hotset)
				fprintf(info, ", learned on the other tokens (%.1f %% of their ids)", 100 * cov);
			fprintf(info, "\n");
		}
	}
	if (gpu) {
		if (eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING) || eht_dev_alloc(&dout, maxn * ob) ||
		    eht_dev_alloc(&dcap, maxn * sizeof(*ids)) ||
		    eht_dev_alloc(&dids, (size_t)batches * maxn * sizeof(*ids))) {
			cli_fail("bench lookup", NULL);
			goto out;
		}
	} else if (!(hout = malloc(maxn * ob))) {
		fprintf(stderr, "eht bench lookup: out of memory for the output\n");
		goto out;
	}
	struct bench_ctx bc = {.s = s, .gpu = gpu, .reps = reps, .batches = batches, .maxn = maxn, .ids = ids,
			       .dids = dids, .dcap = dcap, .out = gpu ? (void *)(uintptr_t)dout : hout, .times = times};

	/* Every engine first, then per shape the same steps for every strategy (shape-major, so a text
	 * workload is hashed into steps once per shape); results stay strategy-major. */
	int crcs[4];
	char cerr[4][160];
	for (int si = 0; si < nstrat; si++) {
		int strat = strategies[si];
		struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strat, .format = fmt, .device = gpu ? dev : -1,
					    .numa_node = -1, .threads = threads, .max_batch = maxn,
					    .flags = gpu ? (dedup ? EHT_LOOKUP_GPU_DEDUP : 0) : EHT_LOOKUP_CPU_ONLY};
		crcs[si] = (!gpu && (strat == EHT_LOOKUP_DIRECT || strat == EHT_LOOKUP_SORTED))
				   ? -ENODEV
				   : eht_lookup_create(t, &o, &engines[si]);
		if (!crcs[si] && hot && gpu) {
			double th = cli_now_s();
			crcs[si] = eht_lookup_set_hotset(engines[si], hot, nhot);
			t_hot += cli_now_s() - th;
		}
		snprintf(cerr[si], sizeof(cerr[si]), "%s", crcs[si] == -ENODEV && !gpu ? "needs a GPU" : eht_last_error());
	}
	if (hot && gpu)
		fprintf(info, "hot set loaded into %d engines in %.2f s\n", nstrat, t_hot);
	nres = nstrat * nshapes;
	for (int k = 0; k < nshapes; k++) {
		double distinct = 0;
		if (bench_workload_fill(wl, shapes[k], (size_t)batches, maxn, ids, &distinct) ||
		    (gpu && eht_dev_h2d(dids, ids, (size_t)batches * maxn * sizeof(*ids)))) {
			cli_fail("bench lookup", NULL);
			goto out;
		}
		for (int si = 0; si < nstrat; si++) {
			int strat = strategies[si], crc = crcs[si];
			struct result *r = &res[si * nshapes + k];
			memset(r, 0, sizeof(*r));
			r->strategy = strat;
			r->n = shapes[k];
			r->distinct = distinct;
			r->hit = hot ? hit_fraction(hot_sorted, nhot, ids, shapes[k], (size_t)batches, maxn) : -1;
			for (int m = 0; m < NMODES; m++) {
				if (!want[m])
					continue;
				if (crc) {
					snprintf(r->err[m], sizeof(r->err[m]), "%s", cerr[si]);
					continue;
				}
				if (time_mode(&bc, engines[si], strat, m, r->n, &r->med_ms[m], &r->p90_ms[m]))
					snprintf(r->err[m], sizeof(r->err[m]), "%s", eht_last_error());
				else
					r->ok[m] = 1;
			}
		}
	}

	/* Idle CPU of this process with every engine made and nothing to do (the pool and the doorbell
	 * poller asleep): after a second of quiet, CPU seconds over two seconds of wall time. */
	double idle = -1;
	if (gpu) {
		struct timespec q = {1, 0}, w = {2, 0};
		nanosleep(&q, NULL);
		double c0 = cpu_seconds();
		nanosleep(&w, NULL);
		idle = (cpu_seconds() - c0) / 2.0;
	}

	/* Report. */
	json_t *rep = NULL, *jres = NULL;
	if (json) {
		/* jansson, with the common header (eht version, host, UTC time); null where a figure does not
		 * apply (no link measured without a GPU, no idle figure, no hot set). */
		rep = cli_report_new("lookup");
		jres = json_array();
		if (rep && jres)
			json_object_update_new(rep, json_pack("{s:f, s:I, s:i, s:s, s:b, s:o, s:i, s:o, s:s}", "table_gib", gib,
							      "rows", (json_int_t)rows, "row_bytes", RB, "format",
							      fmt ? "bf16" : "raw", "gpu", gpu, "link_gbs",
							      cli_real_or_null(link, link > 0), "reps", reps, "idle_cpu_cores",
							      cli_real_or_null(idle, idle >= 0), "workload",
							      bench_workload_name(wl)));
	} else {
		printf("workload: %s\n", bench_workload_name(wl));
		printf("%-7s %8s %9s %6s %10s", "strategy", "ids", "distinct", "hot", "floor ms");
		for (int m = 0; m < NMODES; m++)
			if (want[m])
				printf(" %12s %8s", m == ON_HOST ? "host-ids ms" : m == ON_GPU ? "gpu-ids ms" : "graph ms", "p90");
		printf(" %9s %7s\n", "Mrows/s", "link%");
	}
	for (int i = 0; i < nres; i++) {
		struct result *r = &res[i];
		double floor_ms = link > 0 ? (double)r->n * RB / (link * 1e9) * 1e3 : 0;
		double best = 0; /* the fastest mode that ran */
		for (int m = 0; m < NMODES; m++)
			if (r->ok[m] && (best == 0 || r->med_ms[m] < best))
				best = r->med_ms[m];
		double rps = best > 0 ? (double)r->n / (best * 1e-3) : 0, gbs = rps * RB / 1e9;
		if (json) {
			json_t *o = json_pack("{s:s, s:I, s:f, s:I, s:o, s:o}", "strategy", eht_lookup_strategy_name(r->strategy),
					      "ids", (json_int_t)r->n, "distinct_fraction", r->distinct, "hot_rows",
					      (json_int_t)nhot, "hot_hit_fraction", cli_real_or_null(r->hit, r->hit >= 0),
					      "link_floor_ms", cli_real_or_null(floor_ms, link > 0));
			if (o)
				json_object_set_new(o, "gpu_dedup", json_boolean(gpu && (dedup || nhot)));
			for (int m = 0; o && m < NMODES; m++) {
				if (!want[m])
					continue;
				json_object_set_new(o, mode_names[m],
						    r->ok[m] ? json_pack("{s:f, s:f}", "median_ms", r->med_ms[m], "p90_ms", r->p90_ms[m])
							     : json_pack("{s:s}", "error", r->err[m]));
			}
			if (o) {
				json_object_set_new(o, "best_rows_per_s", cli_real_or_null(rps, best > 0));
				json_object_set_new(o, "best_link_fraction", cli_real_or_null(gbs / link, link > 0 && best > 0));
			}
			json_array_append_new(jres, o);
			continue;
		}
		char hf[16] = "-";
		if (r->hit >= 0)
			snprintf(hf, sizeof(hf), "%.1f%%", 100 * r->hit);
		printf("%-7s %8zu %8.1f%% %6s %10.3f", eht_lookup_strategy_name(r->strategy), r->n, 100 * r->distinct, hf,
		       floor_ms);
		for (int m = 0; m < NMODES; m++) {
			if (!want[m])
				continue;
			if (r->ok[m])
				printf(" %12.3f %8.3f", r->med_ms[m], r->p90_ms[m]);
			else
				printf(" %12s %8s", "fail", "-");
		}
		char lf[16] = "-";
		if (link > 0 && best > 0)
			snprintf(lf, sizeof(lf), "%.0f%%", 100 * gbs / link);
		printf(" %9.1f %7s\n", rps / 1e6, lf);
	}
	if (json) {
		/* json_object_set_new takes jres even when it fails */
		if (!rep || !jres || json_object_set_new(rep, "results", jres)) {
			if (!rep)
				json_decref(jres);
			json_decref(rep);
			fprintf(stderr, "eht bench lookup: out of memory for the report\n");
			goto out;
		}
		if (cli_print_json(rep))
			goto out;
	} else {
		for (int i = 0; i < nres; i++)
			for (int m = 0; m < NMODES; m++)
				if (want[m] && !res[i].ok[m])
					printf("%s %zu %s: %s\n", eht_lookup_strategy_name(res[i].strategy), res[i].n, mode_names[m],
					       res[i].err[m]);
		printf("(median time per step to the last byte in %s memory, after a stream sync; %d reps of fresh "
		       "steps; floor: the rows' %d bytes at the measured link rate; Mrows/s and link%% of the fastest mode)\n",
		       gpu ? "GPU" : "host", reps, RB);
		if (idle >= 0)
			printf("idle CPU with %d engines made and waiting: %.2f cores\n", nstrat, idle);
	}
	rc = 0;
out:
	for (int i = 0; i < 4; i++)
		eht_lookup_destroy(engines[i]);
	free(times);
	free(hot);
	free(hot_sorted);
	bench_workload_free(wl);
	if (dout)
		eht_dev_free(dout);
	if (dids)
		eht_dev_free(dids);
	if (dcap)
		eht_dev_free(dcap);
	if (s)
		eht_dev_stream_destroy(s);
	free(hout);
	free(ids);
	eht_table_close(t);
	if (table != MAP_FAILED)
		munmap(table, bytes);
	eht_pool_destroy(pool);
	return rc;
}
