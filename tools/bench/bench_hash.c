/* SPDX-License-Identifier: Apache-2.0 */
/* bench_hash.c: `eht bench hash`: Engram hash speed (V4.1 layout) for a prefill and a decode
 * step, on the CPU and on the GPU (kernel only, device-resident batch). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "gpu/dev.h"
#include "eht.h"
#include "util/clock.h"

#define USAGE "usage: eht bench hash [--reps N] [--prefill TOKENS] [--decode SEQS] [--device D] [--no-gpu] [--json]"

struct shape {
	const char *name;
	size_t nt, nr;
	double cpu_s, gpu_s; /* medians per step; gpu_s < 0: not measured */
};

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return v[n / 2];
}

static int gpu_time(const eht_engram_layout *l, const struct eht_engram_batch *b, int device, int reps, double *out)
{
	size_t nt = b->n_tokens, nr = b->n_requests;
	eht_dptr d_tok = 0, d_st = 0, d_hist = 0, d_rows = 0;
	double *t = calloc((size_t)reps, sizeof(*t));
	int rc = t ? eht_dev_use(device) : -ENOMEM;
	if (!rc)
		rc = eht_dev_alloc(&d_tok, nt * 4);
	if (!rc)
		rc = eht_dev_alloc(&d_st, (nr + 1) * 4);
	if (!rc)
		rc = eht_dev_alloc(&d_hist, nr * 12);
	if (!rc)
		rc = eht_dev_alloc(&d_rows, nt * 48 * 4);
	if (!rc)
		rc = eht_dev_h2d(d_tok, b->tokens, nt * 4);
	if (!rc)
		rc = eht_dev_h2d(d_st, b->starts, (nr + 1) * 4);
	if (!rc)
		rc = eht_dev_h2d(d_hist, b->history, nr * 12);
	struct eht_engram_batch db = *b;
	db.tokens = (const int32_t *)(uintptr_t)d_tok;
	db.starts = (const uint32_t *)(uintptr_t)d_st;
	db.history = (const int32_t *)(uintptr_t)d_hist;
	for (int r = -3; r < reps && !rc; r++) { /* 3 warm-ups (module load, clocks) */
		double t0 = eht_now_s();
		rc = eht_engram_hash_gpu(l, &db, (int32_t *)(uintptr_t)d_rows, NULL);
		if (!rc)
			rc = eht_dev_sync();
		if (r >= 0)
			t[r] = eht_now_s() - t0;
	}
	if (!rc)
		*out = median(t, reps);
	eht_dptr all[] = {d_tok, d_st, d_hist, d_rows};
	for (int i = 0; i < 4; i++)
		if (all[i])
			eht_dev_free(all[i]);
	free(t);
	return rc;
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_bench_hash[] = {
    {"reps", required_argument, 0, 'r'}, {"prefill", required_argument, 0, 'p'},
    {"decode", required_argument, 0, 'd'}, {"device", required_argument, 0, 'D'},
    {"no-gpu", no_argument, 0, 'n'}, {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

int bench_hash(int argc, char **argv)
{
	const struct option *opts = cli_opts_bench_hash;
	int reps = 50, device = 0, no_gpu = 0, json = 0, c;
	long prefill = 8192, decode = 256;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "bench hash", "h", opts)) != -1) {
		char *end = NULL;
		long v = 0;
		if (c == 'r' || c == 'p' || c == 'd' || c == 'D') {
			v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < (c == 'D' ? 0 : 1) || v > (1L << 24))
				return cli_errorf("bench hash", 2, "bad value '%s' for --%s (eht bench hash --help shows the usage)",
						  optarg, c == 'r' ? "reps" : c == 'p' ? "prefill" : c == 'd' ? "decode" : "device");
		}
		switch (c) {
		case 'r': reps = (int)v; break;
		case 'p': prefill = v; break;
		case 'd': decode = v; break;
		case 'D': device = (int)v; break;
		case 'n': no_gpu = 1; break;
		case 'j': json = 1; break;
		case 'h': printf("%s\n", USAGE); return 0;
		default: return 2; /* cli_getopt said why */
		}
	}
	if (optind != argc)
		return cli_usage_error("bench hash", "unexpected argument");
	eht_engram_layout *l;
	if (eht_engram_layout_preset("v41", &l) != 0)
		return cli_fail("bench hash", NULL);
	struct shape sh[2] = {{"prefill", (size_t)prefill, 1, 0, -1}, {"decode", (size_t)decode, (size_t)decode, 0, -1}};
	int have_gpu = !no_gpu && eht_dev_load() == 0 && eht_dev_count() > device;
	int rc = 0;
	for (int k = 0; k < 2 && !rc; k++) {
		size_t nt = sh[k].nt, nr = sh[k].nr;
		int32_t *tok = malloc(nt * 4), *hist = malloc(nr * 12), *rows = malloc(nt * 48 * 4);
		uint32_t *st = malloc((nr + 1) * 4);
		double *t = malloc((size_t)reps * sizeof(*t));
		uint64_t s = 1 + (uint64_t)k;
		if (!tok || !hist || !rows || !st || !t) {
			rc = -ENOMEM;
		} else {
			for (size_t i = 0; i < nt; i++)
				tok[i] = (int32_t)(rnd(&s) % 99092);
			for (size_t i = 0; i < nr * 3; i++)
				hist[i] = (int32_t)(rnd(&s) % 99092);
			for (size_t r = 0; r <= nr; r++)
				st[r] = (uint32_t)(nt * r / nr);
			struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = nt, .tokens = tok, .n_requests = nr,
						     .starts = st, .history = hist};
			for (int r = -1; r < reps && !rc; r++) {
				double t0 = eht_now_s();
				rc = eht_engram_hash(l, &b, rows);
				if (r >= 0)
					t[r] = eht_now_s() - t0;
			}
			if (!rc)
				sh[k].cpu_s = median(t, reps);
			if (!rc && have_gpu && gpu_time(l, &b, device, reps, &sh[k].gpu_s) != 0) {
				fprintf(stderr, "eht bench hash: GPU: %s\n", eht_last_error());
				have_gpu = 0;
			}
		}
		free(tok);
		free(hist);
		free(rows);
		free(st);
		free(t);
	}
	eht_engram_layout_free(l);
	if (rc)
		return cli_fail("bench hash", NULL);
	if (json) { /* the bench envelope (bench, eht_version, host, time_utc), then the figures */
		json_t *o = bench_report_new("hash");
		json_object_set_new(o, "layout", json_string("v41"));
		json_object_set_new(o, "row_ids_per_token", json_integer(48));
		json_object_set_new(o, "reps", json_integer(reps));
		for (int k = 0; k < 2; k++)
			json_object_set_new(o, sh[k].name,
					    json_pack("{s:I, s:I, s:f, s:o}", "tokens", (json_int_t)sh[k].nt, "requests",
						      (json_int_t)sh[k].nr, "cpu_s", sh[k].cpu_s, "gpu_s",
						      bench_real_or_null(sh[k].gpu_s, sh[k].gpu_s >= 0)));
		return cli_print_json(o);
	}
	printf("Engram hash, V4.1 layout (2 layers x 24 row ids per token), median of %d steps\n", reps);
	for (int k = 0; k < 2; k++) {
		printf("  %-7s %6zu tokens / %4zu requests: CPU %9.1f us (%7.1f M ids/s)", sh[k].name, sh[k].nt,
		       sh[k].nr, sh[k].cpu_s * 1e6, (double)sh[k].nt * 48 / sh[k].cpu_s / 1e6);
		if (sh[k].gpu_s >= 0)
			printf("   GPU %8.1f us incl. launch+sync (%8.1f M ids/s)", sh[k].gpu_s * 1e6,
			       (double)sh[k].nt * 48 / sh[k].gpu_s / 1e6);
		printf("\n");
	}
	return 0;
}
