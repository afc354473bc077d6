/* SPDX-License-Identifier: Apache-2.0 */
/* cli_worker.c: `eht worker KEY`: attach to served tables like an inference worker, look random ids
 * up with every strategy this machine supports, check every row against the checkpoint's own bytes,
 * and print rows/s. The smoke test operators run after `eht serve`, and the demo's workers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "cli.h"
#include "gpu/dev.h"
#include "eht.h"
#include "os/mem_guard.h"
#include "util/clock.h"
#include "util/err.h"

struct wopts {
	const char *key, *check;
	uint64_t ids;
	int reps, device, id, wait, json;
	double timeout_s;
	json_t *results; /* with --json: one object per table and strategy */
	const char *hotset; /* --hotset FILE: rows put in each engine's GPU hot-row cache */
	int no_hotset;      /* --no-hotset: not even the served one */
	uint64_t hot_max_rows, hot_max_bytes; /* --hotset-size: the first rows that fit, per engine */
	int64_t *hot;
	uint64_t nhot;
};

/* The hot set of table t's GPU engines: --hotset FILE's, else (on a GPU, without --no-hotset) the
 * one its server handed over at attach, else none. *src says which ("file", "served", "none"). */
static int pick_hotset(const struct wopts *o, const eht_table *t, int gpu, const int64_t **hot, uint64_t *n,
		       const char **src)
{
	*hot = NULL;
	*n = 0;
	*src = "none";
	if (o->nhot) {
		*hot = o->hot;
		*n = o->nhot;
		*src = "file";
		return 0;
	}
	if (o->no_hotset || !gpu)
		return 0;
	int rc = eht_table_hotset(t, hot, n);
	if (rc == -ENOENT) {
		eht_err_clear();
		return 0;
	}
	if (!rc)
		*src = "served";
	return rc;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Expected bytes of row r: the weight row, then the scale row (zeros for dead ids). */
static int expected_row(eht_ckpt *ck, const char *table, int64_t r, uint64_t rows, uint64_t rb, unsigned char *dst)
{
	memset(dst, 0, rb);
	if (r < 0 || (uint64_t)r >= rows)
		return 0;
	char name[512];
	struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
	snprintf(name, sizeof(name), "%s.weight", table);
	if (eht_ckpt_find(ck, name, &w) != 0 && eht_ckpt_find(ck, table, &w) != 0)
		return -ENOENT;
	uint64_t wb = w.nbytes / w.shape[0];
	memcpy(dst, (const unsigned char *)w.data + (uint64_t)r * wb, wb);
	snprintf(name, sizeof(name), "%s.scale", table);
	if (wb < rb && eht_ckpt_find(ck, name, &s) == 0)
		memcpy(dst + wb, (const unsigned char *)s.data + (uint64_t)r * (rb - wb), rb - wb);
	return 0;
}

struct expect_call {
	eht_ckpt *ck;
	const char *table;
	int64_t r;
	uint64_t rows, rb;
	unsigned char *dst;
	int rc;
};

static void expect_fn(void *arg)
{
	struct expect_call *e = arg;
	e->rc = expected_row(e->ck, e->table, e->r, e->rows, e->rb, e->dst);
}

/* expected_row reads the checkpoint's mapping: a file that shrank since it was opened must give an
 * error naming it, not a SIGBUS. */
static int expected_row_guarded(eht_ckpt *ck, const char *table, int64_t r, uint64_t rows, uint64_t rb,
				unsigned char *dst)
{
	struct expect_call e = {ck, table, r, rows, rb, dst, 0};
	int rc = eht_guarded_call(expect_fn, &e);
	if (rc)
		return eht_err_prefix(rc, "reading row %lld of table %s from %s", (long long)r, table, eht_ckpt_path(ck));
	return e.rc;
}

/* One table's lookups: what every strategy shares. */
struct wtable {
	const struct wopts *o;
	eht_table *t;
	struct eht_table_info info;
	eht_ckpt *ck;
	int gpu;
	const int64_t *hot;
	uint64_t nhot, n;
	const char *hsrc;
	int64_t *ids;
	unsigned char *host, *want;
	size_t out_bytes;
	eht_dptr dout;
};

/* Uniform ids, some repeated, a few dead (negative or past the end), a third hits of the hot set. */
static void make_ids(struct wtable *w)
{
	uint64_t seed = 0x5eed0000ull + (uint64_t)w->o->id;
	for (uint64_t i = 0; i < w->n; i++) {
		uint64_t x = rnd(&seed);
		if (i % 97 == 13)
			w->ids[i] = (x & 1) ? -1 - (int64_t)(x % 5) : (int64_t)(w->info.rows + x % 5);
		else if (i % 7 == 3 && i)
			w->ids[i] = w->ids[x % i];
		else if (w->nhot && i % 3 == 1) /* hits of the hot set, when there is one */
			w->ids[i] = w->hot[x % w->nhot];
		else
			w->ids[i] = (int64_t)(x % w->info.rows);
	}
}

/* Filling the GPU cache reads the hot rows from the shared table: the cost a worker pays once per
 * engine at attach. 0 or -errno (message set). */
static int fill_hotset(const struct wtable *w, eht_lookup *lk, int strategy, double *fill_ms)
{
	const struct wopts *o = w->o;
	double t0 = eht_now_s();
	int rc = w->gpu ? eht_lookup_set_hotset(lk, w->hot, w->nhot)
			: eht_err(EINVAL, "--hotset: table %s is not readable by a GPU here", w->info.name);
	if (!rc && w->gpu)
		rc = eht_dev_sync();
	*fill_ms = (eht_now_s() - t0) * 1e3;
	if (rc)
		return eht_err_prefix(rc, "worker %d: table %s: the %s hot set of %llu rows", o->id, w->info.name, w->hsrc,
				      (unsigned long long)w->nhot);
	if (!o->results)
		printf("worker %d  %-36s %-7s hot set (%s) of %llu rows filled from the table in %.1f ms\n", o->id,
		       w->info.name, eht_lookup_strategy_name(strategy), w->hsrc, (unsigned long long)w->nhot, *fill_ms);
	return 0;
}

/* Every row of the output against the checkpoint's bytes: *bad the rows that differ. 0 or -errno. */
static int check_rows(const struct wtable *w, uint64_t *bad)
{
	*bad = 0;
	for (uint64_t i = 0; i < w->n; i++) {
		int erc = expected_row_guarded(w->ck, w->info.name, w->ids[i], w->info.rows, w->info.row_bytes, w->want);
		if (erc == -ENOENT)
			fprintf(stderr, "eht worker: table %s is not in the checkpoint given to --check\n", w->info.name);
		if (erc)
			return erc;
		*bad += memcmp(w->want, w->host + i * w->info.row_bytes, w->info.row_bytes) != 0;
	}
	return 0;
}

static void report_strategy(const struct wtable *w, eht_lookup *lk, double best, uint64_t bad, uint64_t dead,
			    double fill_ms)
{
	const struct wopts *o = w->o;
	uint64_t n = w->n;
	if (o->results) {
		json_array_append_new(o->results,
				      json_pack("{s:i, s:s, s:s, s:I, s:f, s:f, s:I, s:I, s:b}", "worker", o->id, "table",
						w->info.name, "strategy", eht_lookup_strategy_name(eht_lookup_last_strategy(lk)),
						"ids", (json_int_t)n, "best_ms", best * 1e3, "rows_per_s", (double)n / best,
						"mismatches", (json_int_t)bad, "dead", (json_int_t)dead, "match", bad == 0));
		json_t *last = json_array_get(o->results, json_array_size(o->results) - 1);
		json_object_set_new(last, "hotset", json_string(w->hsrc));
		json_object_set_new(last, "hotset_rows", json_integer((json_int_t)w->nhot));
		if (w->nhot)
			json_object_set_new(last, "hotset_fill_ms", json_real(fill_ms));
	} else {
		printf("worker %d  %-36s %-7s %9llu ids  %8.3f ms  %8.2f M rows/s  %s (%llu dead)\n", o->id, w->info.name,
		       eht_lookup_strategy_name(eht_lookup_last_strategy(lk)), (unsigned long long)n, best * 1e3,
		       (double)n / best / 1e6, bad ? "MISMATCH" : "rows match the checkpoint", (unsigned long long)dead);
	}
}

/* One strategy: its engine (with the hot set), --reps timed lookups (the best kept), the check. */
static int run_strategy(const struct wtable *w, int strategy, int *mismatches)
{
	const struct wopts *o = w->o;
	uint64_t n = w->n;
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = strategy, .device = w->gpu ? w->info.device : -1,
				     .flags = (w->gpu ? 0 : EHT_LOOKUP_CPU_ONLY) | EHT_LOOKUP_NO_HOTSET, /* its own pick */
				     .max_batch = n};
	eht_lookup *lk = NULL;
	int rc = eht_lookup_create(w->t, &lo, &lk);
	if (rc)
		return rc;
	double fill_ms = 0;
	if (w->nhot && (rc = fill_hotset(w, lk, strategy, &fill_ms))) {
		eht_lookup_destroy(lk);
		return rc;
	}
	void *out = w->gpu ? (void *)(uintptr_t)w->dout : (void *)w->host;
	unsigned flags = EHT_LOOKUP_RUN_IDS_HOST | (w->gpu ? EHT_LOOKUP_RUN_OUT_DEVICE : EHT_LOOKUP_RUN_OUT_HOST);
	uint64_t dead = 0, bad = 0;
	double best = 1e30;
	for (int r = 0; !rc && r < o->reps; r++) {
		double t0 = eht_now_s();
		rc = eht_lookup_run(lk, w->ids, EHT_ID_INT64, 0, n, out, NULL, flags, &dead);
		if (!rc && w->gpu)
			rc = eht_dev_sync();
		double dt = eht_now_s() - t0;
		best = dt < best ? dt : best;
	}
	if (!rc && w->gpu)
		rc = eht_dev_d2h(w->host, w->dout, w->out_bytes);
	if (!rc)
		rc = check_rows(w, &bad);
	*mismatches += (int)bad;
	if (!rc)
		report_strategy(w, lk, best, bad, dead, fill_ms);
	eht_lookup_destroy(lk);
	return rc;
}

static int run_table(const struct wopts *o, eht_table *t, eht_ckpt *ck, int *mismatches)
{
	struct wtable w = {.o = o, .t = t, .ck = ck, .info = {.size = sizeof(w.info)}, .n = o->ids};
	if (eht_table_get_info(t, &w.info) != 0)
		return -EINVAL;
	w.gpu = w.info.device_ptr != 0 && eht_dev_count() > 0;
	/* Every strategy of the library; those that need a GPU are left out where there is none, and AUTO
	 * (last) where it has only one to pick from. */
	int strategies[CLI_MAX_STRATEGIES], ns = cli_strategy_order(strategies, CLI_MAX_STRATEGIES), ran = 0;
	int rc = pick_hotset(o, t, w.gpu, &w.hot, &w.nhot, &w.hsrc);
	if (rc)
		return rc;
	/* --hotset-size: the set is most frequent first, so its head is the best set of that size. */
	if (o->hot_max_rows && w.nhot > o->hot_max_rows)
		w.nhot = o->hot_max_rows;
	if (o->hot_max_bytes && w.nhot > o->hot_max_bytes / (w.info.row_bytes + 48))
		w.nhot = o->hot_max_bytes / (w.info.row_bytes + 48);
	w.ids = malloc(w.n * sizeof(*w.ids));
	w.out_bytes = w.n * w.info.row_bytes;
	w.host = malloc(w.out_bytes);
	w.want = malloc(w.info.row_bytes);
	rc = (!w.ids || !w.host || !w.want) ? -ENOMEM : 0;
	if (!rc)
		make_ids(&w);
	if (!rc && w.gpu)
		rc = eht_dev_use(w.info.device) ? -ENODEV : eht_dev_alloc(&w.dout, w.out_bytes);
	for (int si = 0; !rc && si < ns; si++) {
		if (strategies[si] == EHT_LOOKUP_AUTO && ran < 2)
			continue;
		rc = run_strategy(&w, strategies[si], mismatches);
		if (rc == -ENODEV && !w.gpu) { /* a GPU strategy, on a worker without one */
			eht_err_clear();
			rc = 0;
			continue;
		}
		ran += !rc;
	}
	if (w.dout)
		eht_dev_free(w.dout);
	free(w.ids);
	free(w.host);
	free(w.want);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: eht worker KEY --check CHECKPOINT [--ids N] [--reps R] [--device D] [--id N]\n"
		   "                  [--wait] [--timeout S] [--hotset F | --no-hotset] [--hotset-size N|BYTES] [--json]\n"
		   "Attaches to the tables served under KEY like an inference worker, looks random ids up with\n"
		   "every strategy this machine supports, checks every row against CHECKPOINT's own bytes and\n"
		   "prints rows/s. Exit 1 when a row differs.\n"
		   "  --ids N      ids per lookup (6144)       --reps R    timed runs, best kept (5)\n"
		   "  --device D   GPU (default 0 when there is one; -1: CPU only)\n"
		   "  --id N       worker number in the output and the id seed (0)\n"
		   "  --wait       wait for a server to hold KEY (default: fail at once when none does)\n"
		   "  --timeout S  how long --wait and a loading server are waited for (60)\n"
		   "  --json       results as JSON (errors as {\"error\": ...})\n"
		   "  GPU engines fill their hot-row cache with the hot set the server hands over (`eht serve\n"
		   "  --hotset`), print the time it took, and look a third of the ids up in it.\n"
		   "  --hotset F   use the rows of F (`eht hotset build`) instead, for every table\n"
		   "  --no-hotset  no hot set, not even the served one\n"
		   "  --hotset-size N|BYTES  only the hot set's first (most frequent) N rows, or those that fit\n"
		   "               BYTES of GPU memory per engine (row bytes + 48 a row; e.g. 256M, 1G)\n");
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_worker[] = {{"check", required_argument, NULL, 'c'},
					 {"ids", required_argument, NULL, 'n'},
					 {"reps", required_argument, NULL, 'r'},
					 {"device", required_argument, NULL, 'd'},
					 {"id", required_argument, NULL, 'i'},
					 {"timeout", required_argument, NULL, 't'},
					 {"wait", no_argument, NULL, 'w'},
					 {"json", no_argument, NULL, 'j'},
					 {"hotset", required_argument, NULL, 'H'},
					 {"no-hotset", no_argument, NULL, 'N'},
					 {"hotset-size", required_argument, NULL, 'S'},
					 {"help", no_argument, NULL, 'h'},
					 {0}};

static int parse_worker(int argc, char **argv, struct wopts *o)
{
	const struct option *longopts = cli_opts_worker;
	int c, bad = 0;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "worker", "h", longopts)) != -1) {
		switch (c) {
		case 'c':
			o->check = optarg;
			break;
		case 'n':
			bad = cli_u64("worker", "--ids", optarg, &o->ids);
			break;
		case 'r':
			bad = cli_int("worker", "--reps", optarg, &o->reps);
			break;
		case 'd':
			bad = cli_int("worker", "--device", optarg, &o->device);
			break;
		case 'i':
			bad = cli_int("worker", "--id", optarg, &o->id);
			break;
		case 't':
			bad = cli_double("worker", "--timeout", optarg, &o->timeout_s);
			break;
		case 'w':
			o->wait = 1;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'H':
			o->hotset = optarg;
			break;
		case 'N':
			o->no_hotset = 1;
			break;
		case 'S':
			bad = cli_rows_or_bytes("worker", "--hotset-size", optarg, &o->hot_max_rows, &o->hot_max_bytes);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return 2;
		}
		if (bad)
			return 2;
	}
	if (optind >= argc)
		return cli_usage_error("worker", "no KEY given");
	if (optind + 1 < argc)
		return cli_usage_error("worker", "one KEY only");
	o->key = argv[optind];
	if (!o->check)
		return cli_usage_error("worker", "--check CHECKPOINT is required (rows are verified against it)");
	if (o->ids == 0 || o->reps <= 0)
		return cli_usage_error("worker", "--ids and --reps must be positive");
	if (o->hotset && o->no_hotset)
		return cli_usage_error("worker", "--hotset and --no-hotset together");
	if (!(o->timeout_s > 0 && o->timeout_s <= 86400))
		return cli_usage_error("worker", "--timeout takes seconds in (0, 86400]");
	return -1;
}

int cmd_worker(int argc, char **argv)
{
	struct wopts o = {.ids = 6144, .reps = 5, .device = -2, .timeout_s = 60};
	int prc = parse_worker(argc, argv, &o);
	if (prc >= 0)
		return prc;
	/* Say at once when nobody serves the key, instead of waiting out the attach timeout. */
	char *st = NULL;
	int src = eht_serve_status(o.key, &st);
	free(st);
	/* -EPERM: another user holds the key's status name; no server of ours can run beside it (it
	 * counts as a taken key), so that is "none" too, said with who holds it. */
	if ((src == -ENOENT || src == -EPERM) && !o.wait) {
		char msg[768];
		snprintf(msg, sizeof(msg), "no server holds key '%s' on this node (start one: eht serve CHECKPOINT --key %s; "
			 "or pass --wait)%s%s", o.key, o.key, src == -EPERM ? ": " : "", src == -EPERM ? eht_last_error() : "");
		return cli_error("worker", o.json, msg);
	}
	if (src == -ENOENT || src == -EPERM)
		fprintf(stderr, "eht worker: waiting up to %.0f s for a server of key '%s'\n", o.timeout_s, o.key);
	if (o.device == -2)
		o.device = eht_dev_count() > 0 ? 0 : -1;
	if (o.hotset && eht_hotset_read(o.hotset, &o.hot, &o.nhot) != 0)
		return cli_error("worker", o.json, NULL);
	eht_ckpt *ck = NULL;
	if (eht_ckpt_open(o.check, 0, &ck) != 0) {
		free(o.hot);
		return cli_error("worker", o.json, NULL);
	}
	if (o.json)
		o.results = json_array();
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = o.device, .timeout_ms = (uint32_t)(o.timeout_s * 1000),
				     .flags = o.wait ? EHT_ATTACH_WAIT : 0};
	eht_client *c = NULL;
	int rc = eht_attach(o.key, &ao, &c);
	int mismatches = 0;
	eht_table *t0 = NULL;
	struct eht_table_copy cp = {.size = sizeof(cp)};
	/* Which copy the server sent (one per NUMA node with eht serve --per-numa) and the pool budget. */
	if (!rc && !o.json && eht_client_table(c, 0, &t0) == 0 && eht_table_copy(t0, &cp) == 0)
		printf("worker %d  attached: copy %d of %d (NUMA node %d), lookup pool budget %u thread(s)\n", o.id, cp.index,
		       cp.count, cp.numa_node, cp.pool_threads);
	for (size_t i = 0; !rc && i < eht_client_table_count(c); i++) {
		eht_table *t = NULL;
		rc = eht_client_table(c, i, &t);
		if (!rc)
			rc = run_table(&o, t, ck, &mismatches);
	}
	if (rc)
		cli_error("worker", o.json, NULL);
	eht_detach(c);
	eht_ckpt_close(ck);
	if (!rc && mismatches)
		fprintf(stderr, "eht worker %d: %d row(s) differ from the checkpoint\n", o.id, mismatches);
	if (!rc && o.json)
		rc = cli_print_json(json_pack("{s:s, s:i, s:O, s:i}", "key", o.key, "worker", o.id, "results", o.results,
					      "mismatches", mismatches));
	json_decref(o.results);
	free(o.hot);
	return rc || mismatches ? 1 : 0;
}
