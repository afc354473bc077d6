/* SPDX-License-Identifier: Apache-2.0 */
/* test_hotset_cli.c: `eht hotset build` on the real-text workload writes a file the library reads back
 * (K distinct rows inside the layer's table, most frequent first, different for a different layer),
 * refuses bad arguments with exit 2, and `eht bench lookup --hotset` learns one and reports it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "table/hotset.h"
#include "testutil.h"

/* Runs the CLI with args; returns its exit status and its stdout and stderr together in out. */
static int run(const char *args, char *out, size_t len) { return t_cli_run(args, 120, out, len, out, len); }

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	t_setenv("EHT_NO_CUDA", "1");
	char wl[1200], args[4096], out[8192], f1[700], f2[700];
	snprintf(wl, sizeof(wl), "%s/../workloads/text_500k.compressed.u32", t_fixtures());
	if (access(wl, R_OK))
		t_skip("no text workload");
	char *tmp = t_tmpdir("hotset-cli");
	snprintf(f1, sizeof(f1), "%s/l1.hot", tmp);
	snprintf(f2, sizeof(f2), "%s/l14.hot", tmp);

	snprintf(args, sizeof(args), "hotset build --workload text:%s --rows 5000 --skip-tokens 250000 -o %s", wl, f1);
	CHECK_RC(run(args, out, sizeof(out)), 0);
	CHECK(strstr(out, "5000 rows of 384006168") != NULL);
	int64_t *r1 = NULL, *r2 = NULL;
	uint64_t n1 = 0, n2 = 0;
	CHECK_RC(eht_hotset_read(f1, &r1, &n1), 0);
	CHECK(n1 == 5000);
	snprintf(args, sizeof(args), "hotset build --workload text:%s --rows 5000 --layer 14 -o %s", wl, f2);
	CHECK_RC(run(args, out, sizeof(out)), 0);
	CHECK_RC(eht_hotset_read(f2, &r2, &n2), 0);
	if (r1 && r2 && n1 == 5000 && n2 == 5000) {
		CHECK(memcmp(r1, r2, 5000 * 8) != 0);
		qsort(r1, n1, 8, cmp64);
		size_t bad = 0;
		for (size_t i = 0; i < n1; i++)
			bad += r1[i] < 0 || r1[i] >= 384006168 || (i && r1[i] == r1[i - 1]);
		CHECK(bad == 0);
	}
	free(r1);
	free(r2);

	/* Bad arguments: exit 2, named. */
	snprintf(args, sizeof(args), "hotset build --workload text:%s --rows 10 --layer 7 -o %s", wl, f1);
	CHECK_RC(run(args, out, sizeof(out)), 2);
	CHECK(strstr(out, "--layer") != NULL);
	snprintf(args, sizeof(args), "hotset build --workload text:%s -o %s", wl, f1);
	CHECK_RC(run(args, out, sizeof(out)), 2);
	snprintf(args, sizeof(args), "hotset build --workload text:%s --rows 10 --skip-tokens 500000 -o %s", wl, f1);
	CHECK_RC(run(args, out, sizeof(out)), 1);
	CHECK_RC(run("hotset build --workload text:/nonexistent.u32 --rows 10 -o /dev/null", out, sizeof(out)), 1);
	CHECK(strstr(out, "/nonexistent.u32") != NULL);
	CHECK_RC(run("hotset frobnicate", out, sizeof(out)), 2);

	/* The bench learns a hot set on the second half and measures on the first. */
	snprintf(args, sizeof(args),
		 "bench lookup --cpu --table-gib 0.01 --ids 48 --reps 1 --workload text:%s --hotset 1000", wl);
	CHECK_RC(run(args, out, sizeof(out)), 0);
	CHECK(strstr(out, "hot set: 1000 rows") != NULL && strstr(out, "steps from tokens [0, 250000)") != NULL);
	snprintf(args, sizeof(args), "bench lookup --cpu --table-gib 0.01 --ids 48 --reps 1 --hotset 1000");
	CHECK_RC(run(args, out, sizeof(out)), 1);
	CHECK(strstr(out, "text workload") != NULL);

	remove(f1);
	remove(f2);
	t_rmtree(tmp);
	return t_done();
}
