/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_strategies.c: the public enumeration of lookup strategies (count, names, by_name) is
 * the strategy table's: every id names itself and back, unknown names are -EINVAL listing them all;
 * `eht bench lookup --list-strategies` (what the shell completion offers) prints the same names and
 * --strategies refuses others with exit 2; an engine of each strategy a CPU can run reports it; the
 * hot-set file functions of eht.h round-trip the format byte for byte. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eht.h"
#include "testutil.h"

static void check_enumeration(void)
{
	int n = eht_lookup_strategy_count();
	CHECK(n == 4);
	static const char *const want[] = {"auto", "direct", "sorted", "host"}; /* the ids of eht.h */
	for (int i = 0; i < n && i < 4; i++) {
		CHECK(strcmp(eht_lookup_strategy_name(i), want[i]) == 0);
		CHECK_RC(eht_lookup_strategy_by_name(eht_lookup_strategy_name(i)), i);
	}
	CHECK(strcmp(eht_lookup_strategy_name(n), "unknown") == 0);
	CHECK(strcmp(eht_lookup_strategy_name(-1), "unknown") == 0);
	CHECK_RC(eht_lookup_strategy_by_name("fastest"), -EINVAL);
	CHECK(strstr(eht_last_error(), "auto, direct, sorted, host") != NULL);
	CHECK_RC(eht_lookup_strategy_by_name(NULL), -EINVAL);
	CHECK_RC(eht_lookup_strategy_by_name("HOST"), -EINVAL); /* names are exact */
}

static void check_cli(void)
{
	if (!getenv("EHT_CLI"))
		return;
	char out[4096], err[4096];
	CHECK_RC(t_cli_run("bench lookup --list-strategies", 60, out, sizeof(out), err, sizeof(err)), 0);
	char want[256] = "";
	for (int i = 0; i < eht_lookup_strategy_count(); i++) {
		strcat(want, eht_lookup_strategy_name(i));
		strcat(want, "\n");
	}
	CHECK(strcmp(out, want) == 0);
	CHECK_RC(t_cli_run("bench lookup --strategies host,fastest --cpu", 60, out, sizeof(out), err, sizeof(err)), 2);
	CHECK(strstr(err, "unknown lookup strategy 'fastest'") != NULL);
	/* The CPU a call takes, and the pool's part of it (its threads are named eht-pool/N): HOST with
	 * host ids into host memory rings no doorbell, so the poller has none. */
	static char rep[16384];
	CHECK_RC(t_cli_run("bench lookup --cpu --table-gib 0.02 --ids 4096 --strategies host --threads 2 --reps 10 --json",
			   120, rep, sizeof(rep), err, sizeof(err)), 0);
	json_error_t je;
	json_t *root = json_loads(rep, 0, &je);
	CHECK(root != NULL);
	json_t *h = json_object_get(json_array_get(json_object_get(root, "results"), 0), "host_ids");
	double all = json_real_value(json_object_get(h, "cpu_ms_per_call")),
	       pool = json_real_value(json_object_get(h, "pool_cpu_ms_per_call"));
	fprintf(stderr, "bench lookup --cpu: %.3f ms of CPU a call, the pool's %.3f\n", all, pool);
	/* The pool's CPU is part of the whole (two clocks, read a moment apart). Whether the pool ran at
	 * all is the scheduler's choice: the calling thread may finish every chunk before a pool thread
	 * wakes (a loaded machine), so 0 is a right answer. */
	CHECK(json_is_real(json_object_get(h, "pool_cpu_ms_per_call")));
	CHECK(all > 0 && pool >= 0 && pool <= all * 1.05 + 0.02);
	CHECK(json_is_real(json_object_get(h, "poller_cpu_ms_per_call")) &&
	      json_real_value(json_object_get(h, "poller_cpu_ms_per_call")) == 0.0);
	json_decref(root);
}

/* CPU engines: HOST and AUTO (AUTO resolves to HOST there); DIRECT and SORTED need a GPU. */
static void check_engines(void)
{
	enum { ROWS = 100, RB = 16 };
	static uint8_t data[ROWS * RB];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(data, ROWS, RB, -1, "strategies", &t), 0);
	for (int s = 0; t && s < eht_lookup_strategy_count(); s++) {
		struct eht_lookup_opts o = {.size = sizeof(o), .strategy = s, .flags = EHT_LOOKUP_CPU_ONLY | EHT_LOOKUP_NO_HOTSET,
					    .threads = 2};
		eht_lookup *lk = NULL;
		int rc = eht_lookup_create(t, &o, &lk);
		if (s == EHT_LOOKUP_DIRECT || s == EHT_LOOKUP_SORTED) {
			CHECK_RC(rc, -ENODEV);
			continue;
		}
		CHECK_RC(rc, 0);
		int64_t ids[3] = {5, -1, 99};
		uint8_t out[3 * RB];
		uint64_t dead = 0;
		CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, 3, out, NULL, 0, &dead), 0);
		CHECK(dead == 1 && memcmp(out, data + 5 * RB, RB) == 0 && memcmp(out + 2 * RB, data + 99 * RB, RB) == 0);
		CHECK(eht_lookup_last_strategy(lk) == EHT_LOOKUP_HOST);
		/* A strategy of another engine's kind for one call: its checks, not a crash. */
		CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, 3, out, NULL,
					EHT_LOOKUP_RUN_STRATEGY(EHT_LOOKUP_SORTED), NULL), -EINVAL);
		eht_lookup_destroy(lk);
	}
	struct eht_lookup_opts bad = {.size = sizeof(bad), .strategy = eht_lookup_strategy_count(),
				      .flags = EHT_LOOKUP_CPU_ONLY};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &bad, &lk), -EINVAL);
	/* the background mode's two ways at once */
	struct eht_lookup_opts both = {.size = sizeof(both), .flags = EHT_LOOKUP_CPU_ONLY | EHT_LOOKUP_BACKGROUND |
							     EHT_LOOKUP_BG_PUSH | EHT_LOOKUP_BG_STREAM};
	CHECK_RC(eht_lookup_create(t, &both, &lk), -EINVAL);
	CHECK(lk == NULL && strstr(eht_last_error(), "BG_STREAM") != NULL);
	CHECK(eht_table_close(t) == 0);
}

static void check_hotset_file(void)
{
	char *dir = t_tmpdir("strategies-hot");
	char path[600];
	snprintf(path, sizeof(path), "%s/h.hot", dir);
	const int64_t rows[3] = {7, 0, 1ll << 40};
	CHECK_RC(eht_hotset_write(path, rows, 3), 0);
	/* The format: a safetensors file whose one tensor, "hotset" I64 [3], holds the rows, LE. */
	static const uint8_t want[24] = {7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
	eht_st_file *sf = NULL;
	struct eht_st_tensor_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_st_open(path, 0, &sf), 0);
	CHECK(sf && eht_st_count(sf) == 1 && eht_st_find(sf, "hotset", &ti) == 0 && ti.dtype == EHT_DTYPE_I64 &&
	      ti.ndim == 1 && ti.shape[0] == 3 && ti.nbytes == sizeof(want) && !memcmp(ti.data, want, sizeof(want)));
	eht_st_close(sf);
	int64_t *r = NULL;
	uint64_t n = 0;
	CHECK_RC(eht_hotset_read(path, &r, &n), 0);
	CHECK(n == 3 && r && r[0] == 7 && r[1] == 0 && r[2] == 1ll << 40);
	eht_hotset_free(r);
	t_rmtree(dir);
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	check_enumeration();
	check_cli();
	check_engines();
	check_hotset_file();
	return t_done();
}
