/* SPDX-License-Identifier: Apache-2.0 */
/* bench_region.c: `eht bench region`: create+populate rate and pin cost of shared regions, with the
 * machine's own write bandwidth over the same pages (the ceiling) measured in the same run. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "util/cpu.h"
#include "gpu/dev.h"
#include "eht.h"
#include "os/fsinfo.h"
#include "os/numa.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/pool.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: eht bench region [--sizes 1,16,48] [--runs 2] [--threads N] [--thp] [--device D]\n"
			"                        [--dir D] [--json]\n"
			"Sizes are GiB; sizes that do not fit the directory's free space or the available memory\n"
			"are skipped. Each size runs twice in the same process (the second run sees warm memory).\n");
}


struct fill {
	char *p;
	size_t len, chunk;
	unsigned char v;
};

static void fill_task(void *arg, size_t i, unsigned w)
{
	struct fill *f = arg;
	size_t off = i * f->chunk, n = f->len - off < f->chunk ? f->len - off : f->chunk;
	memset(f->p + off, f->v, n);
}

struct run {
	double gib, populate_s, fill_s, pin_s, unpin_s;
	int pin_rc;
};

/* The region's file while a run holds it: SIGINT, SIGTERM, SIGHUP or SIGQUIT removes it
 * (cli_undo_push), so an interrupted bench leaves no GiBs of /dev/shm behind until the next create
 * or `eht regions gc` reclaims them. Its name is this process's, so no other file is at risk. (The
 * create's temporary name, held for microseconds before the populate, is left to that reclaim.) */
static char region_file[4200];

static void unlink_region_file(void *arg)
{
	(void)arg;
	unlink(region_file); /* async-signal-safe */
}

static int one_run(double gib, const char *dir, unsigned threads, bool thp, int device, eht_pool *pool,
		   struct run *out)
{
	uint64_t bytes = (uint64_t)(gib * (double)(1ull << 30));
	char name[64];
	snprintf(name, sizeof(name), "eht-bench-%d", (int)getpid());
	/* Unlinked as soon as it is ready; until then a signal's undo removes it. */
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_UNLINK_WHEN_MAPPED | (thp ? EHT_REGION_THP : 0),
				    .dir = dir, .expected_peers = 1, .populate_threads = threads};
	eht_region *r = NULL;
	memset(out, 0, sizeof(*out));
	out->gib = gib;
	snprintf(region_file, sizeof(region_file), "%s/eht.%s", eht_region_dir(dir), name);
	if (cli_undo_push(unlink_region_file, NULL) != 0)
		return eht_err(ENOSPC, "bench region: no room to undo the region on a signal");
	double t0 = eht_now_s();
	int rc = eht_region_open(name, bytes, &o, &r);
	if (rc) {
		cli_undo_pop();
		return rc;
	}
	out->populate_s = eht_now_s() - t0;
	/* Ceiling: writing every byte of the same, already mapped pages with the pool's threads. */
	struct fill f = {.p = eht_region_data(r), .len = (size_t)bytes, .chunk = 64u << 20, .v = 0x5a};
	t0 = eht_now_s();
	eht_pool_run(pool, (f.len + f.chunk - 1) / f.chunk, fill_task, &f);
	out->fill_s = eht_now_s() - t0;
	rc = eht_region_mark_ready(r);
	out->pin_rc = -ENODEV;
	if (!rc && device >= 0) {
		t0 = eht_now_s();
		out->pin_rc = eht_region_pin(r, device);
		out->pin_s = eht_now_s() - t0;
	}
	t0 = eht_now_s();
	int crc = eht_region_close(&r);
	out->unpin_s = out->pin_rc == 0 ? eht_now_s() - t0 : 0;
	cli_undo_pop();
	return rc ? rc : crc;
}

struct region_opts {
	const char *sizes, *dir;
	unsigned threads;
	int runs, device, gpu;
	bool thp, json;
};

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_bench_region[] = {{"sizes", required_argument, NULL, 's'},
					 {"dir", required_argument, NULL, 'D'},
					 {"threads", required_argument, NULL, 't'},
					 {"runs", required_argument, NULL, 'r'},
					 {"device", required_argument, NULL, 'd'},
					 {"thp", no_argument, NULL, 'T'},
					 {"json", no_argument, NULL, 'j'},
					 {"help", no_argument, NULL, 'h'},
					 {0}};

/* Every size of the list a positive number of GiB: 0, or 2 (said). */
static int check_sizes(const char *sizes)
{
	char *list = strdup(sizes);
	if (!list)
		return cli_errorf("bench region", 1, "out of memory");
	int rc = 0;
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		double gib = 0;
		if (cli_double("bench region", "--sizes", tok, &gib))
			rc = 2;
		else if (!(gib > 0))
			rc = cli_errorf("bench region", 2, "--sizes takes positive GiB, not '%s'", tok);
	}
	free(list);
	return rc;
}

/* The command line into o; -1 to run, else the exit status. */
static int parse_args(int argc, char **argv, struct region_opts *o)
{
	const struct option *longopts = cli_opts_bench_region;
	const char *dir_opt = NULL;
	int nthreads = 0, c, bad = 0;
	*o = (struct region_opts){.sizes = "1,16,48", .runs = 2};
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "bench region", "h", longopts)) != -1) {
		switch (c) {
		case 's':
			o->sizes = optarg;
			break;
		case 'D':
			dir_opt = optarg;
			break;
		case 't':
			bad = cli_int("bench region", "--threads", optarg, &nthreads);
			break;
		case 'r':
			bad = cli_int("bench region", "--runs", optarg, &o->runs);
			break;
		case 'd':
			bad = cli_int("bench region", "--device", optarg, &o->device);
			break;
		case 'T':
			o->thp = true;
			break;
		case 'j':
			o->json = true;
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
	if (optind < argc)
		return cli_usage_error("bench region", "unexpected argument");
	if (check_sizes(o->sizes))
		return 2;
	if (o->runs < 1 || o->device < 0 || nthreads < 0)
		return cli_usage_error("bench region", "--runs must be >= 1, --device and --threads >= 0");
	o->dir = eht_region_dir(dir_opt);
	o->threads = (unsigned)nthreads;
	o->gpu = eht_dev_count() > o->device;
	if (!o->threads) { /* the region's own default (src/os/region_create.c), so the bench times what tables get */
		unsigned n = eht_cpu_usable(NULL);
		o->threads = n > 32 ? 32 : n;
	}
	return -1;
}

/* Why a size does not fit the directory or the memory ("" when it does). */
static void why_not(const char *dir, double gib, char *why, size_t wl)
{
	uint64_t need = (uint64_t)(gib * (double)(1ull << 30));
	struct eht_fs_info fi;
	uint64_t avail = eht_mem_available();
	why[0] = '\0';
	if (eht_fs_info(dir, &fi) != 0)
		snprintf(why, wl, "%s", eht_last_error());
	else if (fi.free_bytes < need + (64u << 20))
		snprintf(why, wl, "%.1f GiB free in %s", (double)fi.free_bytes / (1ull << 30), dir);
	else if (avail && avail < need + need / 16 + (512u << 20))
		snprintf(why, wl, "%.1f GiB of memory available", (double)avail / (1ull << 30));
}

/* One run's line or JSON entry. */
static void report_run(const struct region_opts *o, double gib, int run, const struct run *r, json_t *results)
{
	double gb = gib * (double)(1ull << 30) / 1e9;
	bool pinned = r->pin_rc == 0;
	if (o->json) {
		json_t *e = json_pack("{s:f, s:i, s:f, s:f, s:f}", "size_gib", gib, "run", run, "populate_s",
				      r->populate_s, "populate_gbs", gb / r->populate_s, "ceiling_fill_gbs", gb / r->fill_s);
		json_object_set_new(e, "pin_s", pinned ? json_real(r->pin_s) : json_null());
		json_object_set_new(e, "pin_s_per_gib", pinned ? json_real(r->pin_s / gib) : json_null());
		json_object_set_new(e, "unpin_s", pinned ? json_real(r->unpin_s) : json_null());
		json_array_append_new(results, e);
		return;
	}
	char pin[16], per[16], unpin[16];
	bench_cell(pin, sizeof(pin), "%.3f", r->pin_s, pinned, o->gpu ? "failed" : "n/a");
	bench_cell(per, sizeof(per), "%.4f", r->pin_s / gib, pinned, "n/a");
	bench_cell(unpin, sizeof(unpin), "%.3f", r->unpin_s, pinned, "n/a");
	printf("%8.2f %4d %12.3f %10.2f %14.2f %9s %11s %9s\n", gib, run, r->populate_s, gb / r->populate_s,
	       gb / r->fill_s, pin, per, unpin);
}

/* Every size of the list (skipping those that do not fit), each o->runs times. The exit status. */
static int region_sizes(const struct region_opts *o, eht_pool *pool, json_t *results, json_t *skipped)
{
	char *list = strdup(o->sizes);
	int status = 0;
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && !status; tok = strtok_r(NULL, ",", &save)) {
		double gib = strtod(tok, NULL); /* checked by parse_args */
		char why[256];
		why_not(o->dir, gib, why, sizeof(why));
		if (why[0]) {
			if (o->json)
				json_array_append_new(skipped, json_pack("{s:f, s:s}", "size_gib", gib, "reason", why));
			else
				printf("%8.2f  skipped: does not fit (%s)\n", gib, why);
			continue;
		}
		for (int run = 1; run <= o->runs; run++) {
			struct run r;
			int rc = one_run(gib, o->dir, o->threads, o->thp, o->gpu ? o->device : -1, pool, &r);
			if (rc) {
				char msg[1200];
				snprintf(msg, sizeof(msg), "%.2f GiB: %s", gib, eht_last_error());
				if (o->json && json_array_size(results)) /* the report says it: "error" */
					fprintf(stderr, "eht bench region: %s\n", msg);
				else
					cli_error("bench region", o->json, msg);
				status = 1;
				break;
			}
			report_run(o, gib, run, &r, results);
		}
	}
	free(list);
	return status;
}

int bench_region(int argc, char **argv)
{
	struct region_opts o;
	int status = parse_args(argc, argv, &o);
	if (status >= 0)
		return status;
	eht_pool *pool = NULL;
	if (eht_pool_create(o.threads > 1 ? o.threads - 1 : 1, -1, 0, &pool) != 0)
		return cli_error("bench region", o.json, NULL);
	json_t *results = json_array(), *skipped = json_array();
	if (!o.json) {
		printf("eht bench region: dir %s, %u populate thread(s), %s, GPU %s\n", o.dir, o.threads,
		       o.thp ? "THP asked" : "base pages", o.gpu ? "present" : "none (pin n/a)");
		printf("%8s %4s %12s %10s %14s %9s %11s %9s\n", "GiB", "run", "populate s", "GB/s", "ceiling GB/s",
		       "pin s", "pin s/GiB", "unpin s");
	}
	status = region_sizes(&o, pool, results, skipped);
	if (o.json && (status == 0 || json_array_size(results))) {
		json_t *r = bench_report_new("region");
		json_object_update_new(r, json_pack("{s:s, s:i, s:b, s:b, s:o, s:o}", "dir", o.dir, "threads",
						    (int)o.threads, "thp", o.thp, "gpu", o.gpu, "results", results,
						    "skipped", skipped));
		if (status)
			json_object_set_new(r, "error", json_string(eht_last_error()));
		cli_print_json(r);
	} else {
		json_decref(results);
		json_decref(skipped);
	}
	eht_pool_destroy(pool);
	return status;
}
