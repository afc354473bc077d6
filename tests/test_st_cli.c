/* SPDX-License-Identifier: Apache-2.0 */
/* test_st_cli.c: `eht info` (table, --json, exit status and one stderr line on invalid input) and
 * `eht synth`, run through the built binary (EHT_CLI). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "testutil.h"

static const char *cli;
static char dir[256], out_path[512], err_path[512];
static char out[1 << 20], err[1 << 16];

static void slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
}

/* Runs `eht ARGS`; returns its exit status (-1 when it did not exit normally, e.g. a signal). */
static int run(const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s'", cli, args, out_path, err_path);
	int st = system(cmd);
	slurp(out_path, out, sizeof(out));
	slurp(err_path, err, sizeof(err));
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Invalid input: exit want, one line on stderr holding sub; stdout empty, or with --json one
 * {"error": ...} object holding sub. */
static void expect_invalid_(int line, const char *args, const char *sub, int want)
{
	int rc = run(args);
	int json_ok = 1;
	if (strstr(args, "--json")) {
		json_t *j = json_loads(out, 0, NULL);
		const char *e = json_string_value(json_object_get(j, "error"));
		json_ok = e && strstr(e, sub);
		json_decref(j);
	} else {
		json_ok = out[0] == '\0';
	}
	if (rc != want || !json_ok || lines(err) != 1 || !strstr(err, sub)) {
		fprintf(stderr, "line %d: eht %s: exit %d, stdout '%.80s', stderr '%s' (want exit %d, one line with '%s')\n",
			line, args, rc, out, err, want, sub);
		t_failures++;
	}
}
#define expect_invalid(args, sub) expect_invalid_(__LINE__, args, sub, 1)
#define expect_usage(args, sub) expect_invalid_(__LINE__, args, sub, 2)

static void fixtures(const char *fx)
{
	char args[1024];
	snprintf(args, sizeof(args), "info '%s/safetensors/engram_single.safetensors'", fx);
	CHECK(run(args) == 0);
	CHECK(strstr(out, "model.layers.14.engram.embedding.weight") && strstr(out, "F8_E4M3"));
	CHECK(strstr(out, "[4116,256]") && strstr(out, "1123824"));
	CHECK(strstr(out, "5 tensors, 2176952 bytes"));
	CHECK(lines(out) == 7 && err[0] == '\0');

	snprintf(args, sizeof(args), "info --json '%s/safetensors/engram_sharded'", fx);
	CHECK(run(args) == 0);
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	CHECK(j != NULL);
	CHECK(json_integer_value(json_object_get(j, "total_tensors")) == 5);
	CHECK(json_integer_value(json_object_get(j, "total_bytes")) == 2176952);
	CHECK(!strcmp(json_string_value(json_object_get(j, "kind")), "index"));
	CHECK(json_array_size(json_object_get(j, "files")) == 3);
	/* every row agrees with the library */
	snprintf(args, sizeof(args), "%s/safetensors/engram_sharded", fx);
	eht_ckpt *c = NULL;
	CHECK_RC(eht_ckpt_open(args, 0, &c), 0);
	json_t *ts = json_object_get(j, "tensors");
	CHECK(json_array_size(ts) == eht_ckpt_count(c));
	for (size_t i = 0; i < json_array_size(ts) && c; i++) {
		json_t *x = json_array_get(ts, i);
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		CHECK_RC(eht_ckpt_find(c, json_string_value(json_object_get(x, "name")), &t), 0);
		CHECK((uint64_t)json_integer_value(json_object_get(x, "offset")) == t.file_offset);
		CHECK((uint64_t)json_integer_value(json_object_get(x, "bytes")) == t.nbytes);
		CHECK((uint64_t)json_integer_value(json_object_get(x, "alignment")) == t.alignment);
		CHECK(!strcmp(json_string_value(json_object_get(x, "file")), t.path));
		CHECK(!strcmp(json_string_value(json_object_get(x, "dtype")), eht_dtype_name(t.dtype)));
		CHECK(json_array_size(json_object_get(x, "shape")) == t.ndim);
	}
	eht_ckpt_close(c);
	json_decref(j);
}

int main(void)
{
	cli = getenv("EHT_CLI");
	struct stat st;
	if (!cli || stat(cli, &st) != 0)
		t_skip("EHT_CLI (the eht binary) not set");
	snprintf(dir, sizeof(dir), "%s", t_tmpdir("st-cli"));
	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	const char *fx = getenv("EHT_FIXTURES");
	if (fx && stat(fx, &st) == 0)
		fixtures(fx);
	else
		fprintf(stderr, "note: no fixtures; fixture checks skipped\n");

	char args[1024], p[600];
	/* synth, then info over its output */
	snprintf(args, sizeof(args), "synth '%s/ck' --tables 3 --rows 100 --shards 2 --seed 5", dir);
	CHECK(run(args) == 0);
	snprintf(args, sizeof(args), "info '%s/ck' --json", dir);
	CHECK(run(args) == 0);
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	CHECK(j && json_integer_value(json_object_get(j, "total_tensors")) == 7);
	CHECK(j && json_integer_value(json_object_get(j, "total_bytes")) == 3 * 100 * (256 + 8) + 8192);
	json_decref(j);
	/* the CLI writes what the library writes */
	snprintf(p, sizeof(p), "%s/lib", dir);
	struct eht_synth_opts o = {.size = sizeof(o), .tables = 3, .rows = 100, .shards = 2, .seed = 5};
	CHECK_RC(eht_synth_checkpoint(p, &o), 0);
	snprintf(args, sizeof(args), "cmp -s '%s/ck/model-00001-of-00002.safetensors' '%s/lib/model-00001-of-00002.safetensors'",
		 dir, dir);
	CHECK(system(args) == 0);
	snprintf(args, sizeof(args), "synth '%s/ck2' --rows 0", dir);
	CHECK(run(args) == 2);
	snprintf(args, sizeof(args), "synth '%s/ck2' --tables x", dir);
	CHECK(run(args) == 2);
	CHECK(run("synth") == 2);
	snprintf(args, sizeof(args), "synth '%s/ck2' --bogus", dir);
	CHECK(run(args) == 2);
	snprintf(args, sizeof(args), "synth '%s/ck2' --rows", dir);
	CHECK(run(args) == 2);
	snprintf(args, sizeof(args), "synth '%s/ck2' --help", dir);
	CHECK(run(args) == 0 && strstr(out, "usage"));
	snprintf(args, sizeof(args), "test -e '%s/ck2'", dir);
	CHECK(system(args) != 0); /* --help did nothing */
	snprintf(args, sizeof(args), "synth '%s/ck2' --preset v41-small --rows 5", dir);
	CHECK(run(args) == 2);
	snprintf(args, sizeof(args), "synth '%s/ck2' --preset nope", dir);
	CHECK(run(args) == 1);
	/* the V4.1 structure with small primes: real names, dtypes, shapes */
	snprintf(args, sizeof(args), "synth '%s/small' --preset v41-small --shards 2", dir);
	CHECK(run(args) == 0);
	snprintf(args, sizeof(args), "info '%s/small' --json", dir);
	CHECK(run(args) == 0);
	{
		eht_engram_layout *l = NULL;
		struct eht_engram_info in = {.size = sizeof(in)};
		CHECK_RC(eht_engram_layout_preset("v41-small", &l), 0);
		eht_engram_layout_info(l, &in);
		eht_engram_layout_free(l);
		char want[128];
		snprintf(want, sizeof(want), "%llu", (unsigned long long)in.rows[1]);
		CHECK(strstr(out, "layers.14.engram.embed.scale") && strstr(out, "F8_E8M0") && strstr(out, want));
		CHECK(in.rows[0] != in.rows[1] && in.rows[0] > 24 * 500);
	}

	/* invalid input: exit 1 and one line naming the problem */
	snprintf(p, sizeof(p), "%s/trailing.safetensors", dir);
	const char img[] = "\x02\0\0\0\0\0\0\0{}xyz";
	CHECK_RC(t_write_file(p, img, sizeof(img) - 1), 0);
	snprintf(args, sizeof(args), "info '%s'", p);
	expect_invalid(args, "trailing bytes after data area");
	snprintf(p, sizeof(p), "%s/nl.safetensors", dir);
	const char hdr[] = "{\"a\\nb\":{\"dtype\":\"Q\",\"shape\":[],\"data_offsets\":[0,0]}}";
	char buf[256] = {(char)(sizeof(hdr) - 1)};
	memcpy(buf + 8, hdr, sizeof(hdr) - 1);
	CHECK_RC(t_write_file(p, buf, 8 + sizeof(hdr) - 1), 0);
	snprintf(args, sizeof(args), "info '%s' --json", p);
	expect_invalid(args, "unknown dtype");
	snprintf(args, sizeof(args), "info '%s/nothing-here'", dir);
	expect_invalid(args, "nothing-here");
	snprintf(args, sizeof(args), "info '%s/ck' --bogus", dir);
	expect_usage(args, "unknown option '--bogus'");
	expect_usage("info", "no PATH");
	snprintf(args, sizeof(args), "info '%s/ck' '%s/ck'", dir, dir);
	expect_usage(args, "one PATH");
	/* --help: usage on stdout, exit 0, nothing done (gc would remove nothing here anyway) */
	CHECK(run("info --help") == 0 && strstr(out, "usage: eht info") && err[0] == '\0');
	CHECK(run("regions gc --help") == 0 && strstr(out, "usage: eht regions") && !strstr(out, "removed"));
	CHECK(run("bench --help") == 0 && strstr(out, "usage: eht bench"));
	CHECK(run("status --help") == 0 && strstr(out, "usage: eht status"));
	expect_usage("regions list --bogus", "unknown option '--bogus'");
	expect_usage("probe --bogus", "unknown option '--bogus'");
	expect_usage("regions list --dir", "needs a value");
	expect_usage("worker k --check", "needs a value");
	expect_usage("worker k --check x --ids ten", "--ids takes");
	/* a worker whose key nobody serves is told at once, unless --wait */
	expect_invalid("worker eht-test-nobody --check x", "no server holds key 'eht-test-nobody'");
	expect_invalid("status eht-test-nobody --json", "no server holds key 'eht-test-nobody'");
	t_rmtree(dir);
	return t_done();
}
