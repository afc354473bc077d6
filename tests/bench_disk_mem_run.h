/* SPDX-License-Identifier: Apache-2.0 */
/* bench_disk_mem_run.h: runs `eht bench disk --mem-limit ... --json` for the tests and parses its report. */
#ifndef EHT_TEST_BENCH_DISK_MEM_RUN_H
#define EHT_TEST_BENCH_DISK_MEM_RUN_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Runs `eht ARGS` with stdout into *report (parsed JSON, NULL when not JSON) and stderr into err.
 * Returns the exit status. */
static int bench_run(const char *args, json_t **report, char *err, size_t elen)
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

static const char *rs(json_t *r, const char *k)
{
	const char *s = json_string_value(json_object_get(r, k));
	return s ? s : "";
}

static double rn(json_t *r, const char *k) { return json_number_value(json_object_get(r, k)); }

#endif
