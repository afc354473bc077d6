/* SPDX-License-Identifier: Apache-2.0 */
/* bench_lookup_vllm.c: `eht bench lookup`'s baseline: vLLM's own lookup kernel (our Triton code of it,
 * eht.vllm_baseline), which needs torch and Triton, so a Python helper times it: python3 -m
 * eht.bench_vllm, found as `eht bench step` finds eht.bench_step (this checkout's python/ and libeht
 * first; EHT_PYTHON names another interpreter). It prints one JSON object; this file checks its shape
 * and turns it into the bench's rows. Whatever goes wrong (no Python, no torch, a crash, garbage) is
 * one line of why, never the bench's failure. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_lookup.h"

extern char **environ;

#define REPORT_MAX (4u << 20) /* more than any honest report: the rest is read and dropped */

int lk_vllm_ids_file(char *why, size_t wl)
{
	/* no close-on-exec: the helper inherits it and reads /proc/self/fd/N */
	int fd = memfd_create("eht-bench-ids", 0);
	if (fd < 0)
		snprintf(why, wl, "no file for the steps' ids (memfd_create: %s)", strerror(errno));
	return fd;
}

/* environ with PYTHONPATH led by this checkout's python/ and EHT_LIB at this build's libeht where
 * they exist (an installed eht has both where python3 and eht._libfind look). NULL: out of memory. */
static char **helper_env(void)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 3, sizeof(*env));
	if (!env)
		return NULL;
	size_t k = 0;
	const char *pypath = NULL, *lib = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "PYTHONPATH=", 11))
			pypath = environ[i] + 11;
		else
			env[k++] = environ[i];
		if (!strncmp(environ[i], "EHT_LIB=", 8))
			lib = environ[i] + 8;
	}
	char *pp = NULL;
#ifdef EHT_PYTHON_DIR
	if (access(EHT_PYTHON_DIR "/eht/bench_vllm.py", R_OK) == 0) {
		size_t len = strlen(EHT_PYTHON_DIR) + (pypath ? strlen(pypath) : 0) + 16;
		if ((pp = malloc(len)))
			snprintf(pp, len, "PYTHONPATH=%s%s%s", EHT_PYTHON_DIR, pypath && *pypath ? ":" : "",
				 pypath ? pypath : "");
	}
#endif
	if (!pp && pypath && !(pp = strdup(pypath - 11)))
		goto oom;
	if (pp)
		env[k++] = pp;
#ifdef EHT_BUILD_LIB
	if (!lib && access(EHT_BUILD_LIB, R_OK) == 0)
		env[k++] = "EHT_LIB=" EHT_BUILD_LIB;
#endif
	(void)lib;
	return env;
oom:
	free(env);
	return NULL;
}

static void env_free(char **env)
{
	if (!env)
		return;
	for (size_t i = 0; env[i]; i++)
		if (!strncmp(env[i], "PYTHONPATH=", 11))
			free(env[i]);
	free(env);
}

/* The helper's argv (its numbers in bufs). */
static void helper_args(const struct lk_vllm_req *q, const char *py, char *bufs[6], size_t bl, char **argv)
{
	int a = 0, at = 0;
	argv[a++] = (char *)py;
	argv[a++] = "-m";
	argv[a++] = "eht.bench_vllm";
	snprintf(bufs[0], bl, "%.17g", q->gib);
	snprintf(bufs[1], bl, "%llu", (unsigned long long)q->rows);
	for (int k = 0; k < q->nshapes; k++)
		at += snprintf(bufs[2] + at, bl - (size_t)at, "%s%zu", k ? "," : "", q->shapes[k]);
	snprintf(bufs[3], bl, "%d", q->reps);
	snprintf(bufs[4], bl, "%s%s%s", q->want_gpu ? "gpu_ids" : "", q->want_gpu && q->want_graph ? "," : "",
		 q->want_graph ? "graph" : "");
	snprintf(bufs[5], bl, "%d", q->dev);
	const char *opt[] = {"--table-gib", "--rows", "--ids", "--reps", "--modes", "--device"};
	for (int i = 0; i < 6; i++) {
		argv[a++] = (char *)opt[i];
		argv[a++] = bufs[i];
	}
	argv[a] = NULL;
}

/* opt and its value after argv's last argument (argv has room for them and the NULL). */
static void append_arg(char **argv, const char *opt, char *val)
{
	int a = 0;
	while (argv[a])
		a++;
	argv[a++] = (char *)opt;
	argv[a++] = val;
	argv[a] = NULL;
}

/* Runs the helper; its stdout into *buf (NUL-terminated), its wait status into *status. 0, or -1 with why. */
static int helper_spawn(const struct lk_vllm_req *q, char **buf, int *status, char *why, size_t wl)
{
	const char *py = getenv("EHT_PYTHON");
	if (!py || !*py)
		py = "python3";
	char nums[6][64], *bufs[6] = {nums[0], nums[1], nums[2], nums[3], nums[4], nums[5]}, *argv[24];
	helper_args(q, py, bufs, sizeof(nums[0]), argv);
	char idsarg[64], gaparg[64];
	if (q->gap_ms > 0) { /* (only then: the option is the newest the helper takes) */
		snprintf(gaparg, sizeof(gaparg), "%.17g", q->gap_ms);
		append_arg(argv, "--gap-ms", gaparg);
	}
	if (q->ids_fd >= 0) {
		snprintf(idsarg, sizeof(idsarg), "/proc/self/fd/%d", q->ids_fd);
		append_arg(argv, "--ids-file", idsarg);
	}
	int p[2] = {-1, -1}, rc = -1;
	char **env = helper_env();
	posix_spawn_file_actions_t fa;
	int fa_ok = 0;
	if (!env) {
		snprintf(why, wl, "out of memory");
		goto out;
	}
	if (pipe2(p, O_CLOEXEC) || posix_spawn_file_actions_init(&fa)) {
		snprintf(why, wl, "no pipe for the helper's report (%s)", strerror(errno));
		goto out;
	}
	fa_ok = 1;
	pid_t pid;
	int e = posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	if (!e)
		e = posix_spawnp(&pid, py, &fa, NULL, argv, env);
	if (e) {
		snprintf(why, wl, "cannot run %s (%s); the baseline needs Python 3 with torch and Triton (EHT_PYTHON names "
			 "another)", py, strerror(e));
		goto out;
	}
	close(p[1]);
	p[1] = -1;
	size_t len = 0, cap = 1 << 16;
	char *b = malloc(cap + 1);
	for (;;) {
		char chunk[1 << 14];
		ssize_t r = read(p[0], chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (b && len + (size_t)r > cap && cap < REPORT_MAX) {
			size_t ncap = 2 * cap > len + (size_t)r ? 2 * cap : len + (size_t)r;
			char *nb = realloc(b, ncap + 1);
			if (nb) {
				b = nb;
				cap = ncap;
			}
		}
		if (b && len + (size_t)r <= cap) { /* else dropped: the report will not parse, and says so */
			memcpy(b + len, chunk, (size_t)r);
			len += (size_t)r;
		}
	}
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	if (!b) {
		snprintf(why, wl, "out of memory for the helper's report");
		goto out;
	}
	b[len] = 0;
	*buf = b;
	rc = 0;
out:
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	env_free(env);
	return rc;
}

/* A mode's figures of the helper's row into r; 0, or -1 with what is wrong in bad. */
static int take_mode(json_t *jm, struct result *r, int m, char *bad, size_t bl)
{
	const char *err = json_string_value(json_object_get(jm, "error"));
	if (json_is_object(jm) && err) {
		snprintf(r->err[m], sizeof(r->err[m]), "%s", err);
		return 0;
	}
	json_t *med = json_object_get(jm, "median_ms"), *p90 = json_object_get(jm, "p90_ms"),
	       *cpu = json_object_get(jm, "cpu_ms_per_call");
	if (!json_is_object(jm) || !json_is_number(med) || !json_is_number(p90) || !json_is_number(cpu) ||
	    json_number_value(med) <= 0 || json_number_value(p90) < json_number_value(med) || json_number_value(cpu) < 0) {
		snprintf(bad, bl, "its %s is not {median_ms > 0, p90_ms >= median_ms, cpu_ms_per_call >= 0} nor {error}",
			 lk_mode_names[m]);
		return -1;
	}
	r->med_ms[m] = json_number_value(med);
	r->p90_ms[m] = json_number_value(p90);
	r->cpu[m].all_ms = json_number_value(cpu);
	r->ok[m] = 1;
	return 0;
}

/* The row of (n, background) in the helper's results into r; 0, or -1 with why in bad. */
static int take_row(const struct lk_vllm_req *q, json_t *res, size_t n, int bg, struct result *r, char *bad, size_t bl)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->label, sizeof(r->label), "%s", bg ? "vllm+bg" : "vllm");
	r->background = bg;
	r->n = n;
	r->hit = -1;
	r->na[ON_HOST] = 1; /* vLLM's kernel reads ids in GPU memory */
	json_t *row = NULL, *v;
	size_t i;
	json_array_foreach(res, i, v) {
		json_t *jb = json_object_get(v, "background");
		if (json_integer_value(json_object_get(v, "ids")) == (json_int_t)n && json_is_boolean(jb) &&
		    json_is_true(jb) == bg) {
			if (row) {
				snprintf(bad, bl, "two rows of %zu ids, background %s", n, bg ? "true" : "false");
				return -1;
			}
			row = v;
		}
	}
	if (!row) {
		snprintf(bad, bl, "no row of %zu ids, background %s", n, bg ? "true" : "false");
		return -1;
	}
	const int want[NMODES] = {0, q->want_gpu, q->want_graph};
	for (int m = 0; m < NMODES; m++)
		if (want[m] && take_mode(json_object_get(row, lk_mode_names[m]), r, m, bad, bl))
			return -1;
	return 0;
}

/* The helper's report (one JSON object) into rows and info; 0, or -1 with why. */
static int take_report(const struct lk_vllm_req *q, const char *text, int status, struct result *rows, json_t **info,
		       char *why, size_t wl)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	const char *s;
	char bad[200] = "";
	if (!json_is_object(j)) {
		if (WIFSIGNALED(status))
			snprintf(why, wl, "the helper was killed by signal %d, with no report", WTERMSIG(status));
		else if (WEXITSTATUS(status))
			snprintf(why, wl, "the helper exited %d with no report", WEXITSTATUS(status));
		else
			snprintf(why, wl, "the helper's output is not one JSON object (%s)", je.text);
		json_decref(j);
		return -1;
	}
	if ((s = json_string_value(json_object_get(j, "skipped"))))
		snprintf(why, wl, "%s", s);
	else if ((s = json_string_value(json_object_get(j, "error"))))
		snprintf(why, wl, "the helper failed: %s", s);
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		snprintf(why, wl, "the helper ended with status 0x%x", status);
	else if (!json_is_array(json_object_get(j, "results")))
		snprintf(why, wl, "the helper's report has no results");
	if (*why) {
		json_decref(j);
		return -1;
	}
	json_t *res = json_object_get(j, "results");
	for (int k = 0; k < q->nshapes && !*bad; k++)
		for (int bg = 0; bg < 2 && !*bad; bg++)
			(void)take_row(q, res, q->shapes[k], bg, &rows[2 * k + bg], bad, sizeof(bad));
	if (*bad) {
		snprintf(why, wl, "the helper's report is not what this bench reads: %s", bad);
		json_decref(j);
		return -1;
	}
	json_object_del(j, "results"); /* the bench writes its own rows, in its own shape */
	*info = j;
	return 0;
}

int lk_vllm_run(const struct lk_vllm_req *q, struct result *rows, json_t **info, char *why, size_t wl)
{
	*info = NULL;
	why[0] = 0;
	if (!q->want_gpu && !q->want_graph) {
		snprintf(why, wl, "it takes ids in GPU memory: --ids-on gpu|both, or --graph");
		return -1;
	}
	char *text = NULL;
	int status = 0;
	fflush(NULL); /* the helper's stderr lines after ours */
	if (helper_spawn(q, &text, &status, why, wl))
		return -1;
	int rc = take_report(q, text, status, rows, info, why, wl);
	free(text);
	return rc;
}
