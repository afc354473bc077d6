/* SPDX-License-Identifier: Apache-2.0 */
/* cli_synth.c: `eht synth DIR`: write a small synthetic Engram-shaped checkpoint. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "eht.h"

#define USAGE                                                                                              \
	"usage: eht synth DIR [--tables N] [--rows R | --preset v41-small] [--shards S] [--seed X] [--json]\n" \
	"  writes layers.<L>.engram.embed.weight F8_E4M3 [R,256] + .scale F8_E8M0 [R,8] per table\n"      \
	"  (L = 1, 14, 27, ...), deterministic from the seed. --preset v41-small: two tables whose rows\n" \
	"  are the 24 head ranges (small primes) of that Engram layout, so sharding by head range is real.\n" \
	"  --json: {\"path\", \"preset\", \"tables\": [{\"name\", \"layer\", \"rows\"}], \"files\", \"seed\"} on stdout"

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int usage_err(const char *msg)
{
	if (msg)
		return cli_usage_error("synth", msg);
	fprintf(stderr, "%s\n", USAGE);
	return 2;
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_synth[] = {
    {"tables", required_argument, 0, 't'}, {"rows", required_argument, 0, 'r'},
    {"shards", required_argument, 0, 's'}, {"seed", required_argument, 0, 'x'},
    {"preset", required_argument, 0, 'p'}, {"json", no_argument, 0, 'j'},
    {"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
};

/* The files a run writes into DIR (each shard, the index and their .tmp), named before it starts so
 * a signal's handler (cli_undo_push) removes them with unlink alone, and DIR itself when the run made
 * it: an interrupted synth leaves nothing, as a failed one does (eht_synth_checkpoint). */
struct synth_undo {
	char **paths;
	size_t n;
	const char *dir;
	int made_dir;
};

static void synth_undo_run(void *arg)
{
	const struct synth_undo *u = arg;
	for (size_t i = 0; i < u->n; i++)
		unlink(u->paths[i]);
	if (u->made_dir)
		rmdir(u->dir);
}

static void synth_undo_free(struct synth_undo *u)
{
	for (size_t i = 0; i < u->n; i++)
		free(u->paths[i]);
	free(u->paths);
	u->paths = NULL;
	u->n = 0;
}

static int synth_undo_add(struct synth_undo *u, const char *name)
{
	if (asprintf(&u->paths[u->n], "%s/%s", u->dir, name) < 0)
		return -1;
	u->n++;
	if (asprintf(&u->paths[u->n], "%s/%s.tmp", u->dir, name) < 0)
		return -1;
	u->n++;
	return 0;
}

static int synth_undo_prepare(struct synth_undo *u, const char *dir, uint32_t shards)
{
	struct stat st;
	*u = (struct synth_undo){.dir = dir, .made_dir = stat(dir, &st) != 0};
	u->paths = calloc(2 * ((size_t)shards + 1), sizeof(*u->paths));
	if (!u->paths)
		return -1;
	char name[64];
	for (uint32_t s = 0; s < shards; s++) {
		if (shards == 1)
			snprintf(name, sizeof(name), "model.safetensors");
		else
			snprintf(name, sizeof(name), "model-%05u-of-%05u.safetensors", s + 1, shards);
		if (synth_undo_add(u, name))
			return -1;
	}
	return shards > 1 ? synth_undo_add(u, "model.safetensors.index.json") : 0;
}

int cmd_synth(int argc, char **argv)
{
	const struct option *opts = cli_opts_synth;
	int json = 0;
	struct eht_synth_opts o = {.size = sizeof(o)};
	const char *preset = NULL;
	uint64_t rows[EHT_ENGRAM_MAX_LAYERS];
	int c;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "synth", "h", opts)) != -1) {
		uint64_t v = 0;
		if (c == 'h') {
			printf("%s\n", USAGE);
			return 0;
		}
		if (c == CLI_OPT_ERROR)
			return 2;
		if (c == 'j') {
			json = 1;
			continue;
		}
		if (c == 'p') {
			preset = optarg;
			continue;
		}
		if (parse_u64(optarg, &v))
			return usage_err("options take unsigned integers");
		if ((c == 't' || c == 's') && (v == 0 || v > UINT32_MAX))
			return usage_err("--tables and --shards take 1 .. 2^32-1");
		if (c == 'r' && v == 0)
			return usage_err("--rows takes at least 1");
		if (c == 't')
			o.tables = (uint32_t)v;
		else if (c == 's')
			o.shards = (uint32_t)v;
		else if (c == 'r')
			o.rows = v;
		else
			o.seed = v;
	}
	if (optind != argc - 1)
		return usage_err(optind >= argc ? "no DIR" : "one DIR only");
	const char *dir = argv[optind];
	if (preset) {
		eht_engram_layout *l;
		struct eht_engram_info in = {.size = sizeof(in)};
		if (o.rows || o.tables)
			return usage_err("--preset sets the tables and rows: no --tables or --rows with it");
		if (eht_engram_layout_preset(preset, &l) != 0)
			return cli_fail("synth", NULL);
		eht_engram_layout_info(l, &in);
		eht_engram_layout_free(l);
		for (uint32_t i = 0; i < in.n_layers; i++) {
			if (in.layer_ids[i] != eht_synth_layer(i)) {
				return cli_errorf("synth", 1, "preset %s has layer %u at index %u; synth names layer %u", preset,
						  in.layer_ids[i], i, eht_synth_layer(i));
			}
			rows[i] = in.rows[i];
		}
		o.tables = in.n_layers;
		o.table_rows = rows;
	}
	struct synth_undo undo;
	if (synth_undo_prepare(&undo, dir, o.shards ? o.shards : 1) || cli_undo_push(synth_undo_run, &undo)) {
		synth_undo_free(&undo);
		return cli_error("synth", json, "out of memory");
	}
	int rc = eht_synth_checkpoint(dir, &o);
	cli_undo_pop();
	synth_undo_free(&undo);
	if (rc != 0)
		return cli_error("synth", json, NULL);
	uint32_t ntables = o.tables ? o.tables : EHT_SYNTH_DEFAULT_TABLES;
	if (json) {
		json_t *tables = json_array();
		for (uint32_t i = 0; i < ntables; i++) {
			char name[64];
			snprintf(name, sizeof(name), "layers.%u.engram.embed", eht_synth_layer(i));
			uint64_t r = o.table_rows ? o.table_rows[i] : o.rows ? o.rows : EHT_SYNTH_DEFAULT_ROWS;
			json_array_append_new(tables, json_pack("{s:s, s:i, s:I}", "name", name, "layer",
								(int)eht_synth_layer(i), "rows", (json_int_t)r));
		}
		return cli_print_json(json_pack("{s:s, s:s?, s:o, s:i, s:I}", "path", dir, "preset", preset, "tables",
						tables, "files", (int)(o.shards ? o.shards : 1), "seed", (json_int_t)o.seed));
	}
	if (preset)
		printf("eht synth: wrote %s: preset %s, %u table(s) (rows %llu, %llu), %u file(s), seed %llu\n", dir,
		       preset, o.tables, (unsigned long long)rows[0], (unsigned long long)rows[o.tables > 1 ? 1 : 0],
		       o.shards ? o.shards : 1, (unsigned long long)o.seed);
	else
		printf("eht synth: wrote %s: %u table(s) x %llu rows, %u file(s), seed %llu\n", dir,
		       ntables,
		       (unsigned long long)(o.rows ? o.rows : EHT_SYNTH_DEFAULT_ROWS), o.shards ? o.shards : 1,
		       (unsigned long long)o.seed);
	return 0;
}
