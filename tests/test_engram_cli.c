/* SPDX-License-Identifier: Apache-2.0 */
/* test_engram_cli.c: `eht hash` through the built binary (EHT_CLI): steps with carried history, the
 * --json format against the library, token maps, configs, usage and input errors. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "testutil.h"

static const char *cli;
static char dir[512], out_path[600], err_path[600];

static int run(const char *args)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s'", cli, args, out_path, err_path);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void put(const char *name, const char *text)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	CHECK_RC(t_write_file(p, text, strlen(text)), 0);
}

/* R[token][layer][col] of step si of the output against rows. */
static int same_rows(json_t *outj, size_t si, const int32_t *rows, size_t n_tokens, size_t layers, size_t cols)
{
	json_t *r = json_object_get(json_array_get(json_object_get(outj, "steps"), si), "rows");
	if (!json_is_array(r) || json_array_size(r) != n_tokens)
		return 0;
	for (size_t t = 0; t < n_tokens; t++)
		for (size_t l = 0; l < layers; l++)
			for (size_t c = 0; c < cols; c++) {
				json_t *v = json_array_get(json_array_get(json_array_get(r, t), l), c);
				if (!json_is_integer(v) || json_integer_value(v) != rows[(t * layers + l) * cols + c])
					return 0;
			}
	return 1;
}

static void check_steps(void)
{
	/* a: 3 tokens then 1 (history carried); b: an image token first */
	put("steps.json", "[{\"requests\": [{\"req\": \"a\", \"token_ids\": [5, 7, 9]},"
			  "                {\"req\": \"b\", \"token_ids\": [1, 2], \"dead\": [1, 0]}]},"
			  " {\"requests\": [{\"req\": \"a\", \"token_ids\": [11]}]}]");
	char args[2048];
	snprintf(args, sizeof(args), "hash --preset v41 --steps '%s/steps.json' --json", dir);
	CHECK(run(args) == 0);
	json_error_t je;
	json_t *o = json_load_file(out_path, 0, &je);
	CHECK(json_is_object(o) && json_array_size(json_object_get(o, "steps")) == 2);
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_preset("v41", &l), 0);
	int32_t rows[5 * 48];
	int32_t tok[5] = {5, 7, 9, 1, 2};
	uint8_t dead[5] = {0, 0, 0, 1, 0};
	uint32_t st[3] = {0, 3, 5};
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = 5, .tokens = tok, .dead = dead, .n_requests = 2,
				     .starts = st};
	CHECK_RC(eht_engram_hash(l, &b, rows), 0);
	CHECK(same_rows(o, 0, rows, 5, 2, 24));
	int32_t t2 = 11, hist[3] = {9, 7, 5};
	uint32_t st2[2] = {0, 1};
	struct eht_engram_batch b2 = {.size = sizeof(b2), .n_tokens = 1, .tokens = &t2, .n_requests = 1, .starts = st2,
				      .history = hist};
	CHECK_RC(eht_engram_hash(l, &b2, rows), 0);
	CHECK(same_rows(o, 1, rows, 1, 2, 24));
	json_decref(o);
	/* the plain output names requests and layers */
	snprintf(args, sizeof(args), "hash --preset v41 --steps '%s/steps.json'", dir);
	CHECK(run(args) == 0);
	/* a config file equal to the preset gives the same rows; a token map maps ids first */
	put("config.json", "{\"architectures\": [\"x\"], \"text_config\": {\"engram_layer_ids\": [1, 14],"
			   "\"engram_num_embeddings\": [384006168, 384016682], \"engram_max_ngram_size\": 4,"
			   "\"engram_vocab_size\": 16000000, \"engram_n_heads\": 8, \"engram_head_dim\": 256,"
			   "\"engram_pad_token_id\": 2, \"engram_compressed_vocab_size\": 99092, \"vocab_size\": 129280}}");
	int32_t *map = malloc(129280 * 4);
	for (int i = 0; i < 129280; i++)
		map[i] = i % 99092;
	map[100000] = 5; /* token 100000 -> compressed 5 */
	char p[700];
	snprintf(p, sizeof(p), "%s/map.bin", dir);
	CHECK_RC(t_write_file(p, map, 129280 * 4), 0);
	free(map);
	put("steps2.json", "[{\"requests\": [{\"req\": \"a\", \"token_ids\": [100000, 7, 9]},"
			   "                {\"req\": \"b\", \"token_ids\": [1, 2], \"dead\": [1, 0]}]}]");
	snprintf(args, sizeof(args), "hash --config '%s/config.json' --token-map '%s/map.bin' --steps '%s/steps2.json' --json",
		 dir, dir, dir);
	CHECK(run(args) == 0);
	o = json_load_file(out_path, 0, &je);
	CHECK_RC(eht_engram_hash(l, &b, rows), 0);
	CHECK(o && same_rows(o, 0, rows, 5, 2, 24));
	json_decref(o);
	eht_engram_layout_free(l);

	/* usage errors: 2; --help: 0; bad input: 1 */
	CHECK(run("hash --help") == 0);
	CHECK(run("hash --preset v41") == 2);
	snprintf(args, sizeof(args), "hash --steps '%s/steps.json'", dir);
	CHECK(run(args) == 2);
	snprintf(args, sizeof(args), "hash --preset v41 --config x --steps '%s/steps.json'", dir);
	CHECK(run(args) == 2);
	CHECK(run("hash --preset v41 --steps") == 2);
	CHECK(run("hash --preset v41 --bogus") == 2);
	snprintf(args, sizeof(args), "hash --preset v41 --steps '%s/nope.json'", dir);
	CHECK(run(args) == 1);
	static const char *bad[] = {
	    "{}", "[1]", "[{\"requests\": [{\"req\": \"a\"}]}]",
	    "[{\"requests\": [{\"req\": \"a\", \"token_ids\": [-1]}]}]",
	    "[{\"requests\": [{\"req\": \"a\", \"token_ids\": [99092]}]}]",
	    "[{\"requests\": [{\"req\": \"a\", \"token_ids\": [1, 2], \"dead\": [0]}]}]",
	    "[{\"requests\": [{\"req\": \"a\", \"token_ids\": [1]}, {\"req\": \"a\", \"token_ids\": [2]}]}]",
	    "[{\"requests\": [{\"req\": \"\", \"token_ids\": [1]}]}]",
	    "[{\"requests\": [{\"req\": \"a\", \"token_ids\": [1], \"x\": 1}]}]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put("bad.json", bad[i]);
		snprintf(args, sizeof(args), "hash --preset v41 --steps '%s/bad.json'", dir);
		if (run(args) != 1) {
			fprintf(stderr, "steps %s: not rejected\n", bad[i]);
			t_failures++;
		}
	}
	put("empty.json", "[]");
	snprintf(args, sizeof(args), "hash --preset v41 --steps '%s/empty.json' --json", dir);
	CHECK(run(args) == 0);
	put("badcfg.json", "{\"text_config\": {\"engram_layer_ids\": [1]}}");
	snprintf(args, sizeof(args), "hash --config '%s/badcfg.json' --steps '%s/steps.json'", dir, dir);
	CHECK(run(args) == 1);
}

int main(void)
{
	cli = getenv("EHT_CLI");
	if (!cli)
		t_skip("EHT_CLI (the eht binary) not set");
	snprintf(dir, sizeof(dir), "%s", t_tmpdir("engram_cli"));
	snprintf(out_path, sizeof(out_path), "%s/out", dir);
	snprintf(err_path, sizeof(err_path), "%s/err", dir);
	check_steps();
	t_rmtree(dir);
	return t_done();
}
