/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_json.c: the CLI's JSON contract, command by command: with --json stdout holds one JSON
 * object (eht serve: JSON lines, one object per line), one shape per command (eht status with KEY
 * and without: {"servers": [...]}), and every error, usage errors included, is one line
 * {"error", "command", "exit"} on stdout with the exit status it names, besides one line on
 * stderr. */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static char out[1 << 20], err[1 << 16];

/* `eht bench step` runs Python, which cannot load a sanitizer build's libeht (the sanitizer's runtime
 * must come first in the process): its cases run in the normal build only. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PYTHON_CAN_LOAD_LIB 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PYTHON_CAN_LOAD_LIB 0
#endif
#endif
#ifndef PYTHON_CAN_LOAD_LIB
#define PYTHON_CAN_LOAD_LIB 1
#endif

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Runs `eht ARGS`; returns the parsed stdout (one JSON value, NULL when it is not) and the status. */
static json_t *run_json(const char *args, int *status)
{
	*status = t_cli_run(args, 120, out, sizeof(out), err, sizeof(err));
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	if (!j)
		fprintf(stderr, "eht %s: stdout is not one JSON value (%s): '%.200s'\n", args, je.text, out);
	return j;
}

/* An error with --json: exit want; stdout exactly one line, an object whose "error" holds sub,
 * "command" names the command and "exit" is the status; stderr one line holding sub. */
static void expect_error_(int line, const char *args, const char *cmd, const char *sub, int want)
{
	int st;
	json_t *j = run_json(args, &st);
	const char *e = json_string_value(json_object_get(j, "error"));
	const char *c = json_string_value(json_object_get(j, "command"));
	int ok = st == want && j && json_is_object(j) && e && strstr(e, sub) && c && !strcmp(c, cmd) &&
		 json_integer_value(json_object_get(j, "exit")) == want && lines(out) == 1 && lines(err) == 1 &&
		 strstr(err, sub);
	if (!ok) {
		fprintf(stderr, "line %d: eht %s: exit %d (want %d), stdout '%.300s', stderr '%.300s' (want '%s')\n", line,
			args, st, want, out, err, sub);
		t_failures++;
	}
	json_decref(j);
}
#define expect_error(args, cmd, sub) expect_error_(__LINE__, args, cmd, sub, 1)
#define expect_usage(args, cmd, sub) expect_error_(__LINE__, args, cmd, sub, 2)

static void check_synth(const char *tmp)
{
	char args[1024];
	snprintf(args, sizeof(args), "synth '%s/ck' --tables 2 --rows 300 --shards 2 --seed 7 --json", tmp);
	int st;
	json_t *j = run_json(args, &st);
	CHECK(st == 0 && json_is_object(j));
	json_t *tables = json_object_get(j, "tables");
	CHECK(json_array_size(tables) == 2);
	CHECK(json_integer_value(json_object_get(json_array_get(tables, 1), "rows")) == 300);
	CHECK(json_integer_value(json_object_get(json_array_get(tables, 1), "layer")) == 14);
	CHECK(!strcmp(json_string_value(json_object_get(json_array_get(tables, 0), "name")) ?: "",
		      "layers.1.engram.embed"));
	CHECK(json_integer_value(json_object_get(j, "files")) == 2 && json_integer_value(json_object_get(j, "seed")) == 7);
	CHECK(json_is_null(json_object_get(j, "preset")));
	json_decref(j);
	/* what it says it wrote is there */
	snprintf(args, sizeof(args), "info '%s/ck' --json", tmp);
	j = run_json(args, &st);
	CHECK(st == 0 && json_is_object(j));
	json_decref(j);

	expect_usage("synth --json", "eht synth", "no DIR");
	snprintf(args, sizeof(args), "synth '%s/x' --rows ten --json", tmp);
	expect_usage(args, "eht synth", "unsigned integers");
	snprintf(args, sizeof(args), "synth '%s/x' --bogus --json", tmp);
	expect_usage(args, "eht synth", "unknown option '--bogus'");
	snprintf(args, sizeof(args), "synth /proc/eht-no-such-dir/ck --json");
	expect_error(args, "eht synth", "/proc/eht-no-such-dir");
}

static void check_hotset(const char *tmp)
{
	char wl[1200], args[4096];
	snprintf(wl, sizeof(wl), "%s/../workloads/text_500k.compressed.u32", t_fixtures());
	if (access(wl, R_OK)) {
		fprintf(stderr, "no text workload: hotset build --json not checked\n");
		return;
	}
	snprintf(args, sizeof(args), "hotset build --workload text:%s --rows 100 --skip-tokens 1000 -o '%s/h.hot' --json",
		 wl, tmp);
	int st;
	json_t *j = run_json(args, &st);
	CHECK(st == 0 && json_is_object(j));
	CHECK(json_integer_value(json_object_get(j, "rows")) == 100 && json_integer_value(json_object_get(j, "layer")) == 1);
	CHECK(json_integer_value(json_array_get(json_object_get(j, "tokens"), 0)) == 1000);
	double cov = json_real_value(json_object_get(j, "coverage"));
	CHECK(cov > 0 && cov <= 1);
	json_decref(j);
	int64_t *rows = NULL;
	uint64_t n = 0;
	snprintf(args, sizeof(args), "%s/h.hot", tmp);
	CHECK_RC(eht_hotset_read(args, &rows, &n), 0);
	CHECK(n == 100);
	free(rows);

	snprintf(args, sizeof(args), "hotset build --workload text:%s --rows 0 -o x --json", wl);
	expect_usage(args, "eht hotset build", "--rows K > 0");
	expect_usage("hotset build --rows --json", "eht hotset build", "needs a count");
	expect_usage("hotset frobnicate --json", "eht hotset", "build");
	expect_error("hotset build --workload text:/nonexistent.u32 --rows 10 -o /dev/null --json", "eht hotset build",
		     "/nonexistent.u32");
}

static void check_hash(const char *tmp)
{
	char p[700], args[2048];
	snprintf(p, sizeof(p), "%s/steps.json", tmp);
	const char steps[] = "[{\"requests\": [{\"req\": \"a\", \"token_ids\": [5, 7, 9]}]}]";
	CHECK_RC(t_write_file(p, steps, sizeof(steps) - 1), 0);
	snprintf(args, sizeof(args), "hash --preset v41 --steps '%s' --json", p);
	int st;
	json_t *j = run_json(args, &st);
	CHECK(st == 0 && json_is_object(j));
	json_t *rows = json_object_get(json_array_get(json_object_get(j, "steps"), 0), "rows");
	CHECK(json_array_size(rows) == 3 && json_array_size(json_array_get(rows, 0)) == 2);
	json_decref(j);
	expect_usage("hash --preset v41 --json", "eht hash", "--steps is required");
	expect_usage("hash --steps x --json", "eht hash", "exactly one of --preset and --config");
	snprintf(args, sizeof(args), "hash --preset v41 --steps '%s/nope.json' --json", tmp);
	expect_error(args, "eht hash", "nope.json");
	snprintf(p, sizeof(p), "%s/bad.json", tmp);
	const char bad[] = "[{\"requests\": [{\"req\": \"a\", \"token_ids\": [-1]}]}]";
	CHECK_RC(t_write_file(p, bad, sizeof(bad) - 1), 0);
	snprintf(args, sizeof(args), "hash --preset v41 --steps '%s' --json", p);
	expect_error(args, "eht hash", "bad.json");
}

/* eht serve --json in the background: JSON lines on stdout; eht status in both shapes meanwhile. */
static void check_serve_status(const char *tmp)
{
	char key[64], ready[700], so[700], cmd[4096];
	snprintf(key, sizeof(key), "eht-test-json-%d", (int)getpid());
	snprintf(ready, sizeof(ready), "%s/ready", tmp);
	snprintf(so, sizeof(so), "%s/serve.out", tmp);
	pid_t pid = fork();
	if (pid == 0) {
		snprintf(cmd, sizeof(cmd), "%s/ck", tmp);
		int fd = open(so, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		execl(t_cli(), "eht", "serve", cmd, "--key", key, "--tier", "region", "--ready-file", ready,
		      "--json", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	struct timespec ts = {0, 20 * 1000 * 1000};
	for (int i = 0; i < 1500 && access(ready, F_OK) != 0; i++)
		nanosleep(&ts, NULL);
	CHECK(access(ready, F_OK) == 0);

	int st;
	snprintf(cmd, sizeof(cmd), "status %s --json", key);
	json_t *j = run_json(cmd, &st);
	json_t *servers = json_object_get(j, "servers");
	CHECK(st == 0 && json_is_array(servers) && json_array_size(servers) == 1);
	CHECK(!strcmp(json_string_value(json_object_get(json_array_get(servers, 0), "key")) ?: "", key));
	json_decref(j);
	/* Without KEY: the same shape, a list holding this server among any others of this user. */
	j = run_json("status --json", &st);
	servers = json_object_get(j, "servers");
	CHECK(st == 0 && json_is_array(servers));
	size_t i, found = 0;
	json_t *s;
	json_array_foreach(servers, i, s) found += !strcmp(json_string_value(json_object_get(s, "key")) ?: "", key);
	CHECK(found == 1);
	json_decref(j);
	snprintf(cmd, sizeof(cmd), "status eht-test-json-nobody-%d --json", (int)getpid());
	expect_error(cmd, "eht status", "no server holds key");
	expect_usage("status a b --json", "eht status", "one KEY at most");

	kill(pid, SIGTERM);
	int wst = 0;
	waitpid(pid, &wst, 0);
	CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	/* Two lines, each one object: ready, then stopped. */
	FILE *f = fopen(so, "r");
	char line[1 << 16];
	int n = 0, ok = 1;
	while (f && fgets(line, sizeof(line), f)) {
		json_t *e = json_loads(line, 0, NULL);
		const char *ev = json_string_value(json_object_get(e, "event"));
		ok &= e && ev && !strcmp(ev, n == 0 ? "ready" : "stopped");
		if (n == 0)
			ok &= json_is_object(json_object_get(e, "status"));
		json_decref(e);
		n++;
	}
	if (f)
		fclose(f);
	CHECK(ok && n == 2);

	/* Errors of eht serve --json are one line too. */
	snprintf(cmd, sizeof(cmd), "serve '%s/nothing-here' --key %s --json", tmp, key);
	expect_error(cmd, "eht serve", "nothing-here");
	expect_usage("serve --json", "eht serve", "no CHECKPOINT");
	expect_usage("serve x --tier bogus --json", "eht serve", "--tier takes");
}

/* stdout exactly one line holding one JSON object (a report, or an error object with "error" when
 * the exit status is not 0). */
static void expect_one_object_(int line, const char *args)
{
	int st = t_cli_run(args, 300, out, sizeof(out), err, sizeof(err));
	json_error_t je;
	json_t *j = json_loads(out, 0, &je);
	int ok = j && json_is_object(j) && lines(out) == 1 && (st == 0 || json_is_string(json_object_get(j, "error")));
	if (!ok) {
		fprintf(stderr, "line %d: eht %s: exit %d, stdout %d line(s) '%.300s' (want one JSON object), stderr '%.300s'\n",
			line, args, st, lines(out), out, err);
		t_failures++;
	}
	json_decref(j);
}
#define expect_one_object(args) expect_one_object_(__LINE__, args)

/* The gaps of round four: each of these printed two JSON lines, plain text or nothing. */
static void check_gaps(void)
{
	expect_usage("serve x --cpu-budget 1e99 --json", "eht serve", "--cpu-budget takes an integer");
	expect_usage("serve x --workers 99999999999999999999 --json", "eht serve", "--workers takes an integer");
	expect_usage("serve x --workers 0 --json", "eht serve", "--workers takes a count >= 1");
	expect_usage("bench lookup --bogus --json", "eht bench lookup", "unknown option '--bogus'");
	expect_usage("bench lookup --ids x --json", "eht bench lookup", "--ids needs counts");
	expect_usage("bench lookup --tier nowhere --json", "eht bench lookup", "--tier is one of");
	expect_usage("bench lookup --strategies fastest --json", "eht bench lookup", "fastest");
	expect_usage("bench lookup --gap x --json", "eht bench lookup", "--gap needs milliseconds");
	expect_usage("bench lookup --gap 10001 --json", "eht bench lookup", "--gap needs milliseconds in 0..10000");
	expect_usage("bench region --bogus --json", "eht bench region", "unknown option '--bogus'");
	expect_usage("bench region --sizes x --json", "eht bench region", "--sizes takes a number");
	expect_usage("bench region --sizes -1 --json", "eht bench region", "--sizes takes positive GiB");
	expect_usage("bench disk --steps 2 --json", "eht bench disk", "--steps 2: 5..100000");
	expect_usage("bench disk --mem-limit 1e12 --json", "eht bench disk", "above 2^30 GiB");
	expect_usage("bench step --bogus --json", "eht bench step", "unrecognized arguments: --bogus");
	if (PYTHON_CAN_LOAD_LIB)
		expect_usage("bench step --variants fast-side --json", "eht bench step", "strategy 'fast'");
	expect_usage("frob --json", "eht", "unknown command 'frob'");
	expect_usage("--json", "eht", "no command given");
	expect_usage("--frob --json", "eht", "unknown option '--frob'");
	expect_usage("bench --json", "eht bench", "no subcommand");
	expect_usage("regions --json", "eht regions", "no subcommand");
	expect_usage("regions purge --json", "eht regions", "unknown subcommand 'purge'");
	expect_usage("version x --json", "eht version", "takes no arguments");
	/* One object: regions list too, as every report ({"regions": [...]}). */
	int st;
	json_t *j = run_json("regions list --json", &st);
	CHECK(st == 0 && json_is_object(j) && json_is_array(json_object_get(j, "regions")) && lines(out) == 1);
	json_decref(j);
	/* -V is --version */
	char v[64];
	snprintf(v, sizeof(v), "eht %s\n", eht_version());
	CHECK(t_cli_run("-V", 60, out, sizeof(out), err, sizeof(err)) == 0 && !strcmp(out, v));
	CHECK(t_cli_run("--version", 60, out, sizeof(out), err, sizeof(err)) == 0 && !strcmp(out, v));
	CHECK(t_cli_run("version", 60, out, sizeof(out), err, sizeof(err)) == 0 && !strcmp(out, v));
}

/* The arguments of a quick run of each documented command (NULL: only its error path is run). */
static const char *quick_args(const char *path, const char *tmp, char *buf, size_t len)
{
	static const struct {
		const char *path, *fmt;
	} quick[] = {
		{"info", "info '%s/ck' --json"},
		{"synth", "synth '%s/ck-quick' --tables 1 --rows 10 --json"},
		{"probe", "probe --json"},
		{"status", "status --json"},
		{"worker", "worker eht-test-nobody --check '%s/ck' --json"},
		{"regions list", "regions list --json"},
		{"regions gc", "regions gc --dry-run --json"},
		{"hash", "hash --preset v41 --steps '%s/steps.json' --json"},
		{"hotset build", "hotset build --workload text:'%s/none.u32' --rows 1 -o '%s/x.hot' --json"},
		{"bench lookup", "bench lookup --table-gib 0.01 --ids 256 --reps 1 --cpu --strategies host --json"},
		{"bench hash", "bench hash --reps 1 --prefill 16 --decode 2 --no-gpu --json"},
		{"bench share", "bench share --sizes 0.01 --json"},
		{"bench region", "bench region --sizes 0.01 --runs 1 --json"},
		{"bench disk", "bench disk --file-gib 0.01 --dir '%s' --json"},
		{"bench step", "bench step --dry-run --json"},
	};
	for (size_t i = 0; i < sizeof(quick) / sizeof(quick[0]); i++)
		if (!strcmp(quick[i].path, path)) {
			snprintf(buf, len, quick[i].fmt, tmp, tmp);
			return buf;
		}
	return NULL;
}

/* docs/CLI.md's JSON contract, command by command: every command its table documents with --json
 * prints one object, its report or its error, never two lines and never plain text (eht serve:
 * JSON lines, checked above); and every command of the CLI that takes --json is documented so. */
static void check_documented(const char *tmp)
{
	const char *src = getenv("EHT_SOURCE_DIR");
	char path[1024], line[8192], seen[64][256];
	int nseen = 0;
	snprintf(path, sizeof(path), "%s/docs/CLI.md", src ? src : "..");
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "| `eht ", 7))
			continue;
		char *end = strstr(line + 7, "` |");
		if (!end)
			continue;
		*end = 0;
		if (!strstr(line + 7, "--json"))
			continue;
		/* the path: the lowercase words after "eht" ("regions list\|gc": both) */
		char words[2][48] = {"", ""};
		int nw = 0;
		for (char *w = strtok(line + 7, " "); w && nw < 2; w = strtok(NULL, " ")) {
			if (strspn(w, "abcdefghijklmnopqrstuvwxyz\\|") != strlen(w))
				break;
			snprintf(words[nw++], sizeof(words[0]), "%s", w);
		}
		CHECK(nw >= 1);
		char alts[4][48];
		int nalt = 0;
		for (char *a = strtok(words[nw - 1], "\\|"); a && nalt < 4; a = strtok(NULL, "\\|"))
			snprintf(alts[nalt++], sizeof(alts[0]), "%s", a);
		for (int k = 0; k < nalt; k++) {
			char cmd[256], args[2048], buf[2048];
			if (nw == 2)
				snprintf(cmd, sizeof(cmd), "%s %s", words[0], alts[k]);
			else
				snprintf(cmd, sizeof(cmd), "%s", alts[k]);
			int dup = 0;
			for (int i = 0; i < nseen; i++)
				dup |= !strcmp(seen[i], cmd);
			if (dup || nseen == 64)
				continue;
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", cmd);
			char full[300];
			snprintf(full, sizeof(full), "eht %s", cmd);
			snprintf(args, sizeof(args), "%s --json --eht-no-such-option", cmd);
			expect_usage(args, full, "--eht-no-such-option");
			if (!strcmp(cmd, "serve"))
				continue; /* JSON lines: check_serve_status */
			if (!PYTHON_CAN_LOAD_LIB && !strcmp(cmd, "bench step"))
				continue;
			const char *q = quick_args(cmd, tmp, buf, sizeof(buf));
			if (!q) {
				fprintf(stderr, "docs/CLI.md documents eht %s --json: give it a quick run in quick_args\n", cmd);
				t_failures++;
				continue;
			}
			expect_one_object(q);
		}
	}
	if (f)
		fclose(f);
	/* the other way: every command of the table that takes --json is documented with it */
	char table[1 << 14];
	CHECK(t_cli_run("--completion-table", 60, table, sizeof(table), NULL, 0) == 0);
	for (char *row = strtok(table, "\n"); row; row = strtok(NULL, "\n")) {
		char *tab = strchr(row, '\t');
		if (!tab || !strstr(tab, "--json"))
			continue;
		*tab = 0;
		int found = 0;
		for (int i = 0; i < nseen; i++)
			found |= !strcmp(seen[i], row);
		if (!found) {
			fprintf(stderr, "eht %s takes --json; docs/CLI.md's table does not document it so\n", row);
			t_failures++;
		}
	}
}

/* eht bench lookup --gap: the idle before each call is slept (the run takes at least its 2 untimed
 * and 3 timed calls' gaps, and the CPU limit's 5 batches twice) and left out of the call's time; the
 * report says how long it was, and the CPU limit after it with its threads asleep and spinning. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check_bench_gap(void)
{
	int st;
	double t0 = now_s();
	json_t *j = run_json("bench lookup --table-gib 0.02 --ids 512 --reps 3 --gap 150 --cpu --strategies host --json", &st);
	double wall = now_s() - t0;
	CHECK(st == 0 && j);
	CHECK(json_real_value(json_object_get(j, "gap_ms")) == 150.0);
	CHECK(wall >= 15 * 0.15);
	json_t *h = json_object_get(json_array_get(json_object_get(j, "results"), 0), "host_ids");
	double med = json_real_value(json_object_get(h, "median_ms"));
	CHECK(med > 0 && med < 150.0);
	json_t *lim = json_array_get(json_object_get(j, "cpu_limit"), 0);
	double asleep = json_real_value(json_object_get(lim, "gap_asleep_ms"));
	double spinning = json_real_value(json_object_get(lim, "gap_spinning_ms"));
	CHECK(asleep > 0 && asleep < 150.0 && spinning > 0 && spinning < 150.0);
	json_decref(j);
}

/* eht bench lookup's rows of the engine's own call (--strategies layer): after the strategies', per
 * shape, the inline way ("layer") then the background one ("layer+bg"), in the strategies' shape
 * and naming their way; without a GPU on host ids (an id count not a multiple of 24 included: its
 * last token padded with dead ids, which the bench checks the layer counted). Not on by default
 * without a GPU, nor is the baseline, whose "skipped" says why. */
static void check_bench_layer(void)
{
	int st;
	json_t *j = run_json("bench lookup --table-gib 0.02 --ids 480,100 --reps 2 --cpu --strategies host,layer --json", &st);
	json_t *res = json_object_get(j, "results");
	CHECK(st == 0 && json_array_size(res) == 6);
	static const char *names[] = {"host", "host", "layer", "layer", "layer+bg", "layer+bg"};
	for (size_t i = 0; i < json_array_size(res) && i < 6; i++) {
		json_t *r = json_array_get(res, i);
		const char *s = json_string_value(json_object_get(r, "strategy"));
		CHECK(s && !strcmp(s, names[i]));
		CHECK(json_integer_value(json_object_get(r, "ids")) == (i % 2 ? 100 : 480));
		json_t *h = json_object_get(r, "host_ids");
		/* the calling thread's own CPU in the call: a CPU-only call gathers on it, so above 0 */
		if (!json_is_object(h) || json_real_value(json_object_get(h, "median_ms")) <= 0 ||
		    !json_is_real(json_object_get(h, "cpu_ms_per_call")) ||
		    json_real_value(json_object_get(h, "calling_thread_cpu_us")) <= 0 ||
		    !json_is_real(json_object_get(h, "calling_thread_preempted_per_call")) ||
		    json_real_value(json_object_get(h, "calling_thread_preempted_per_call")) < 0) {
			fprintf(stderr, "bench lookup row %zu (%s): host_ids %s\n", i, s ? s : "?",
				json_is_object(h) ? json_string_value(json_object_get(h, "error")) : "missing");
			t_failures++;
		}
		json_t *bg = json_object_get(r, "background");
		CHECK(i < 2 ? bg == NULL : json_is_boolean(bg) && json_is_true(bg) == (i >= 4));
	}
	json_decref(j);
	j = run_json("bench lookup --table-gib 0.02 --ids 240 --reps 1 --cpu --json", &st);
	res = json_object_get(j, "results");
	CHECK(st == 0 && json_array_size(res) >= 1);
	for (size_t i = 0; i < json_array_size(res); i++)
		CHECK(strncmp(json_string_value(json_object_get(json_array_get(res, i), "strategy")) ?: "", "layer", 5));
	/* nor vLLM's kernel (the baseline): the report says why not (test_bench_vllm.py: the helper) */
	const char *why = json_string_value(json_object_get(json_object_get(j, "baseline"), "skipped"));
	CHECK(why && strstr(why, "no GPU"));
	json_decref(j);
	j = run_json("bench lookup --table-gib 0.02 --ids 240 --reps 1 --cpu --strategies host --no-vllm --json", &st);
	why = json_string_value(json_object_get(json_object_get(j, "baseline"), "skipped"));
	CHECK(st == 0 && why && !strcmp(why, "--no-vllm"));
	json_decref(j);
}

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	t_setenv("EHT_NO_CUDA", "1");
	t_setenv("EHT_LOG", NULL); /* the error's one line on stderr is at the default level's */
	char *tmp = t_tmpdir("cli-json");
	check_synth(tmp);
	check_hotset(tmp);
	check_hash(tmp);
	check_serve_status(tmp);
	check_gaps();
	check_documented(tmp);
	/* eht bench hash: the bench envelope; its errors and the dispatcher's as JSON. */
	int st;
	json_t *j = run_json("bench hash --reps 2 --prefill 64 --decode 4 --no-gpu --json", &st);
	CHECK(st == 0 && !strcmp(json_string_value(json_object_get(j, "bench")) ?: "", "hash"));
	CHECK(json_is_string(json_object_get(j, "eht_version")) && json_is_string(json_object_get(j, "time_utc")));
	CHECK(json_is_null(json_object_get(json_object_get(j, "prefill"), "gpu_s")));
	CHECK(json_real_value(json_object_get(json_object_get(j, "decode"), "cpu_s")) > 0);
	json_decref(j);
	/* eht bench lookup: the CPU's own gather limit beside the engines, per shape, as wide as their pool. */
	j = run_json("bench lookup --table-gib 0.02 --ids 512,2048 --reps 3 --cpu --strategies host --json", &st);
	json_t *lim = json_object_get(j, "cpu_limit");
	CHECK(st == 0 && json_array_size(lim) == 2);
	for (size_t i = 0; i < json_array_size(lim); i++) {
		json_t *e = json_array_get(lim, i);
		CHECK(json_integer_value(json_object_get(e, "ids")) == (i ? 2048 : 512));
		CHECK(json_integer_value(json_object_get(e, "threads")) >= 1 &&
		      json_integer_value(json_object_get(e, "piece_rows")) >= 1);
		CHECK(json_real_value(json_object_get(e, "local_ms")) > 0 &&
		      json_real_value(json_object_get(e, "staging_ms")) > 0);
		/* the pass over the rows the engines read, beside those over rows nobody read */
		CHECK(json_real_value(json_object_get(e, "staging_engines_rows_ms")) > 0);
		CHECK(!json_object_get(e, "gap_asleep_ms")); /* no --gap: not run */
	}
	json_decref(j);
	check_bench_gap();
	check_bench_layer();
	expect_usage("bench hash --reps x --json", "eht bench hash", "bad value 'x' for --reps");
	expect_usage("bench hash --bogus --json", "eht bench hash", "unknown option");
	expect_usage("bench frob --json", "eht bench", "unknown subcommand 'frob'");
	/* A command that has no --json still answers a --json command line in JSON. */
	expect_usage("regions list --json --bogus", "eht regions list", "unknown option");
	t_rmtree(tmp);
	return t_done();
}
