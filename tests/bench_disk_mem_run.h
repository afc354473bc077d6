/* SPDX-License-Identifier: Apache-2.0 */
/* bench_disk_mem_run.h: runs `eht bench disk --mem-limit ... --json` for the tests and parses its report. */
#ifndef EHT_TEST_BENCH_DISK_MEM_RUN_H
#define EHT_TEST_BENCH_DISK_MEM_RUN_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Runs `eht ARGS` with stdout into *report (parsed JSON, NULL when not JSON) and stderr into err.
 * Returns the exit status. */
static int bench_run(const char *tmp, const char *args, json_t **report, char *err, size_t elen)
{
	char cmd[8192], o[1200], e[1200];
	snprintf(o, sizeof(o), "%s/out.json", tmp);
	snprintf(e, sizeof(e), "%s/err.txt", tmp);
	snprintf(cmd, sizeof(cmd), "timeout 300 '%s' %s >'%s' 2>'%s'", getenv("EHT_CLI"), args, o, e);
	int st = system(cmd);
	*report = json_load_file(o, 0, NULL);
	FILE *f = fopen(e, "r");
	size_t n = f ? fread(err, 1, elen - 1, f) : 0;
	err[n] = '\0';
	if (f)
		fclose(f);
	remove(o);
	remove(e);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "eht %s: exit %d\n%s\n", args, WIFEXITED(st) ? WEXITSTATUS(st) : -1, err);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static const char *rs(json_t *r, const char *k)
{
	const char *s = json_string_value(json_object_get(r, k));
	return s ? s : "";
}

static double rn(json_t *r, const char *k) { return json_number_value(json_object_get(r, k)); }

#endif
