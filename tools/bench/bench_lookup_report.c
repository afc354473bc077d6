/* SPDX-License-Identifier: Apache-2.0 */
/* bench_lookup_report.c: `eht bench lookup`'s report: one JSON object (the bench envelope, every row,
 * the CPU's limit, the baseline) or the tables people read (the strategies' and the engine's own
 * call's rows, then vLLM's kernel's, or the one line saying why it was not measured). */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_lookup.h"
#include "bench_workload.h"
#include "cli.h"
#include "eht.h"

/* ------------------------------------------------------------------- the report */
/* A row's name: its strategy's, or its label (layer, vllm). */
static const char *lk_row_name(const struct result *r)
{
	return r->label[0] ? r->label : eht_lookup_strategy_name(r->strategy);
}

/* A result's fastest mode: its median (0: none ran), rows/s and GB/s. */
static double lk_best(const struct result *r, double *rps, double *gbs)
{
	double best = 0;
	for (int m = 0; m < NMODES; m++)
		if (r->ok[m] && (best == 0 || r->med_ms[m] < best))
			best = r->med_ms[m];
	*rps = best > 0 ? (double)r->n / (best * 1e-3) : 0;
	*gbs = *rps * RB / 1e9;
	return best;
}

/* A row in JSON, its modes those of want; base: a row of the baseline (no eht engine: no hot set, no
 * GPU dedup). */
static json_t *lk_result_json(const struct lk_run *d, const struct result *r, const int *want, int base)
{
	double link = d->link, rps, gbs, best = lk_best(r, &rps, &gbs);
	double floor_ms = link > 0 ? (double)r->n * RB / (link * 1e9) * 1e3 : 0;
	json_t *o = json_pack("{s:s, s:I, s:f, s:I, s:o, s:o}", "strategy", lk_row_name(r),
			      "ids", (json_int_t)r->n, "distinct_fraction", r->distinct, "hot_rows",
			      (json_int_t)(base ? 0 : d->nhot), "hot_hit_fraction", bench_real_or_null(r->hit, r->hit >= 0),
			      "link_floor_ms", bench_real_or_null(floor_ms, link > 0));
	if (!o)
		return NULL;
	json_object_set_new(o, "gpu_dedup", json_boolean(!base && d->gpu && (d->o->dedup || d->nhot)));
	if (r->background >= 0)
		json_object_set_new(o, "background", json_boolean(r->background));
	for (int m = 0; m < NMODES; m++) {
		if (!want[m])
			continue;
		json_object_set_new(o, lk_mode_names[m],
				    r->na[m] ? json_null() : r->ok[m] ? json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "median_ms", r->med_ms[m], "p90_ms",
							 r->p90_ms[m], "cpu_ms_per_call", r->cpu[m].all_ms,
							 "pool_cpu_ms_per_call", r->cpu[m].pool_ms, "poller_cpu_ms_per_call",
							 r->cpu[m].poller_ms, "calling_thread_cpu_us", r->cpu[m].call_us,
							 "calling_thread_preempted_per_call", r->cpu[m].preempted)
					     : json_pack("{s:s}", "error", r->err[m]));
	}
	json_object_set_new(o, "best_rows_per_s", bench_real_or_null(rps, best > 0));
	json_object_set_new(o, "best_link_fraction", bench_real_or_null(gbs / link, link > 0 && best > 0));
	return o;
}

/* The baseline in JSON: the helper's facts and its rows in the strategies' shape, or why not. */
static json_t *lk_baseline_json(const struct lk_run *d)
{
	if (!d->vinfo)
		return json_pack("{s:s, s:s}", "label", "vllm (Triton)", "skipped", d->vwhy);
	json_t *b = json_deep_copy(d->vinfo), *rows = json_array();
	for (int i = 0; rows && i < 2 * d->o->nshapes; i++)
		json_array_append_new(rows, lk_result_json(d, &d->vres[i], d->vwant, 1));
	if (b && rows)
		json_object_set_new(b, "results", rows);
	else
		json_decref(rows);
	return b;
}

/* The JSON report: the common envelope, null where a figure does not apply (no link measured
 * without a GPU, no idle figure, no hot set). 0 or 1. */
int lk_report_json(const struct lk_run *d)
{
	const struct lk_opts *o = d->o;
	json_t *rep = bench_report_new("lookup"), *jres = json_array();
	if (rep && jres)
		json_object_update_new(rep, json_pack("{s:s, s:s, s:I, s:s, s:f, s:I, s:i, s:s, s:b, s:o, s:i, s:f, s:o, s:s}",
						      "tier", o->tier, "table_tier", eht_tier_name(d->table_tier),
						      "cpu_page_size", (json_int_t)d->cpu_page, "cpu_pages", d->pages,
						      "table_gib", d->gib,
						      "rows", (json_int_t)d->rows, "row_bytes", RB, "format",
						      o->fmt ? "bf16" : "raw", "gpu", d->gpu, "link_gbs",
						      bench_real_or_null(d->link, d->link > 0), "reps", o->reps, "gap_ms", o->gap_ms, "idle_cpu_cores",
						      bench_real_or_null(d->idle, d->idle >= 0), "workload",
						      bench_workload_name(d->wl)));
	for (int i = 0; i < d->nres; i++)
		json_array_append_new(jres, lk_result_json(d, &d->res[i], d->want, 0));
	json_t *jlim = json_array();
	for (int k = 0; jlim && k < o->nshapes; k++) {
		const struct bench_cpu_limit *l = &d->lim[k];
		if (!l->threads)
			continue;
		json_t *e = json_pack("{s:I, s:I, s:I, s:I, s:f, s:f}", "ids", (json_int_t)o->shapes[k], "threads",
				      (json_int_t)l->threads, "piece_rows", (json_int_t)l->piece, "prefetch",
				      (json_int_t)l->prefetch, "local_ms", l->local_s * 1e3, "staging_ms", l->staging_s * 1e3);
		if (e)
			json_object_set_new(e, "staging_engines_rows_ms", json_real(l->seen_s * 1e3));
		if (e && l->gap_s > 0) {
			json_object_set_new(e, "gap_asleep_ms", json_real(l->gap_asleep_s * 1e3));
			json_object_set_new(e, "gap_spinning_ms", json_real(l->gap_spinning_s * 1e3));
		}
		json_array_append_new(jlim, e);
	}
	if (rep && jlim)
		json_object_set_new(rep, "cpu_limit", jlim);
	else
		json_decref(jlim);
	if (rep)
		json_object_set_new(rep, "baseline", lk_baseline_json(d));
	/* json_object_set_new takes jres even when it fails */
	if (!rep || !jres || json_object_set_new(rep, "results", jres)) {
		if (!rep)
			json_decref(jres);
		json_decref(rep);
		return cli_errorf("bench lookup", 1, "out of memory for the report");
	}
	return cli_print_json(rep);
}

static void lk_result_row(const struct lk_run *d, const struct result *r, const int *want)
{
	double link = d->link, rps, gbs, best = lk_best(r, &rps, &gbs);
	double floor_ms = link > 0 ? (double)r->n * RB / (link * 1e9) * 1e3 : 0;
	char hf[16], lf[16];
	bench_cell(hf, sizeof(hf), "%.1f%%", 100 * r->hit, r->hit >= 0, "-");
	printf("%-8s %8zu %8.1f%% %6s %10.3f", lk_row_name(r), r->n, 100 * r->distinct, hf,
	       floor_ms);
	for (int m = 0; m < NMODES; m++) {
		if (!want[m])
			continue;
		if (r->ok[m])
			printf(" %12.3f %8.3f %7.3f", r->med_ms[m], r->p90_ms[m], r->cpu[m].all_ms);
		else if (r->na[m])
			printf(" %12s %8s %7s", "-", "-", "-");
		else
			printf(" %12s %8s %7s", "fail", "-", "-");
	}
	bench_cell(lf, sizeof(lf), "%.0f%%", link > 0 ? 100 * gbs / link : 0, link > 0 && best > 0, "-");
	printf(" %9.1f %7s\n", rps / 1e6, lf);
}

/* The table's header line: its modes those of want. */
static void lk_table_header(const int *want)
{
	printf("%-8s %8s %9s %6s %10s", "strategy", "ids", "distinct", "hot", "floor ms");
	for (int m = 0; m < NMODES; m++)
		if (want[m])
			printf(" %12s %8s %7s", m == ON_HOST ? "host-ids ms" : m == ON_GPU ? "gpu-ids ms" : "graph ms", "p90",
			       "cpu ms");
	printf(" %9s %7s\n", "Mrows/s", "link%");
}

/* n rows, then a line for each mode that failed. */
static void lk_table_rows(const struct lk_run *d, const struct result *res, int n, const int *want)
{
	for (int i = 0; i < n; i++)
		lk_result_row(d, &res[i], want);
	for (int i = 0; i < n; i++)
		for (int m = 0; m < NMODES; m++)
			if (want[m] && !res[i].ok[m] && !res[i].na[m])
				printf("%s %zu %s: %s\n", lk_row_name(&res[i]), res[i].n, lk_mode_names[m], res[i].err[m]);
}

/* The calling thread's own CPU per call of each row and mode (what an eager call costs an engine's
 * launching thread), and how often it was preempted per call. */
static void lk_calling_thread(const struct result *res, int n, const int *want)
{
	printf("the calling thread's CPU per call, median us (times preempted per call):\n");
	for (int i = 0; i < n; i++) {
		printf("  %-8s %8zu", lk_row_name(&res[i]), res[i].n);
		for (int m = 0; m < NMODES; m++)
			if (want[m] && res[i].ok[m])
				printf("  %s %.1f (%.2f)", m == ON_HOST ? "host-ids" : m == ON_GPU ? "gpu-ids" : "graph launch",
				       res[i].cpu[m].call_us, res[i].cpu[m].preempted);
		printf("\n");
	}
}

/* The baseline's rows under the strategies', with their own columns (it takes GPU ids), or the one
 * line saying why it was not measured. */
static void lk_baseline_table(const struct lk_run *d)
{
	if (!d->vinfo) {
		printf("vllm (Triton): not measured: %s\n", d->vwhy);
		return;
	}
	const char *tv = json_string_value(json_object_get(d->vinfo, "triton")),
		   *pv = json_string_value(json_object_get(d->vinfo, "torch"));
	printf("vllm (Triton): vLLM's lookup algorithm (eht.vllm_baseline; Triton %s, torch %s), the same table size and "
	       "steps in its own process,\nread in place in vLLM's split layout, bf16 out; vllm: grid SMs (inline), "
	       "vllm+bg: SMs / 2 (its background grid)\n",
	       tv ? tv : "?", pv ? pv : "?");
	lk_table_header(d->vwant);
	lk_table_rows(d, d->vres, 2 * d->o->nshapes, d->vwant);
}

void lk_report_table(const struct lk_run *d)
{
	const struct lk_opts *o = d->o;
	printf("workload: %s, table in %s, CPU pages %s\n", bench_workload_name(d->wl), o->tier, d->pages);
	lk_table_header(d->want);
	lk_table_rows(d, d->res, d->nres, d->want);
	lk_calling_thread(d->res, d->nres, d->want);
	lk_baseline_table(d);
	char gap[64] = "";
	if (o->gap_ms > 0)
		snprintf(gap, sizeof(gap), ", each after %g ms idle", o->gap_ms);
	printf("(median time per step to the last byte in %s memory, after a stream sync; %d reps of fresh "
	       "steps%s%s; cpu ms: the process's CPU time per call, every thread; floor: the rows' %d bytes at the measured link\n"
	       "rate; Mrows/s and link%% of the fastest mode)\n",
	       d->gpu ? "GPU" : "host", o->reps, gap, d->flush ? ", the same for every mode, the GPU's cache cleared before each" : "",
	       RB);
	for (int k = 0; k < o->nshapes; k++) {
		const struct bench_cpu_limit *l = &d->lim[k];
		if (!l->threads)
			continue;
		printf("CPU limit, %zu ids: %.3f ms into per-thread buffers, %.3f ms into staging (%u spinning threads, "
		       "%u-row pieces, prefetch %u rows; rows nobody read before); the engines' rows again: %.3f ms "
		       "into staging\n",
		       o->shapes[k], l->local_s * 1e3, l->staging_s * 1e3, l->threads, l->piece, l->prefetch, l->seen_s * 1e3);
		if (l->gap_s > 0)
			printf("  after %g ms idle: %.3f ms into staging with the threads asleep through it, %.3f ms "
			       "spinning\n", l->gap_s * 1e3, l->gap_asleep_s * 1e3, l->gap_spinning_s * 1e3);
	}
	if (d->idle >= 0)
		printf("idle CPU with %d engines made and waiting: %.2f cores\n", o->nstrat + 2 * d->layer, d->idle);
}
