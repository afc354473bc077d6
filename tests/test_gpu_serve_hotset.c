/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_serve_hotset.c: a served hot set on the GPU: a worker attached for GPU 0 finds the rows
 * the server was given (eht_table_hotset), every strategy's engine takes them by default (not with
 * EHT_LOOKUP_NO_HOTSET), and with them in its hot-row cache
 * gives the same output and dead count as one without, and as the table's own bytes, for ids with
 * hits, misses, repeats and dead ids; `eht worker` uses the served hot set by default (JSON "hotset":
 * "served", hotset_fill_ms) and none with --no-hotset. Exit 77 without a GPU. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_lookup_ref.h"
#include "table/hotset.h"
#include "util/clock.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define ROWS 50000
#define NHOT 5000
#define NIDS 8192

static int64_t hot[NHOT];

static void ids_with_hits(const int64_t *h, uint64_t nh, int64_t *ids, size_t n, uint64_t *rs)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = t_rand(rs);
		if (i % 53 == 5)
			ids[i] = (x & 1) ? -1 - (int64_t)(x % 3) : ROWS + (int64_t)(x % 3);
		else if (i % 5 == 2 && i)
			ids[i] = ids[x % i];
		else if (i % 3 == 1)
			ids[i] = h[x % nh];
		else
			ids[i] = (int64_t)(x % ROWS);
	}
}

static void compare_engines(eht_table *t, const int64_t *h, uint64_t nh, eht_stream s, uint64_t *rs)
{
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_table_get_info(t, &ti), 0);
	struct t_lookup_ref ref = {.rows = ti.host, .nrows = ti.rows};
	int64_t *ids = malloc(NIDS * sizeof(*ids));
	uint8_t *a = malloc((size_t)NIDS * RB), *b = malloc((size_t)NIDS * RB);
	eht_dptr da = 0, db = 0;
	if (!ids || !a || !b || !ti.host || t_cu(eht_dev_alloc(&da, (size_t)NIDS * RB)) ||
	    t_cu(eht_dev_alloc(&db, (size_t)NIDS * RB)))
		goto out;
	for (int strategy = EHT_LOOKUP_AUTO; strategy < eht_lookup_strategy_count(); strategy++) {
		if ((strategy == EHT_LOOKUP_DIRECT || strategy == EHT_LOOKUP_SORTED) && !ti.device_ptr)
			continue;
		struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strategy, .device = 0, .numa_node = -1,
					    .threads = 4, .max_batch = NIDS};
		eht_lookup *plain = NULL, *cached = NULL;
		/* The table's served hot set is the engine's by default; NO_HOTSET turns it down. */
		CHECK_RC(eht_lookup_create(t, &o, &cached), 0);
		o.flags |= EHT_LOOKUP_NO_HOTSET;
		CHECK_RC(eht_lookup_create(t, &o, &plain), 0);
		if (!plain || !cached)
			goto next;
		CHECK(eht_lookup_hotset_rows(cached) == nh);
		CHECK(eht_lookup_hotset_rows(plain) == 0);
		/* ... and a background engine takes none by default (explicitly set, it is served) */
		eht_lookup *bg = NULL;
		o.flags = (o.flags & ~EHT_LOOKUP_NO_HOTSET) | EHT_LOOKUP_BACKGROUND;
		CHECK_RC(eht_lookup_create(t, &o, &bg), 0);
		if (bg) {
			CHECK(eht_lookup_hotset_rows(bg) == 0);
			CHECK_RC(eht_lookup_set_hotset(bg, h, nh), 0);
			CHECK(eht_lookup_hotset_rows(bg) == nh);
			eht_lookup_destroy(bg);
		}
		o.flags &= ~EHT_LOOKUP_BACKGROUND;
		double t0 = (double)eht_now_ns() / 1e6;
		CHECK_RC(eht_lookup_set_hotset(cached, h, nh), 0); /* the caller's replaces the default */
		CHECK(eht_lookup_hotset_rows(cached) == nh);
		fprintf(stderr, "%s: served hot set of %llu rows filled in %.2f ms\n", eht_lookup_strategy_name(strategy),
			(unsigned long long)nh, (double)eht_now_ns() / 1e6 - t0);
		for (int rep = 0; rep < 3; rep++) {
			ids_with_hits(h, nh, ids, NIDS, rs);
			t_cu(eht_dev_memset8(da, 0xab, (size_t)NIDS * RB));
			t_cu(eht_dev_memset8(db, 0xcd, (size_t)NIDS * RB));
			t_cu(eht_dev_sync());
			uint64_t dead_a = 1, dead_b = 2, dead_ref = 3;
			unsigned fl = EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_DEVICE;
			CHECK_RC(eht_lookup_run(plain, ids, EHT_ID_INT64, 0, NIDS, (void *)(uintptr_t)da, s, fl, &dead_a), 0);
			CHECK_RC(eht_lookup_run(cached, ids, EHT_ID_INT64, 0, NIDS, (void *)(uintptr_t)db, s, fl, &dead_b), 0);
			t_cu(eht_dev_stream_sync(s));
			t_cu(eht_dev_d2h(a, da, (size_t)NIDS * RB));
			t_cu(eht_dev_d2h(b, db, (size_t)NIDS * RB));
			size_t bad = t_lookup_compare(&ref, db, ids, NIDS, EHT_LOOKUP_RAW, &dead_ref);
			int same = memcmp(a, b, (size_t)NIDS * RB) == 0;
			if (!same || bad || dead_a != dead_b || dead_b != dead_ref)
				fprintf(stderr, "%s rep %d: outputs %s, %zu rows differ from the table, dead %llu / %llu / %llu\n",
					eht_lookup_strategy_name(strategy), rep, same ? "equal" : "DIFFER", bad,
					(unsigned long long)dead_a, (unsigned long long)dead_b, (unsigned long long)dead_ref);
			CHECK(same);
			CHECK(bad == 0);
			CHECK(dead_a == dead_b && dead_b == dead_ref);
		}
	next:
		eht_lookup_destroy(plain);
		eht_lookup_destroy(cached);
	}
out:
	if (da)
		eht_dev_free(da);
	if (db)
		eht_dev_free(db);
	free(ids);
	free(a);
	free(b);
}

/* `eht worker KEY --check ckpt --json [extra]`: its results' "hotset" must all be want. */
static void worker_reports(const char *key, const char *ckpt, const char *extra, const char *want)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "'%s' worker %s --check '%s' --ids 4096 --reps 2 --json %s", getenv("EHT_CLI"), key,
		 ckpt, extra);
	FILE *p = popen(cmd, "r");
	char *text = calloc(1, 1 << 20);
	size_t k = p && text ? fread(text, 1, (1 << 20) - 1, p) : 0;
	int st = p ? pclose(p) : -1;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	json_t *doc = text ? json_loadb(text, k, 0, NULL) : NULL, *r;
	size_t i, n = 0;
	json_array_foreach(json_object_get(doc, "results"), i, r)
	{
		n++;
		const char *h = json_string_value(json_object_get(r, "hotset"));
		double ms = json_real_value(json_object_get(r, "hotset_fill_ms"));
		fprintf(stderr, "eht worker%s%s: %s hot set %s, %lld rows, filled in %.2f ms, %lld mismatches\n", *extra ? " " : "", extra,
			json_string_value(json_object_get(r, "strategy")), h ? h : "(none)",
			(long long)json_integer_value(json_object_get(r, "hotset_rows")), ms,
			(long long)json_integer_value(json_object_get(r, "mismatches")));
		CHECK(h && !strcmp(h, want));
		CHECK(json_integer_value(json_object_get(r, "mismatches")) == 0);
		if (!strcmp(want, "served"))
			CHECK(json_integer_value(json_object_get(r, "hotset_rows")) ==
				      (strstr(extra, "31K") ? 101 : strstr(extra, "--hotset-size") ? 100 : NHOT) &&
			      json_is_real(json_object_get(r, "hotset_fill_ms")));
	}
	CHECK(n > 0);
	if (!n)
		fprintf(stderr, "eht worker printed: %s\n", text ? text : "");
	json_decref(doc);
	free(text);
}

int main(void)
{
	if (!t_have_gpu())
		t_skip("no GPU");
	t_cli(); /* skips where EHT_CLI is not set */
	if (eht_dev_use(0))
		t_skip("cannot use GPU 0");
	eht_stream s = NULL;
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), 0);
	char *tmp = t_tmpdir("gpu-serve-hot");
	char ckpt[600], shm[600], hotp[600], key[64];
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
	snprintf(shm, sizeof(shm), "%s/shm", tmp);
	snprintf(hotp, sizeof(hotp), "%s/h.hot", tmp);
	mkdir(shm, 0700);
	t_setenv("EHT_SHM_DIR", shm);
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 1, .rows = ROWS, .seed = 3};
	CHECK_RC(eht_synth_checkpoint(ckpt, &so), 0);
	uint64_t rs = 17;
	for (int i = 0; i < NHOT; i++) /* distinct, scattered */
		hot[i] = (int64_t)(((uint64_t)i * 7919) % ROWS);
	CHECK_RC(eht_hotset_write(hotp, hot, NHOT), 0);
	snprintf(key, sizeof(key), "gpu-hot-%d", (int)getpid());
	const char *specs[] = {hotp}; /* a bare FILE: the only table's */
	struct eht_serve_opts o = {.size = sizeof(o), .key = key, .device = 0, .threads = 2, .hotsets = specs,
				   .nhotsets = 1};
	eht_server *srv = NULL;
	CHECK_RC(eht_serve_start(ckpt, &o, &srv), 0);
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = 0, .timeout_ms = 10000};
	eht_client *c = NULL;
	if (srv)
		CHECK_RC(eht_attach(key, &ao, &c), 0);
	eht_table *t = NULL;
	const int64_t *rows = NULL;
	uint64_t n = 0;
	if (c && eht_client_table(c, 0, &t) == 0) {
		struct eht_table_info ti = {.size = sizeof(ti)};
		CHECK_RC(eht_table_get_info(t, &ti), 0);
		fprintf(stderr, "served table: tier %s, device_ptr %s\n", eht_tier_name(ti.tier), ti.device_ptr ? "yes" : "no");
		CHECK_RC(eht_table_hotset(t, &rows, &n), 0);
		CHECK(n == NHOT && rows && memcmp(rows, hot, sizeof(hot)) == 0);
		if (n == NHOT)
			compare_engines(t, rows, n, s, &rs);
	}
	eht_detach(c);
	if (srv) {
		worker_reports(key, ckpt, "", "served");
		worker_reports(key, ckpt, "--no-hotset", "none");
		worker_reports(key, ckpt, "--hotset-size 100", "served"); /* the first 100 rows */
		worker_reports(key, ckpt, "--hotset-size 31K", "served"); /* 31 KiB / (264 + 48) B: 101 rows */
	}
	CHECK_RC(eht_serve_stop(srv), 0);
	eht_dev_stream_destroy(s);
	t_rmtree(tmp);
	return t_done();
}
