/* SPDX-License-Identifier: Apache-2.0 */
/* cli_hash.c: `eht hash`: Engram row ids of a sequence of steps, on the CPU or the GPU, for checking. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eht.h"
#include "engram/steps.h"
#include "util/file.h"

#define USAGE                                                                                             \
	"usage: eht hash (--preset v41 | --config FILE.json) [--token-map FILE] --steps STEPS.json [--gpu] " \
	"[--json] [--device N]\n"                                                                            \
	"  STEPS.json: [{\"requests\": [{\"req\": \"a\", \"token_ids\": [...], \"dead\": [0,1,...]}]}, ...]\n"  \
	"  (dead optional, 1 = image token); a request's history carries across steps by its name.\n"        \
	"  --json: {\"steps\": [{\"rows\": R}, ...]}, R[token][layer][col] int32 row ids (offset\n"         \
	"  included), col = (order - 2) * n_heads + head; errors as {\"error\": ...}."

static int usage_err(const char *msg) { return cli_usage_error("hash", msg); }

/* One step's rows: into jf (the JSON held until every step is done, so that a failing step leaves
 * only the error object on stdout), else as text on stdout. */
static void print_step(const struct eht_engram_info *in, const struct engram_steps *ss, size_t si,
		       const int32_t *rows, FILE *jf)
{
	const struct engram_step *st = &ss->steps[si];
	const size_t per = (size_t)in->n_layers * in->cols;
	if (jf) {
		fprintf(jf, "%s{\"rows\": [", si ? ",\n " : "");
		for (size_t t = 0; t < st->n_tokens; t++) {
			fprintf(jf, "%s[", t ? ", " : "");
			for (uint32_t l = 0; l < in->n_layers; l++) {
				fprintf(jf, "%s[", l ? ", " : "");
				for (uint32_t c = 0; c < in->cols; c++)
					fprintf(jf, "%s%d", c ? ", " : "", rows[t * per + l * in->cols + c]);
				fputc(']', jf);
			}
			fputc(']', jf);
		}
		fputs("]}", jf);
		return;
	}
	printf("step %zu:\n", si);
	for (size_t r = 0; r < st->n_requests; r++)
		for (uint32_t t = st->starts[r]; t < st->starts[r + 1]; t++)
			for (uint32_t l = 0; l < in->n_layers; l++) {
				printf("  %s token %u (id %d%s) layer %u:", ss->names[st->req[r]], t - st->starts[r],
				       st->tokens[t], st->dead[t] ? ", image" : "", in->layer_ids[l]);
				for (uint32_t c = 0; c < in->cols; c++)
					printf(" %d", rows[t * per + l * in->cols + c]);
				printf("\n");
			}
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_hash[] = {
    {"preset", required_argument, 0, 'p'}, {"config", required_argument, 0, 'c'},
    {"token-map", required_argument, 0, 'm'}, {"steps", required_argument, 0, 's'},
    {"gpu", no_argument, 0, 'g'}, {"json", no_argument, 0, 'j'},
    {"device", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

int cmd_hash(int argc, char **argv)
{
	const struct option *opts = cli_opts_hash;
	const char *preset = NULL, *config = NULL, *map = NULL, *steps = NULL;
	int gpu = 0, json = 0, device = 0, c;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "hash", "h", opts)) != -1) {
		switch (c) {
		case 'p': preset = optarg; break;
		case 'c': config = optarg; break;
		case 'm': map = optarg; break;
		case 's': steps = optarg; break;
		case 'g': gpu = 1; break;
		case 'j': json = 1; break;
		case 'd': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || !*optarg || v < 0 || v > 1024)
				return usage_err("--device takes a GPU ordinal");
			device = (int)v;
			break;
		}
		case 'h': printf("%s\n", USAGE); return 0;
		default: return 2; /* cli_getopt said why */
		}
	}
	if (optind != argc)
		return usage_err("unexpected argument");
	if (!preset == !config)
		return usage_err("give exactly one of --preset and --config");
	if (!steps)
		return usage_err("--steps is required");

	eht_engram_layout *l = NULL;
	eht_engram_state *state = NULL;
	struct engram_steps *ss = NULL;
	int32_t *rows = NULL, *hist = NULL;
	char *text = NULL, *jbuf = NULL;
	size_t len, jlen = 0;
	FILE *jf = NULL;
	int rc = 1;
	if (json && !(jf = open_memstream(&jbuf, &jlen))) {
		cli_errorf("hash", 1, "out of memory");
		goto out;
	}
	if ((preset ? eht_engram_layout_preset(preset, &l) : eht_engram_layout_from_file(config, &l)) != 0 ||
	    (map && eht_engram_layout_load_token_map(l, map) != 0)) {
		cli_fail("hash", NULL);
		goto out;
	}
	/* The file rule (util/file.h): a FIFO given as the steps fails instead of blocking. */
	if (eht_file_read_all(steps, "steps", (size_t)1 << 30, &text, &len) != 0) {
		cli_fail("hash", NULL);
		goto out;
	}
	if (engram_steps_parse(text, len, &ss) != 0 || eht_engram_state_create(l, 0, &state) != 0) {
		cli_errorf("hash", 1, "%s: %s", steps, eht_last_error());
		goto out;
	}
	struct eht_engram_info in = {.size = sizeof(in)};
	eht_engram_layout_info(l, &in);
	for (size_t si = 0; si < ss->n; si++) {
		const struct engram_step *st = &ss->steps[si];
		struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = st->n_tokens, .tokens = st->tokens,
					     .dead = st->dead, .n_requests = st->n_requests, .starts = st->starts};
		size_t per = (size_t)in.n_layers * in.cols;
		free(rows);
		free(hist);
		rows = malloc((st->n_tokens * per + 1) * sizeof(*rows));
		hist = malloc((st->n_requests * (in.max_ngram - 1) + 1) * sizeof(*hist));
		if (!rows || !hist) {
			cli_errorf("hash", 1, "out of memory");
			goto out;
		}
		int r;
		if (gpu) {
			r = eht_engram_state_batch_history(state, st->req, st->n_requests, hist);
			b.history = hist;
			if (!r)
				r = eht_engram_hash_gpu_copy(l, &b, rows, device);
			b.history = NULL;
			if (!r)
				r = eht_engram_state_advance(state, st->req, &b);
		} else {
			r = eht_engram_state_step(state, st->req, &b, rows);
		}
		if (r) {
			cli_errorf("hash", 1, "step %zu: %s", si, eht_last_error());
			goto out;
		}
		print_step(&in, ss, si, rows, jf);
	}
	if (jf) {
		int bad = fclose(jf) != 0;
		jf = NULL;
		if (bad) {
			cli_errorf("hash", 1, "out of memory");
			goto out;
		}
		printf("{\"steps\": [%s]}\n", jbuf);
	}
	rc = 0;
out:
	if (jf)
		fclose(jf);
	free(jbuf);
	free(rows);
	free(hist);
	free(text);
	engram_steps_free(ss);
	eht_engram_state_destroy(state);
	eht_engram_layout_free(l);
	return rc;
}
