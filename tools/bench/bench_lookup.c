/* SPDX-License-Identifier: Apache-2.0 */
/* bench_lookup.c: `eht bench lookup`: every strategy on the prefill (196,608 ids) and decode
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
#include <time.h>
#include <unistd.h>

#include "bench_cpu_limit.h"
#include "bench_lookup.h"
#include "bench_tier.h"
#include "bench_workload.h"
#include "lookup/core.h"
#include "lookup/gather/rows.h"
#include "bench.h"
#include "cli.h"
#include "os/numa.h"
#include "gpu/dev.h"
#include "eht.h"
#include "util/clock.h"
#include "util/pool.h"


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

/* bench_table_open's fill: a pool of this process's CPUs, gone before the lookups' own start. */
static void fill_table(void *host, size_t bytes, void *arg)
{
	eht_pool *pool = NULL;
	struct fill_job fj = {.p = host, .words = bytes / 8, .per_task = 1u << 21};
	size_t tasks = (fj.words + fj.per_task - 1) / fj.per_task;
	if (eht_pool_create(0, -1, 100, &pool) == 0) {
		eht_pool_run(pool, tasks, fill_task, &fj);
		eht_pool_destroy(pool);
	} else {
		for (size_t i = 0; i < tasks; i++)
			fill_task(&fj, i, 0);
	}
	(void)arg;
}

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
	char tiers[128], strategies[128];
	(void)bench_tier_names(tiers, sizeof(tiers));
	cli_strategy_names(strategies, sizeof(strategies));
	fprintf(f, "usage: eht bench lookup [--table-gib G] [--tier T] [--ids N,N...] [--sweep]\n"
		   "                        [--strategies S,S...]\n"
		   "                        [--ids-on host|gpu|both] [--graph] [--reps R] [--gap MS] [--threads T]\n"
		   "                        [--format raw|bf16]\n"
		   "                        [--device D] [--cpu] [--workload uniform|text:FILE] [--hotset K|FILE] [--dedup]\n"
		   "                        [--vllm|--no-vllm] [--json] [--help]\n"
		   "  --strategies  which to time (default every one: %s; --list-strategies lists them), and\n"
		   "             layer: the engine's own call (eht_engram_layer_lookup: ids [T, 24] int32, T = ids / 24\n"
		   "             rounded up, the last token's extra columns dead; all 24 heads; the bench's --format),\n"
		   "             inline (layer) and in the background way (layer+bg); with a GPU its ids and out are\n"
		   "             GPU memory (the gpu-ids and graph columns), without one host memory; on by default\n"
		   "             where a GPU serves the run\n"
		   "  --tier     where the rows live: %s. memory (default): this process's anonymous\n"
		   "             memory, THP advised, wrapped; the others: eht_table_share, as eht serve makes the tables\n"
		   "             it hands workers (a region-pinned table is pinned for the GPU; a region table is not);\n"
		   "             the CPU page size the rows are mapped with is reported (CPU gathers run about twice as\n"
		   "             fast on 2 MiB pages: region tables get them from the hugetlb pool, vm.nr_hugepages)\n"
		   "  --ids-on   where the ids live: host memory, GPU memory, or both side by side (default: both with a GPU)\n"
		   "  --graph    also capture each lookup once in a CUDA graph and replay it with fresh ids written into\n"
		   "             its id buffer (ids in GPU memory)\n"
		   "  --gap      milliseconds of idle before each timed call (default 0: back to back); a model's step\n"
		   "             between its lookups is such a gap (a prefill step 40-50 ms, a decode step 3 ms), after\n"
		   "             which a CPU gather runs slower than in a loop of calls; the CPU limit is then also\n"
		   "             timed after the gap with its threads asleep and spinning through it\n"
		   "  --sweep    batch sizes 256 ... 196,608 (latency against batch size) instead of prefill and decode\n"
		   "  --workload uniform (default) or text:FILE: a stream of compressed token ids (uint32 LE, documents\n"
		   "             listed by FILE.starts.json) hashed with the DeepSeek-V4.1 layout into per-step ids\n"
		   "             (prefill: consecutive-token windows; decode: sequences at random positions);\n"
		   "             tests/workloads/text_500k.compressed.u32 is one\n"
		   "  --hotset K|FILE  a GPU hot set per engine (eht_lookup_set_hotset): the K most frequent ids of the\n"
		   "             text outside the measured tokens, or a file of `eht hotset build` (built for this\n"
		   "             table: --table-rows); the steps then come from tokens [0, T/2) unless --workload-range\n"
		   "  --workload-range A:B  draw the steps from tokens [A, B) of the text only\n"
		   "  --knob-sweep  then the HOST and AUTO engines again on every shape and mode for each setting of\n"
		   "             the CPU gather's knobs (EHT_LOOKUP_PREFETCH x EHT_LOOKUP_CHUNK_MAX), one line per\n"
		   "             setting\n"
		   "             (with --json: JSON lines on stderr)\n"
		   "  --dedup    engines deduplicate ids on the GPU (EHT_LOOKUP_GPU_DEDUP; always so with --hotset)\n"
		   "  --vllm, --no-vllm  the baseline: vLLM's own lookup kernel (eht.vllm_baseline, our Triton code of\n"
		   "             it) on the same steps, a table of the same size and bf16 out, timed by python3 -m\n"
		   "             eht.bench_vllm after this process's table is closed (EHT_PYTHON names another\n"
		   "             interpreter): rows vllm (grid SMs) and vllm+bg (SMs / 2) with GPU ids and, with\n"
		   "             --graph, as a graph. Default: where a GPU serves the run; --vllm runs the helper in\n"
		   "             any case; where it cannot measure (no torch, Triton, GPU) one line says why\n",
		strategies, tiers);
}

/* One strategy's call: eht_lookup_run of the call's ids into out (GPU out with a GPU). */
struct strategy_call {
	eht_lookup *lk;
	int strategy, gpu;
	size_t n;
};

static int strategy_run(void *arg, int mode, const void *ids, void *out, eht_stream s)
{
	const struct strategy_call *sc = arg;
	unsigned fl = EHT_LOOKUP_RUN_STRATEGY(sc->strategy);
	if (sc->gpu)
		fl |= EHT_LOOKUP_RUN_OUT_DEVICE | (mode == ON_HOST ? EHT_LOOKUP_RUN_IDS_HOST : EHT_LOOKUP_RUN_IDS_DEVICE);
	return eht_lookup_run(sc->lk, ids, EHT_ID_INT32, 0, sc->n, out, s, fl, NULL);
}

/* One mode of one strategy on n ids of the steps of bc. */
static int time_strategy(struct bench_ctx *bc, eht_lookup *lk, int strat, int mode, size_t n, double *med,
			 double *p90, struct call_cpu *cpu)
{
	struct strategy_call sc = {.lk = lk, .strategy = strat, .gpu = bc->gpu, .n = n};
	struct bench_call call = {.run = strategy_run, .arg = &sc, .ncopy = n};
	return lk_time_mode(bc, &call, mode, med, p90, cpu);
}

/* ------------------------------------------------------------------- options */

/* --ids N,N...; 0 or 2. */
static int parse_ids(struct lk_opts *o, const char *arg)
{
	char *end;
	o->nshapes = 0;
	for (const char *p = arg; *p && o->nshapes < MAX_SHAPES; p = *end ? end + 1 : end) {
		long long n = strtoll(p, &end, 10);
		if (n <= 0 || (*end && *end != ','))
			return cli_errorf("bench lookup", 2, "--ids needs counts like 196608,6144, not '%s'", arg);
		o->shapes[o->nshapes++] = (size_t)n;
	}
	return 0;
}

/* --strategies a,b...: the library's strategies, and "layer" (the engine's own call, not a strategy:
 * eht_engram_layer_lookup, which runs AUTO's engines); 0 or 2. */
static int parse_strategies(struct lk_opts *o, const char *arg)
{
	char buf[128];
	o->nstrat = 0;
	o->layer = 0;
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *tok = strtok(buf, ","); tok && o->nstrat < CLI_MAX_STRATEGIES; tok = strtok(NULL, ",")) {
		if (!strcmp(tok, "layer")) {
			o->layer = 1;
			continue;
		}
		int st = eht_lookup_strategy_by_name(tok);
		if (st < 0)
			return cli_errorf("bench lookup", 2, "%s", eht_last_error());
		o->strategies[o->nstrat++] = st;
	}
	return 0;
}

/* One option; 0, 2 (message printed) or -1 (--help printed: exit 0). */
static int parse_opt(struct lk_opts *o, int opt, const char *arg)
{
	static const size_t sweep[] = {256, 1024, 4096, 6144, 16384, 49152, 98304, 196608};
	char *end;
	switch (opt) {
	case 'g':
		o->gib = strtod(arg, &end);
		if (*end || !*arg || o->gib < 0)
			return cli_errorf("bench lookup", 2, "--table-gib needs a size in GiB, not '%s'", arg);
		return 0;
	case 'i': return parse_ids(o, arg);
	case 'W': o->workload = arg; return 0;
	case 'T':
		if (bench_tier_parse("bench lookup", arg))
			return 2;
		o->tier = arg;
		return 0;
	case 'H': o->hotset = arg; return 0;
	case 'R':
		if (sscanf(arg, "%lld:%lld", &o->rbeg, &o->rend) != 2 || o->rbeg < 0 || o->rend <= o->rbeg)
			return cli_errorf("bench lookup", 2, "--workload-range needs A:B tokens with A < B, not '%s'", arg);
		return 0;
	case 'w':
		o->nshapes = (int)(sizeof(sweep) / sizeof(sweep[0]));
		memcpy(o->shapes, sweep, sizeof(sweep));
		return 0;
	case 's': return parse_strategies(o, arg);
	case 'o':
		o->ids_on = !strcmp(arg, "host") ? ON_HOST : !strcmp(arg, "gpu") ? ON_GPU : !strcmp(arg, "both") ? NMODES : -2;
		if (o->ids_on == -2)
			return cli_errorf("bench lookup", 2, "--ids-on is host, gpu or both, not '%s'", arg);
		return 0;
	case 'G': o->graph = 1; return 0;
	case 'V': o->vllm = 1; return 0;
	case 'N': o->vllm = 0; return 0;
	case 'D': o->dedup = 1; return 0;
	case 'K': o->knob_sweep = 1; return 0;
	case 'r': o->reps = (int)strtol(arg, &end, 10); if (*end) o->reps = 0; return 0;
	case 't': o->threads = (unsigned)strtoul(arg, &end, 10); return 0;
	case 'f':
		if (strcmp(arg, "raw") && strcmp(arg, "bf16"))
			return cli_errorf("bench lookup", 2, "--format is raw or bf16, not '%s'", arg);
		o->fmt = !strcmp(arg, "bf16") ? EHT_LOOKUP_BF16 : EHT_LOOKUP_RAW;
		return 0;
	case 'P':
		o->gap_ms = strtod(arg, &end);
		if (*end || !*arg || !(o->gap_ms >= 0 && o->gap_ms <= 10000))
			return cli_errorf("bench lookup", 2, "--gap needs milliseconds in 0..10000, not '%s'", arg);
		return 0;
	case 'd': o->dev = (int)strtol(arg, &end, 10); return 0;
	case 'c': o->cpu = 1; return 0;
	case 'j': o->json = 1; return 0;
	case 'h': usage(stdout); return -1;
	case 'L': /* what eht --list strategies prints */
		cli_list(stdout, 1, (char *[]){"strategies", NULL});
		return -1;
	default: return 2; /* cli_getopt said why */
	}
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_bench_lookup[] = {
	{"table-gib", required_argument, NULL, 'g'}, {"ids", required_argument, NULL, 'i'},
	{"sweep", no_argument, NULL, 'w'},           {"strategies", required_argument, NULL, 's'},
	{"ids-on", required_argument, NULL, 'o'},    {"graph", no_argument, NULL, 'G'},
	{"reps", required_argument, NULL, 'r'},      {"threads", required_argument, NULL, 't'},
	{"format", required_argument, NULL, 'f'},    {"device", required_argument, NULL, 'd'},
	{"cpu", no_argument, NULL, 'c'},             {"json", no_argument, NULL, 'j'},
	{"workload", required_argument, NULL, 'W'},  {"help", no_argument, NULL, 'h'},
	{"hotset", required_argument, NULL, 'H'},    {"workload-range", required_argument, NULL, 'R'},
	{"dedup", no_argument, NULL, 'D'},           {"list-strategies", no_argument, NULL, 'L'},
	{"tier", required_argument, NULL, 'T'},      {"knob-sweep", no_argument, NULL, 'K'},
	{"vllm", no_argument, NULL, 'V'},            {"no-vllm", no_argument, NULL, 'N'},
	{"gap", required_argument, NULL, 'P'},       {NULL, 0, NULL, 0}};

/* The command line into o; -1 to run, else the exit status. */
static int parse_args(int argc, char **argv, struct lk_opts *o)
{
	const struct option *longopts = cli_opts_bench_lookup;
	*o = (struct lk_opts){.shapes = {196608, 6144}, .nshapes = 2, .reps = 20, .fmt = EHT_LOOKUP_RAW, .ids_on = -1, .workload = "uniform", .tier = "memory",
			      .rbeg = -1, .rend = -1, .layer = -1, .vllm = -1};
	o->nstrat = cli_strategy_order(o->strategies, CLI_MAX_STRATEGIES); /* every one the library has */
	cli_opt_reset();
	int opt, rc;
	while ((opt = cli_getopt(argc, argv, "bench lookup", "", longopts)) != -1)
		if ((rc = parse_opt(o, opt, optarg)))
			return rc < 0 ? 0 : 2;
	if (optind < argc)
		return cli_usage_error("bench lookup", "takes no arguments, only options");
	if (o->reps < 1 || o->reps > 10000)
		return cli_errorf("bench lookup", 2, "--reps must be 1..10000");
	return -1;
}

/* ------------------------------------------------------------------- the run */

/* The table in the tier asked (memory: an anonymous mapping filled by a pool, wrapped and pinned
 * with a GPU; region / host-NUMA: eht_table_share, then filled), and the CPU page size it got. 0 or 1. */
static int lk_table(struct lk_run *d)
{
	double t_fill = 0, t_make = 0;
	if (bench_table_open(d->o->tier, d->rows, RB, d->gpu ? d->o->dev : -1, fill_table, NULL, &t_fill, &t_make, &d->bt))
		return cli_fail("bench lookup", NULL);
	d->t = d->bt.t;
	struct eht_table_info ti = {.size = sizeof(ti)};
	if (eht_table_get_info(d->t, &ti))
		return cli_fail("bench lookup", NULL);
	d->table_tier = ti.tier;
	d->host = ti.host;
	d->cpu_page = bench_table_pages(&d->bt, d->pages, sizeof(d->pages));
	if (d->gpu && !ti.device_ptr)
		fprintf(d->info, "table could not be pinned for GPU %d: the strategies that read it in place will fail\n",
			d->o->dev);
	fprintf(d->info, "table: %.2f GiB in %s (%s), %llu rows of %d B, CPU pages %s, filled in %.1f s", d->gib,
		d->o->tier, eht_tier_name(ti.tier), (unsigned long long)d->rows, RB, d->pages, t_fill);
	if (d->gpu)
		fprintf(d->info, ", %s in %.1f s", d->bt.anon ? "pinned" : "made", t_make);
	fprintf(d->info, "\n");
	return 0;
}

/* The workload, its token range and the hot set (learned from the text or read from a file). 0 or 1. */
static int lk_workload(struct lk_run *d)
{
	const struct lk_opts *o = d->o;
	if (bench_workload_open(o->workload, d->rows, 0, &d->wl))
		return cli_fail("bench lookup", NULL);
	if (!o->hotset && o->rbeg < 0)
		return 0;
	size_t T = bench_workload_tokens(d->wl);
	size_t b = o->rbeg >= 0 ? (size_t)o->rbeg : 0, e = o->rbeg >= 0 ? (size_t)o->rend : T / 2;
	if (bench_workload_set_range(d->wl, b, e))
		return cli_fail("bench lookup", NULL);
	if (!o->hotset)
		return 0;
	char *hend;
	unsigned long long k = strtoull(o->hotset, &hend, 10);
	double cov = 0;
	uint64_t nh = 0;
	int from_file = *hend || !*o->hotset;
	int hrc = from_file ? eht_hotset_read(o->hotset, &d->hot, &nh)
			    : bench_workload_hotset(d->wl, (size_t)k, b, e, &d->hot, &d->nhot, &cov);
	if (from_file)
		d->nhot = (size_t)nh;
	if (hrc || !(d->hot_sorted = malloc((d->nhot ? d->nhot : 1) * sizeof(*d->hot_sorted))))
		return cli_fail("bench lookup", hrc ? NULL : "out of memory");
	memcpy(d->hot_sorted, d->hot, d->nhot * sizeof(*d->hot));
	qsort(d->hot_sorted, d->nhot, sizeof(*d->hot_sorted), cmp_i64);
	fprintf(d->info, "hot set: %zu rows (%.1f MB of GPU memory per engine), steps from tokens [%zu, %zu)", d->nhot,
		(double)d->nhot * (RB + 48) / 1e6, b, e);
	if (!from_file)
		fprintf(d->info, ", learned on the other tokens (%.1f %% of their ids)", 100 * cov);
	fprintf(d->info, "\n");
	return 0;
}

/* Ids, timings, the output (GPU or host) and the GPU's id buffers. 0 or 1. */
static int lk_buffers(struct lk_run *d)
{
	d->ids = malloc((size_t)d->batches * d->maxn * sizeof(*d->ids));
	d->times = malloc((size_t)d->o->reps * sizeof(double));
	d->call_cpu = malloc((size_t)d->o->reps * sizeof(double));
	if (!d->ids || !d->times || !d->call_cpu) {
		return cli_errorf("bench lookup", 1, "out of memory for ids and timings");
	}
	if (lk_workload(d))
		return 1;
	if (d->gpu) {
		if (eht_dev_stream_create(&d->s, EHT_STREAM_NONBLOCKING) ||
		    eht_dev_alloc(&d->dout, (d->maxn + 23) * d->ob) || /* + the layer's last token's dead columns */
		    eht_dev_alloc(&d->dcap, d->maxn * sizeof(*d->ids)) ||
		    eht_dev_alloc(&d->dids, (size_t)d->batches * d->maxn * sizeof(*d->ids)))
			return cli_fail("bench lookup", NULL);
		if (eht_dev_alloc(&d->flush, LK_FLUSH_BYTES)) { /* (without it the in-place figures are best cases) */
			fprintf(stderr, "eht bench lookup: warning: no %llu MiB to clear the GPU's cache between runs (%s)\n",
				LK_FLUSH_BYTES >> 20, eht_last_error());
			d->flush = 0;
		}
	} else if (!(d->hout = malloc((d->maxn + 23) * d->ob))) {
		return cli_errorf("bench lookup", 1, "out of memory for the output");
	}
	return 0;
}

/* Every strategy's engine (a failure is kept, reported per result), with the hot set; and the
 * engine's own call (its ids' buffers: 0 or 1). */
static int lk_engines(struct lk_run *d)
{
	const struct lk_opts *o = d->o;
	for (int si = 0; si < o->nstrat; si++) {
		int strat = o->strategies[si];
		struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = strat, .format = o->fmt,
					     .device = d->gpu ? o->dev : -1, .numa_node = -1, .threads = o->threads,
					     .max_batch = d->maxn,
					     .flags = d->gpu ? (o->dedup ? EHT_LOOKUP_GPU_DEDUP : 0) : EHT_LOOKUP_CPU_ONLY};
		d->crcs[si] = eht_lookup_create(d->t, &lo, &d->engines[si]); /* -ENODEV: a GPU strategy, no GPU */
		if (!d->crcs[si] && d->hot && d->gpu) {
			double th = eht_now_s();
			d->crcs[si] = eht_lookup_set_hotset(d->engines[si], d->hot, d->nhot);
			d->t_hot += eht_now_s() - th;
		}
		snprintf(d->cerr[si], sizeof(d->cerr[si]), "%s",
			 d->crcs[si] == -ENODEV && !d->gpu ? "needs a GPU" : eht_last_error());
	}
	if (d->hot && d->gpu)
		fprintf(d->info, "hot set loaded into %d engines in %.2f s\n", o->nstrat, d->t_hot);
	if (!d->layer)
		return 0;
	struct lk_layer_opts lo = {.t = d->t, .gpu = d->gpu, .dev = o->dev, .format = o->fmt, .batches = d->batches,
				   .dedup = o->dedup, .threads = o->threads, .maxn = d->maxn,
				   .hot = d->hot, .nhot = d->nhot};
	return lk_layer_open(&d->ly, &lo);
}

/* The CPU's own limit on shape k's steps (bench_cpu_limit.c), as wide as the engines' pool (its
 * workers and the thread that starts them) and prefetching as far ahead. Skipped (threads 0) for a
 * table the CPU cannot read in place or where it cannot run. */
static void lk_cpu_limit(struct lk_run *d, int k)
{
	unsigned width = 0;
	for (int si = 0; si < d->o->nstrat && !width; si++)
		if (d->engines[si])
			width = d->engines[si]->nthreads + 1;
	if (!d->host || !width)
		return;
	unsigned pf = eht_lk_prefetch_rows();
	struct timespec calm = {0, 5000000}; /* the engines' threads stop their spin after the last call first */
	nanosleep(&calm, NULL);
	if (bench_cpu_limit(d->host, d->rows, RB, d->ids, d->o->shapes[k], (size_t)d->batches, d->maxn, width, pf,
			    d->o->reps, d->o->gap_ms * 1e-3, &d->lim[k]))
		memset(&d->lim[k], 0, sizeof(d->lim[k]));
}

/* The shape's steps (n ids each) appended to the file the baseline's helper reads; a failure turns
 * the baseline off, saying why. */
static void lk_save_ids(struct lk_run *d, size_t n)
{
	for (int b = 0; d->ids_fd >= 0 && b < d->batches; b++) {
		const char *p = (const char *)(d->ids + (size_t)b * d->maxn);
		size_t left = n * sizeof(*d->ids);
		while (left) {
			ssize_t w = write(d->ids_fd, p, left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				snprintf(d->vwhy, sizeof(d->vwhy), "the steps' ids were not written for its helper (%s)",
					 strerror(w < 0 ? errno : EIO));
				close(d->ids_fd);
				d->ids_fd = -1;
				d->vllm = 0;
				break;
			}
			p += w;
			left -= (size_t)w;
		}
	}
}

/* The timing context of a run: its stream, batches, ids, output and buffers, as every timed call
 * of the run uses them. */
static struct bench_ctx run_ctx(const struct lk_run *d)
{
	const struct lk_opts *o = d->o;
	return (struct bench_ctx){.s = d->s, .gpu = d->gpu, .reps = o->reps, .batches = d->batches,
				  .stride = d->maxn, .ids = d->ids, .dids = d->dids, .dcap = d->dcap,
				  .flush = d->flush, .out = d->gpu ? (void *)(uintptr_t)d->dout : d->hout,
				  .times = d->times, .call_cpu = d->call_cpu, .gap_s = o->gap_ms * 1e-3};
}

/* Per shape the same steps for every strategy (shape-major, so a text workload is hashed into steps
 * once per shape); results stay strategy-major. 0 or 1. */
static int lk_shapes(struct lk_run *d)
{
	const struct lk_opts *o = d->o;
	struct bench_ctx bc = run_ctx(d);
	d->nres = (o->nstrat + 2 * d->layer) * o->nshapes;
	for (int k = 0; k < o->nshapes; k++) {
		double distinct = 0;
		if (bench_workload_fill(d->wl, o->shapes[k], (size_t)d->batches, d->maxn, d->ids, &distinct) ||
		    (d->gpu && eht_dev_h2d(d->dids, d->ids, (size_t)d->batches * d->maxn * sizeof(*d->ids))))
			return cli_fail("bench lookup", NULL);
		d->distinct[k] = distinct;
		for (int si = 0; si < o->nstrat; si++) {
			int strat = o->strategies[si], crc = d->crcs[si];
			struct result *r = &d->res[si * o->nshapes + k];
			memset(r, 0, sizeof(*r));
			r->strategy = strat;
			r->background = -1;
			r->n = o->shapes[k];
			r->distinct = distinct;
			r->hit = d->hot ? hit_fraction(d->hot_sorted, d->nhot, d->ids, o->shapes[k], (size_t)d->batches, d->maxn)
					: -1;
			for (int m = 0; m < NMODES; m++) {
				if (!d->want[m])
					continue;
				if (crc) {
					snprintf(r->err[m], sizeof(r->err[m]), "%s", d->cerr[si]);
					continue;
				}
				if (time_strategy(&bc, d->engines[si], strat, m, r->n, &r->med_ms[m], &r->p90_ms[m], &r->cpu[m]))
					snprintf(r->err[m], sizeof(r->err[m]), "%s", eht_last_error());
				else
					r->ok[m] = 1;
			}
		}
		if (d->layer) {
			struct result lr[2];
			lk_layer_rows(&d->ly, &bc, d->want, d->ids, d->maxn, o->shapes[k], lr);
			for (int w = 0; w < 2; w++) {
				lr[w].distinct = distinct;
				lr[w].hit = d->hot && !w ? hit_fraction(d->hot_sorted, d->nhot, d->ids, o->shapes[k],
									(size_t)d->batches, d->maxn)
						       : -1;
				d->res[(o->nstrat + w) * o->nshapes + k] = lr[w];
			}
		}
		lk_cpu_limit(d, k);
		lk_save_ids(d, o->shapes[k]);
	}
	return 0;
}

/* One setting of the CPU gather's knobs (lookup/gather/rows.c: EHT_LOOKUP_PREFETCH, EHT_LOOKUP_CHUNK_MAX). */
struct knob_set {
	unsigned pf, chunk_max;
};

/* --knob-sweep: the HOST and AUTO engines on every shape and mode again for each setting of the
 * gather's knobs (prefetch distance x largest chunk), one line per setting on stdout (JSON lines on
 * stderr with --json). The knobs go back to the environment's values after. 0 or 1. */
static int lk_knob_sweep(struct lk_run *d)
{
	static const unsigned pfs[] = {0, 2, 4, 8, 16, 32}, cms[] = {64, 128, 256, 512, 1024};
	enum { NKNOBS = 2 };
	static const char *names[NKNOBS] = {"EHT_LOOKUP_PREFETCH", "EHT_LOOKUP_CHUNK_MAX"};
	const struct lk_opts *o = d->o;
	struct bench_ctx bc = run_ctx(d);
	struct knob_set sets[64];
	int ns = 0;
	for (size_t a = 0; a < sizeof(pfs) / sizeof(pfs[0]); a++)
		for (size_t b = 0; b < sizeof(cms) / sizeof(cms[0]); b++)
			sets[ns++] = (struct knob_set){pfs[a], cms[b]};
	char *saved[NKNOBS];
	for (int i = 0; i < NKNOBS; i++)
		saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
	if (!o->json)
		printf("knob sweep (median ms per step; prefetch rows, largest chunk):\n");
	int rc = 0;
	for (int k = 0; k < o->nshapes && !rc; k++) {
		double distinct = 0;
		if (bench_workload_fill(d->wl, o->shapes[k], (size_t)d->batches, d->maxn, d->ids, &distinct) ||
		    (d->gpu && eht_dev_h2d(d->dids, d->ids, (size_t)d->batches * d->maxn * sizeof(*d->ids)))) {
			rc = cli_fail("bench lookup", NULL);
			break;
		}
		for (int q = 0; q < ns; q++) {
			char v[NKNOBS][16];
			snprintf(v[0], sizeof(v[0]), "%u", sets[q].pf);
			snprintf(v[1], sizeof(v[1]), "%u", sets[q].chunk_max);
			for (int i = 0; i < NKNOBS; i++)
				setenv(names[i], v[i], 1);
			eht_settings_reload(); /* libeht reads its settings once; then the gather its knobs */
			eht_lk_knobs_reload();
			for (int si = 0; si < o->nstrat; si++) {
				int st = o->strategies[si];
				if (!d->engines[si] || (st != EHT_LOOKUP_HOST && st != EHT_LOOKUP_AUTO))
					continue;
				char line[512];
				int len = snprintf(line, sizeof(line),
						   o->json ? "{\"knobs\": {\"prefetch\": %u, \"chunk_max\": %u}, "
							     "\"strategy\": \"%s\", \"ids\": %zu"
							   : "  pf %2u chunk max %4u  %-5s %7zu ids",
						   sets[q].pf, sets[q].chunk_max, eht_lookup_strategy_name(st), o->shapes[k]);
				for (int m = 0; m < NMODES; m++) {
					if (!d->want[m])
						continue;
					double med = 0, p90 = 0;
					struct call_cpu cpu;
					int e = time_strategy(&bc, d->engines[si], st, m, o->shapes[k], &med, &p90, &cpu);
					len += snprintf(line + len, sizeof(line) - (size_t)len,
							o->json ? (e ? ", \"%s\": null" : ", \"%s\": %.4f")
								: (e ? "  %s fail" : "  %s %.4f"),
							lk_mode_names[m], med);
				}
				/* JSON lines beside the report, on stderr: stdout stays one JSON document. */
				fprintf(o->json ? stderr : stdout, "%s%s\n", line, o->json ? "}" : "");
			}
		}
	}
	for (int i = 0; i < NKNOBS; i++) {
		if (saved[i])
			setenv(names[i], saved[i], 1);
		else
			unsetenv(names[i]);
		free(saved[i]);
	}
	eht_settings_reload();
	eht_lk_knobs_reload();
	return rc;
}

/* Idle CPU of this process with every engine made and nothing to do (the pool and the doorbell
 * poller asleep): after a second of quiet, CPU seconds over two seconds of wall time. */
static double lk_idle_cpu(void)
{
	struct timespec q = {1, 0}, w = {2, 0};
	nanosleep(&q, NULL);
	double c0 = lk_cpu_seconds();
	nanosleep(&w, NULL);
	return (lk_cpu_seconds() - c0) / 2.0;
}

/* ------------------------------------------------------------------- main */
/* The baseline, last: this process's engines and table go first (the helper makes a table as large),
 * then the helper runs on the same steps. */
static void lk_vllm(struct lk_run *d)
{
	if (!d->vllm) {
		if (d->o->json) /* the table says it under the rows */
			fprintf(stderr, "vllm (Triton): not measured: %s\n", d->vwhy);
		return;
	}
	for (int i = 0; i < CLI_MAX_STRATEGIES; i++) {
		eht_lookup_destroy(d->engines[i]);
		d->engines[i] = NULL;
	}
	lk_layer_close(&d->ly);
	bench_table_close(&d->bt);
	d->t = NULL;
	d->host = NULL;
	fprintf(d->info, "vllm (Triton): timing vLLM's kernel in python3 -m eht.bench_vllm (this table closed first)\n");
	struct lk_vllm_req q = {.gib = d->gib, .rows = d->rows, .shapes = d->o->shapes, .nshapes = d->o->nshapes,
				.reps = d->o->reps, .dev = d->o->dev, .want_gpu = d->vwant[ON_GPU],
				.want_graph = d->vwant[ON_GRAPH], .ids_fd = d->ids_fd, .gap_ms = d->o->gap_ms};
	if (lk_vllm_run(&q, d->vres, &d->vinfo, d->vwhy, sizeof(d->vwhy)) && d->o->json)
		fprintf(stderr, "vllm (Triton): not measured: %s\n", d->vwhy);
	for (int k = 0; d->vinfo && k < d->o->nshapes; k++)
		for (int w = 0; w < 2; w++)
			d->vres[2 * k + w].distinct = d->distinct[k]; /* the same steps as every row's */
}

static void lk_free(struct lk_run *d)
{
	for (int i = 0; i < CLI_MAX_STRATEGIES; i++) {
		eht_lookup_destroy(d->engines[i]);
		d->engines[i] = NULL;
	}
	lk_layer_close(&d->ly);
	if (d->ids_fd >= 0)
		close(d->ids_fd);
	json_decref(d->vinfo);
	free(d->times);
	free(d->call_cpu);
	free(d->hot);
	free(d->hot_sorted);
	bench_workload_free(d->wl);
	if (d->dout)
		eht_dev_free(d->dout);
	if (d->dids)
		eht_dev_free(d->dids);
	if (d->dcap)
		eht_dev_free(d->dcap);
	if (d->flush)
		eht_dev_free(d->flush);
	if (d->s)
		eht_dev_stream_destroy(d->s);
	free(d->hout);
	free(d->ids);
	bench_table_close(&d->bt);
}

/* Which modes run, and the table's size: a quarter of the available memory, at most 48 GiB
 * (bench_size.c). -1 to go on, else the exit status. */
static int lk_plan(struct lk_run *d)
{
	const struct lk_opts *o = d->o;
	d->gpu = bench_gpu(o->cpu, o->dev);
	if (!d->gpu) {
		d->want[ON_HOST] = 1;
	} else {
		d->want[ON_HOST] = o->ids_on == -1 || o->ids_on == ON_HOST || o->ids_on == NMODES;
		d->want[ON_GPU] = o->ids_on == -1 || o->ids_on == ON_GPU || o->ids_on == NMODES;
		d->want[ON_GRAPH] = o->graph;
	}
	d->layer = o->layer < 0 ? d->gpu : o->layer;
	d->ids_fd = -1;
	d->vllm = o->vllm < 0 ? d->gpu : o->vllm;
	if (!d->vllm)
		snprintf(d->vwhy, sizeof(d->vwhy), "%s", o->vllm == 0 ? "--no-vllm" : "no GPU serves this run (--vllm runs its helper anyway)");
	/* it reads ids in GPU memory: eager where the strategies get GPU ids (always, asked without a GPU) */
	d->vwant[ON_GPU] = d->gpu ? d->want[ON_GPU] : 1;
	d->vwant[ON_GRAPH] = o->graph;
	d->info = bench_info(o->json);
	if (!d->gpu)
		fprintf(d->info, "no GPU%s: HOST only, host ids, rows gathered into host memory\n", o->cpu ? " (--cpu)" : "");
	uint64_t avail = eht_mem_available();
	d->gib = o->gib == 0 ? bench_default_gib(avail, d->info) : o->gib;
	d->rows = (uint64_t)(d->gib * (double)(1ull << 30)) / RB;
	d->bytes = d->rows * RB;
	if (d->rows == 0 || d->rows > INT32_MAX) {
		return cli_errorf("bench lookup", 2, "%.2f GiB gives %llu rows (1..2^31-1 allowed)", d->gib,
				  (unsigned long long)d->rows);
	}
	if (avail && d->bytes + (2ull << 30) > avail)
		fprintf(stderr, "eht bench lookup: warning: %.1f GiB table with %.1f GiB available\n", d->gib,
			(double)avail / (1 << 30));
	for (int i = 0; i < o->nshapes; i++)
		if (o->shapes[i] > d->maxn)
			d->maxn = o->shapes[i];
	d->ob = o->fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	d->batches = o->reps + 2; /* distinct ids per rep: no cache helps a later rep */
	d->idle = -1;
	if (d->vllm && (d->ids_fd = lk_vllm_ids_file(d->vwhy, sizeof(d->vwhy))) < 0)
		d->vllm = 0;
	return -1;
}

int bench_lookup(int argc, char **argv)
{
	struct lk_opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct lk_run d = {.o = &o};
	if ((rc = lk_plan(&d)) >= 0)
		return rc;
	rc = 1;
	if (lk_table(&d))
		goto out;
	d.link = d.gpu ? bench_link_gbs(o.dev, "bench lookup") : 0;
	if (d.gpu)
		fprintf(d.info, "link: pinned H2D %.1f GB/s (best of 6, 256 MiB)\n", d.link);
	if (lk_buffers(&d))
		goto out;
	if (lk_engines(&d))
		goto out;
	if (lk_shapes(&d))
		goto out;
	if (o.knob_sweep && lk_knob_sweep(&d))
		goto out;
	if (d.gpu && !getenv("EHT_BENCH_NO_IDLE")) /* 3 s: a device run of several benches may skip it */
		d.idle = lk_idle_cpu();
	lk_vllm(&d);
	if (o.json) {
		if (lk_report_json(&d))
			goto out;
	} else {
		lk_report_table(&d);
	}
	rc = 0;
out:
	lk_free(&d);
	return rc;
}
