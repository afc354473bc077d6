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
#include "gpu/dev.h"
#include "eht.h"
#include "os/fsinfo.h"
#include "os/numa.h"
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

static int one_run(double gib, const char *dir, unsigned threads, bool thp, int device, eht_pool *pool,
		   struct run *out)
{
	uint64_t bytes = (uint64_t)(gib * (double)(1ull << 30));
	char name[64];
	snprintf(name, sizeof(name), "eht-bench-%d", (int)getpid());
	/* Unlinked as soon as it is ready: a bench killed midway leaks nothing but a stale file gc removes. */
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_UNLINK_WHEN_MAPPED | (thp ? EHT_REGION_THP : 0),
				    .dir = dir, .expected_peers = 1, .populate_threads = threads};
	eht_region *r = NULL;
	memset(out, 0, sizeof(*out));
	out->gib = gib;
	double t0 = bench_now_s();
	int rc = eht_region_open(name, bytes, &o, &r);
	if (rc)
		return rc;
	out->populate_s = bench_now_s() - t0;
	/* Ceiling: writing every byte of the same, already mapped pages with the pool's threads. */
	struct fill f = {.p = eht_region_data(r), .len = (size_t)bytes, .chunk = 64u << 20, .v = 0x5a};
	t0 = bench_now_s();
	eht_pool_run(pool, (f.len + f.chunk - 1) / f.chunk, fill_task, &f);
	out->fill_s = bench_now_s() - t0;
	rc = eht_region_mark_ready(r);
	out->pin_rc = -ENODEV;
	if (!rc && device >= 0) {
		t0 = bench_now_s();
		out->pin_rc = eht_region_pin(r, device);
		out->pin_s = bench_now_s() - t0;
	}
	t0 = bench_now_s();
	int crc = eht_region_close(&r);
	out->unpin_s = out->pin_rc == 0 ? bench_now_s() - t0 : 0;
	return rc ? rc : crc;
}

int bench_region(int argc, char **argv)
{
	static const struct option longopts[] = {{"sizes", required_argument, NULL, 's'},
						 {"dir", required_argument, NULL, 'D'},
						 {"threads", required_argument, NULL, 't'},
						 {"runs", required_argument, NULL, 'r'},
						 {"device", required_argument, NULL, 'd'},
						 {"thp", no_argument, NULL, 'T'},
						 {"json", no_argument, NULL, 'j'},
						 {"help", no_argument, NULL, 'h'},
						 {0}};
	const char *sizes = "1,16,48", *dir_opt = NULL;
	int nthreads = 0, runs = 2, device = 0, c, bad = 0;
	bool thp = false, json = false;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "bench region", "h", longopts)) != -1) {
		switch (c) {
		case 's':
			sizes = optarg;
			break;
		case 'D':
			dir_opt = optarg;
			break;
		case 't':
			bad = cli_int("bench region", "--threads", optarg, &nthreads);
			break;
		case 'r':
			bad = cli_int("bench region", "--runs", optarg, &runs);
			break;
		case 'd':
			bad = cli_int("bench region", "--device", optarg, &device);
			break;
		case 'T':
			thp = true;
			break;
		case 'j':
			json = true;
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
	if (runs < 1 || device < 0 || nthreads < 0)
		return cli_usage_error("bench region", "--runs must be >= 1, --device and --threads >= 0");
	const char *dir = eht_region_dir(dir_opt);
	unsigned threads = (unsigned)nthreads;
	bool gpu = eht_dev_count() > device;
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 32 ? 32 : (n < 1 ? 1 : (unsigned)n);
	}
	eht_pool *pool = NULL;
	if (eht_pool_create(threads > 1 ? threads - 1 : 1, -1, 0, &pool) != 0)
		return cli_error("bench region", json, NULL);

	json_t *results = json_array(), *skipped = json_array();
	if (!json) {
		printf("eht bench region: dir %s, %u populate thread(s), %s, GPU %s\n", dir, threads,
		       thp ? "THP asked" : "base pages", gpu ? "present" : "none (pin n/a)");
		printf("%8s %4s %12s %10s %14s %9s %11s %9s\n", "GiB", "run", "populate s", "GB/s", "ceiling GB/s",
		       "pin s", "pin s/GiB", "unpin s");
	}
	int status = 0;
	char *list = strdup(sizes);
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		double gib = 0;
		if (cli_double("bench region", "--sizes", tok, &gib) || gib <= 0) {
			if (gib <= 0)
				fprintf(stderr, "eht bench region: --sizes takes positive GiB, not '%s'\n", tok);
			status = 2;
			break;
		}
		uint64_t need = (uint64_t)(gib * (double)(1ull << 30));
		struct eht_fs_info fi;
		uint64_t avail = eht_mem_available();
		char why[256] = "";
		if (eht_fs_info(dir, &fi) != 0)
			snprintf(why, sizeof(why), "%s", eht_last_error());
		else if (fi.free_bytes < need + (64u << 20))
			snprintf(why, sizeof(why), "%.1f GiB free in %s", (double)fi.free_bytes / (1ull << 30), dir);
		else if (avail && avail < need + need / 16 + (512u << 20))
			snprintf(why, sizeof(why), "%.1f GiB of memory available", (double)avail / (1ull << 30));
		if (why[0]) {
			if (json)
				json_array_append_new(skipped, json_pack("{s:f, s:s}", "size_gib", gib, "reason", why));
			else
				printf("%8.2f  skipped: does not fit (%s)\n", gib, why);
			continue;
		}
		for (int run = 1; run <= runs; run++) {
			struct run r;
			int rc = one_run(gib, dir, threads, thp, gpu ? device : -1, pool, &r);
			if (rc) {
				char msg[1200];
				snprintf(msg, sizeof(msg), "%.2f GiB: %s", gib, eht_last_error());
				cli_error("bench region", json && json_array_size(results) == 0, msg);
				status = 1;
				break;
			}
			double gb = gib * (double)(1ull << 30) / 1e9;
			bool pinned = r.pin_rc == 0;
			if (json) {
				json_t *o = json_pack("{s:f, s:i, s:f, s:f, s:f}", "size_gib", gib, "run", run, "populate_s",
						      r.populate_s, "populate_gbs", gb / r.populate_s, "ceiling_fill_gbs",
						      gb / r.fill_s);
				json_object_set_new(o, "pin_s", pinned ? json_real(r.pin_s) : json_null());
				json_object_set_new(o, "pin_s_per_gib", pinned ? json_real(r.pin_s / gib) : json_null());
				json_object_set_new(o, "unpin_s", pinned ? json_real(r.unpin_s) : json_null());
				json_array_append_new(results, o);
			} else {
				char pin[16] = "n/a", per[16] = "n/a", unpin[16] = "n/a";
				if (pinned) {
					snprintf(pin, sizeof(pin), "%.3f", r.pin_s);
					snprintf(per, sizeof(per), "%.4f", r.pin_s / gib);
					snprintf(unpin, sizeof(unpin), "%.3f", r.unpin_s);
				} else if (gpu) {
					snprintf(pin, sizeof(pin), "failed");
				}
				printf("%8.2f %4d %12.3f %10.2f %14.2f %9s %11s %9s\n", gib, run, r.populate_s,
				       gb / r.populate_s, gb / r.fill_s, pin, per, unpin);
			}
		}
		if (status)
			break;
	}
	free(list);
	if (json && (status == 0 || json_array_size(results))) {
		json_t *o = bench_report_new("region");
		json_object_update_new(o, json_pack("{s:s, s:i, s:b, s:b, s:o, s:o}", "dir", dir, "threads", (int)threads,
						    "thp", thp, "gpu", gpu, "results", results, "skipped", skipped));
		if (status)
			json_object_set_new(o, "error", json_string(eht_last_error()));
		cli_print_json(o);
	} else {
		json_decref(results);
		json_decref(skipped);
	}
	eht_pool_destroy(pool);
	return status;
}
