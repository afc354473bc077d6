/* SPDX-License-Identifier: Apache-2.0 */
/* bench_lookup.h: what the files of `eht bench lookup` share: the modes a lookup is timed in, one
 * row of the report, the timing of one mode (bench_lookup_time.c), the engine's own call's rows
 * (bench_lookup_layer.c) and vLLM's kernel as the baseline, timed by a Python helper
 * (bench_lookup_vllm.c); the run's state and its report (bench_lookup_report.c). */
#ifndef EHT_BENCH_LOOKUP_H
#define EHT_BENCH_LOOKUP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_cpu_limit.h"
#include "bench_tier.h"
#include "cli.h"
#include "eht.h"
#include "gpu/dev.h"

struct bench_workload;

enum { ON_HOST, ON_GPU, ON_GRAPH, NMODES };
extern const char *const lk_mode_names[NMODES]; /* "host_ids", "gpu_ids", "graph": the JSON's keys */

/* The CPU a call took: the whole process's, and of it eht's pool workers' and doorbell poller's (ms). */
struct call_cpu {
	double all_ms, pool_ms, poller_ms;
	/* The calling thread's own CPU in a call (median, us): an eager call's launches, a graph's launch
	 * call, or a CPU-only lookup's whole call; and how often the calling thread was preempted per call
	 * (involuntary context switches, its syncs included). */
	double call_us, preempted;
};

/* One row of the report: a strategy, the engine's own call (label "layer", "layer+bg") or vLLM's
 * kernel (label "vllm", "vllm+bg"), at one id count. */
struct result {
	int strategy;
	char label[16]; /* the row's name where it is no strategy's ("" for a strategy) */
	int background; /* -1: no way to name; else the call's way (layer, vllm) */
	size_t n;
	double med_ms[NMODES], p90_ms[NMODES];
	struct call_cpu cpu[NMODES];
	double distinct; /* mean fraction of distinct ids per step */
	double hit;      /* fraction of ids in the hot set (-1: none) */
	int ok[NMODES];
	int na[NMODES]; /* the mode does not apply to this row (no figure, no failure) */
	char err[NMODES][160];
};

/* GPU memory a run writes first, to clear the L2 (bench_ctx.flush). */
#define LK_FLUSH_BYTES (512ull << 20)

/* The steps one mode is timed over: batches of ids (batch b at ids + b * stride, stride >= the ids
 * a call takes) on the host and in GPU memory, and the captured graph's id buffer. */
struct bench_ctx {
	eht_stream s;
	int gpu, reps, batches;
	size_t stride;
	const int32_t *ids; /* host: batches x stride */
	eht_dptr dids;      /* GPU copy of ids */
	eht_dptr dcap;      /* the captured graph's id buffer */
	/* GPU memory written before each mode's run (0: none): every mode of every strategy times the
	 * same steps, and a GPU that read rows in place would otherwise find the last run's rows in its
	 * L2 cache (LK_FLUSH_BYTES, several times the largest L2 of the GPUs eht builds for). */
	eht_dptr flush;
	void *out;          /* GPU or host output */
	double *times;      /* reps */
	double *call_cpu;   /* reps: the calling thread's CPU in each call (the launch, not the sync) */
	double gap_s;       /* idle before each timed call (--gap): a model's step between its lookups */
};

/* One lookup call as timed: ids (host or GPU memory, per mode) of ncopy int32 elements into c->out on
 * stream s (NULL without a GPU). 0 or -errno with eht_last_error() set. */
struct bench_call {
	int (*run)(void *arg, int mode, const void *ids, void *out, eht_stream s);
	void *arg;
	size_t ncopy; /* the id elements a call reads (what the graph's id buffer gets per replay) */
};

/* Process CPU seconds (user + sys, every thread). */
double lk_cpu_seconds(void);

/* One mode of one call: median and p90 (ms) per step to the last byte, after a stream sync; the
 * process's CPU per call (every thread: the caller, its stream sync, the pool, the poller), with the
 * pool's and the poller's part. Two untimed steps first, then c->reps timed, each on a fresh batch.
 * ON_GRAPH captures the call once on c->dcap and replays it with each batch copied in first (not
 * timed). 0 or -errno. */
int lk_time_mode(struct bench_ctx *c, const struct bench_call *call, int mode, double *med, double *p90,
		 struct call_cpu *cpu);

/* ---- the engine's own call (bench_lookup_layer.c) ---- */
/* eht_engram_layer_create over the bench's table, all 24 heads (a tp-1 rank), and the steps' ids as
 * [T, 24] int32 tensors, T = ceil(n / 24) with the last token's columns past n dead (-1). */
struct lk_layer {
	eht_engram_layer *l;
	int rc;        /* create's result (0: made) */
	char err[160]; /* why not made */
	int gpu;
	size_t stride;  /* 24 x the most tokens of any shape */
	int32_t *ids;   /* batches x stride */
	eht_dptr dids, dcap;
};
struct lk_layer_opts {
	eht_table *t;
	int gpu, dev, format, batches, dedup;
	unsigned threads;
	size_t maxn;
	const int64_t *hot; /* the hot set for the inline way's engine (NULL: none) */
	size_t nhot;
};
/* Makes the layer and its id buffers; a failure to make the layer is kept in ly->rc / ly->err (its
 * rows say it); 0, or 1 (message printed) for what the bench cannot go on without. */
int lk_layer_open(struct lk_layer *ly, const struct lk_layer_opts *o);
/* The rows of shape n, both ways, in every wanted mode that applies: with a GPU, ids and out in GPU
 * memory (gpu_ids and graph; host_ids does not apply); without one, host memory (host_ids). ids:
 * the shape's steps (batch b at ids + b * stride). r[0] inline, r[1] background. */
void lk_layer_rows(struct lk_layer *ly, struct bench_ctx *base, const int *want, const int32_t *ids,
		   size_t stride, size_t n, struct result r[2]);
void lk_layer_close(struct lk_layer *ly);

/* ---- vLLM's kernel, timed by python3 -m eht.bench_vllm (bench_lookup_vllm.c) ---- */
/* What the helper is asked: the bench's table size, shapes, reps and the modes wanted; the steps'
 * ids (batches per shape, in shape order) in ids_fd, a file the helper reads as /proc/self/fd/N. */
struct lk_vllm_req {
	double gib;
	uint64_t rows;
	const size_t *shapes;
	int nshapes, reps, dev, want_gpu, want_graph;
	int ids_fd; /* -1: the helper draws uniform ids itself */
	double gap_ms; /* idle before each timed call (--gap) */
};
/* Runs the helper and reads its one JSON object. On success *rows holds 2 x nshapes results (per
 * shape: "vllm", then "vllm+bg"; ok / err per mode as the helper reported) and *info the helper's
 * facts (python, torch, triton, gpu); returns 0. Otherwise why holds one line saying why the
 * baseline was not measured (the helper's own reason, or what went wrong running it) and it
 * returns -1. Never fails the bench. */
int lk_vllm_run(const struct lk_vllm_req *q, struct result *rows, json_t **info, char *why, size_t wl);
/* A file for the steps' ids the helper inherits (a memfd without close-on-exec); -1 with why. */
int lk_vllm_ids_file(char *why, size_t wl);

/* ---- the run (bench_lookup.c), reported by bench_lookup_report.c ---- */
#define RB EHT_ENGRAM_ROW_BYTES
#define MAX_SHAPES 8

/* The command line (parse_args). */
struct lk_opts {
	double gib, gap_ms;
	size_t shapes[MAX_SHAPES];
	int nshapes, strategies[CLI_MAX_STRATEGIES], nstrat, reps, json, fmt, dev, cpu, graph, ids_on, dedup, knob_sweep;
	int layer; /* the engine's own call's rows: 1, 0, -1 (where a GPU serves the run) */
	int vllm;  /* vLLM's kernel as the baseline: 1 (always ask the helper), 0, -1 (where a GPU serves) */
	unsigned threads;
	const char *workload, *hotset, *tier;
	long long rbeg, rend;
};

/* One run: the table, the steps, the engines and every row measured. */
struct lk_run {
	const struct lk_opts *o;
	FILE *info;
	int gpu, want[NMODES], batches;
	double gib, link, idle, t_hot;
	uint64_t rows;
	size_t bytes, maxn, ob, nhot;
	uint8_t *hout;
	struct bench_table bt;
	eht_table *t;
	char pages[64];    /* the CPU page size of the rows' mapping, in words */
	uint64_t cpu_page; /* and in bytes (0: unknown) */
	int table_tier;
	int32_t *ids;
	double *times, *call_cpu;
	struct bench_workload *wl;
	int64_t *hot, *hot_sorted;
	eht_dptr dout, dids, dcap, flush;
	eht_stream s;
	eht_lookup *engines[CLI_MAX_STRATEGIES];
	int crcs[CLI_MAX_STRATEGIES];
	char cerr[CLI_MAX_STRATEGIES][160];
	int layer;          /* the layer's rows run (after the strategies' in res) */
	struct lk_layer ly; /* the engine's own call */
	struct result res[(CLI_MAX_STRATEGIES + 2) * MAX_SHAPES];
	int nres;
	/* the baseline: vLLM's kernel, timed by the Python helper after the rest (bench_lookup_vllm.c) */
	double distinct[MAX_SHAPES]; /* per shape: its steps' mean distinct fraction */
	int vllm, vwant[NMODES], ids_fd; /* asked; its modes; the steps' ids it reads (-1: none) */
	struct result vres[2 * MAX_SHAPES];
	json_t *vinfo;  /* the helper's facts (NULL: not measured) */
	char vwhy[512]; /* why not */
	const uint8_t *host;                  /* the rows as the CPU reads them (NULL: none) */
	struct bench_cpu_limit lim[MAX_SHAPES]; /* per shape: the CPU's own limit (threads 0: not run) */
};

/* The report: one JSON object on stdout (0 or 1), or the tables people read. */
int lk_report_json(const struct lk_run *d);
void lk_report_table(const struct lk_run *d);

#endif
