/* SPDX-License-Identifier: Apache-2.0 */
/* cli_hotset.c: `eht hotset build`: the most frequent row ids of a hashed token stream, written as a
 * hot-set file for eht_lookup_set_hotset (`eht bench lookup --hotset FILE`). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_workload.h"
#include "cli.h"
#include "eht.h"
#include "util/clock.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: eht hotset build --workload text:FILE --rows K [--layer 1|14] [--skip-tokens N]\n"
		   "                        [--table-rows R] -o OUT [--json]\n"
		   "  the K most frequent row ids of the text's Engram hashes (V4.1 layout, identity token map), most\n"
		   "  frequent first, learned on tokens [N, end) (--skip-tokens keeps the first N for measuring).\n"
		   "  --layer      model layer whose table the ids index (default 1)\n"
		   "  --table-rows scale ids to a table of R rows as `eht bench lookup` does (default: the layer's\n"
		   "               own rows, 384,006,168 / 384,016,682)\n"
		   "  OUT: a safetensors file with one I64 tensor \"hotset\" [K] of row ids. GPU memory of a hot set:\n"
		   "  K x row bytes (264 for V4.1) + at most 48 x K for its index.\n"
		   "  --json       {\"output\", \"rows\", \"table_rows\", \"layer\", \"tokens\": [first, end), \"coverage\",\n"
		   "               \"gpu_bytes\", \"seconds\"} on stdout; errors as {\"error\": ...}\n");
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_hotset_build[] = {
	{"workload", required_argument, NULL, 'W'}, {"rows", required_argument, NULL, 'k'},
	{"layer", required_argument, NULL, 'l'},    {"skip-tokens", required_argument, NULL, 's'},
	{"table-rows", required_argument, NULL, 'r'}, {"output", required_argument, NULL, 'o'},
	{"json", no_argument, NULL, 'j'},           {"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0}};

int cmd_hotset_build(int argc, char **argv)
{
	const char *workload = NULL, *outp = NULL;
	long long k = 0, skip = 0, trows = 0, layer = 1;
	const struct option *longopts = cli_opts_hotset_build;
	int opt, json = 0;
	char *end;
	cli_opt_reset();
	while ((opt = cli_getopt(argc, argv, "hotset build", "o:", longopts)) != -1) {
		long long *dst = opt == 'k' ? &k : opt == 's' ? &skip : opt == 'r' ? &trows : opt == 'l' ? &layer : NULL;
		switch (opt) {
		case 'W': workload = optarg; break;
		case 'o': outp = optarg; break;
		case 'k': case 's': case 'r': case 'l':
			*dst = strtoll(optarg, &end, 10);
			if (*end || !*optarg || *dst < 0)
				return cli_errorf("hotset build", 2, "%s needs a count, not '%s'", argv[optind - 1], optarg);
			break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: return 2;
		}
	}
	if (optind < argc || !workload || !outp || k <= 0 || (layer != 1 && layer != 14) || trows > INT32_MAX)
		return cli_usage_error("hotset build", layer != 1 && layer != 14
							       ? "needs --workload text:FILE, --rows K > 0, -o OUT and --layer 1 or 14"
							       : "needs --workload text:FILE, --rows K > 0 and -o OUT");
	struct bench_workload *w = NULL;
	int64_t *rows = NULL;
	size_t n = 0;
	double cov = 0, t0 = eht_now_s();
	int rc = 1;
	if (bench_workload_open_layer(workload, (uint64_t)trows, layer == 14, 0, &w)) {
		cli_fail("hotset build", NULL);
		goto out;
	}
	if ((size_t)skip >= bench_workload_tokens(w)) {
		cli_errorf("hotset build", 1, "--skip-tokens %lld leaves nothing of the %zu tokens", skip,
			   bench_workload_tokens(w));
		goto out;
	}
	if (bench_workload_hotset(w, (size_t)k, 0, (size_t)skip, &rows, &n, &cov) || eht_hotset_write(outp, rows, n)) {
		cli_fail("hotset build", NULL);
		goto out;
	}
	if (json)
		rc = cli_print_json(json_pack("{s:s, s:I, s:I, s:I, s:[I, I], s:f, s:I, s:f}", "output", outp, "rows",
					      (json_int_t)n, "table_rows", (json_int_t)bench_workload_rows(w), "layer",
					      (json_int_t)layer, "tokens", (json_int_t)skip,
					      (json_int_t)bench_workload_tokens(w), "coverage", cov, "gpu_bytes",
					      (json_int_t)(n * (264 + 48)), "seconds", eht_now_s() - t0));
	else {
		printf("hot set %s: %zu rows of %llu (layer %lld), learned on tokens [%lld, %zu): %.1f %% of their "
		       "lookups; %.1f MB of GPU memory at 264 B rows; %.1f s\n",
		       outp, n, (unsigned long long)bench_workload_rows(w), layer, skip, bench_workload_tokens(w),
		       100 * cov, (double)n * (264 + 48) / 1e6, eht_now_s() - t0);
		rc = 0;
	}
out:
	free(rows);
	bench_workload_free(w);
	return rc;
}
