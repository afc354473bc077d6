/* SPDX-License-Identifier: Apache-2.0 */
/* bench_disk_mem_run.h: runs `eht bench disk --mem-limit ... --json` for the tests and parses its report. */
#ifndef EHT_TEST_BENCH_DISK_MEM_RUN_H
#define EHT_TEST_BENCH_DISK_MEM_RUN_H

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

/* Runs `eht ARGS` with stdout into *report (parsed JSON, NULL when not JSON) and stderr into err.
 * Returns the exit status. */
static inline int bench_run(const char *args, json_t **report, char *err, size_t elen)
{
	size_t olen = 1 << 20;
	char *out = malloc(olen);
	if (!out) {
		*report = NULL;
		return 128;
	}
	int rc = t_cli_run(args, 300, out, olen, err, elen);
	*report = json_loads(out, 0, NULL);
	free(out);
	if (rc)
		fprintf(stderr, "eht %s: exit %d\n%s\n", args, rc, err);
	return rc;
}

static inline const char *rs(json_t *r, const char *k)
{
	const char *s = json_string_value(json_object_get(r, k));
	return s ? s : "";
}

static inline double rn(json_t *r, const char *k) { return json_number_value(json_object_get(r, k)); }

/* Starts `eht ARGS` (words split on spaces) in the background, stdout to /dev/null and stderr into
 * errpath. Returns its pid, or -1. */
static inline pid_t bench_spawn(const char *args, const char *errpath)
{
	const char *cli = t_cli();
	char buf[4096], *argv[64];
	int n = 0;
	snprintf(buf, sizeof(buf), "%s", args);
	argv[n++] = (char *)cli;
	for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && n < 63; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		int out = open("/dev/null", O_WRONLY), err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		execv(cli, argv);
		_exit(127);
	}
	return pid;
}

/* Waits up to seconds for path to exist (text NULL) or to contain text; the file's text into buf
 * (may be NULL). 1 when it did, 0 on time out. */
static inline int bench_wait_for(const char *path, const char *text, double seconds, char *buf, size_t len)
{
	char tmp[16384];
	if (!buf)
		buf = tmp, len = sizeof(tmp);
	struct timespec nap = {0, 2000000};
	for (double waited = 0; waited < seconds; waited += 0.002) {
		FILE *f = fopen(path, "r");
		if (f) {
			size_t n = fread(buf, 1, len - 1, f);
			buf[n] = '\0';
			fclose(f);
			if (!text || strstr(buf, text))
				return 1;
		}
		nanosleep(&nap, NULL);
	}
	return 0;
}

#endif
