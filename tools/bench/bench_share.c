/* SPDX-License-Identifier: Apache-2.0 */
/* bench_share.c: `eht bench share [--sizes 1,48] [--chunk BYTES] [--json]`: seconds per GiB to
 * create and export a host-NUMA table (rank 0) and to import and map it in a second process (rank 1,
 * forked before either touches CUDA), beside the anchors measured on the lent H200 machine. Without a GPU it says
 * so and exits 0 having measured nothing. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "gpu/dev.h"
#include "eht.h"
#include "table/host_numa/host_numa.h"
#include "util/size.h"

/* Anchors from the lent H200 machine (a VM): cuMemCreate 1 GiB chunks 0.8-1.0 s per 4 GiB and 10.5-15.6 s
 * per 48 GiB; cuMemMap + cuMemSetAccess 1.9-2.0 s per 48 GiB; a second process imported and mapped
 * 48 GiB in 1.4 s. */
#define ANCHOR_CREATE_LO (10.5 / 48)
#define ANCHOR_CREATE_HI (15.6 / 48)
#define ANCHOR_MAP (2.0 / 48)
#define ANCHOR_IMPORT_MAP (1.4 / 48)

struct result {
	double gib;
	int rc;
	struct eht_share_times t0, t1; /* rank 0 and rank 1 */
	char err[200];
};

static int parse_sizes(const char *s, double *out, int max)
{
	int n = 0;
	while (s && *s && n < max) {
		char *end = NULL;
		double v = strtod(s, &end);
		if (end == s || v <= 0)
			return -1;
		out[n++] = v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}


/* One rank of the benchmark; rank 0 fills res[]. Returns the exit status. */
static int bench_rank(int rank, const char *key, const double *sizes, int n, uint64_t chunk, struct result *res)
{
	eht_group *g = NULL;
	struct eht_group_opts go = {.size = sizeof(go), .timeout_ms = 600000};
	if (eht_group_create(key, rank, 2, &go, &g))
		return cli_fail("bench share", NULL);
	int status = 0;
	for (int i = 0; i < n; i++) {
		uint64_t bytes = (uint64_t)(sizes[i] * (double)(1ull << 30)) / 4096 * 4096;
		struct eht_share_opts so = {.size = sizeof(so), .device = 0, .chunk_bytes = chunk, .name = "bench"};
		struct eht_share_times t;
		eht_table *tab = NULL;
		int rc = eht_host_table_share_ex(bytes, g, &so, true, &tab, &t);
		struct eht_share_times all[2];
		if (eht_group_allgather(g, &t, sizeof(t), all)) {
			status = cli_fail("bench share", NULL);
			break;
		}
		if (rank == 0) {
			res[i].gib = sizes[i];
			res[i].rc = rc;
			res[i].t0 = all[0];
			res[i].t1 = all[1];
			snprintf(res[i].err, sizeof(res[i].err), "%s", rc ? eht_last_error() : "");
		}
		eht_table_close(tab);
		if (eht_group_barrier(g)) {
			status = cli_fail("bench share", NULL);
			break;
		}
	}
	eht_group_destroy(g);
	return status;
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_bench_share[] = {{"sizes", required_argument, NULL, 's'},
					 {"chunk", required_argument, NULL, 'c'},
					 {"json", no_argument, NULL, 'j'},
					 {"help", no_argument, NULL, 'h'},
					 {0}};

int bench_share(int argc, char **argv)
{
	const struct option *longopts = cli_opts_bench_share;
	const char *size_list = "1,48", *chunk_s = NULL;
	int json = 0, o;
	cli_opt_reset();
	while ((o = cli_getopt(argc, argv, "bench share", "h", longopts)) != -1) {
		if (o == 's')
			size_list = optarg;
		else if (o == 'c')
			chunk_s = optarg;
		else if (o == 'j')
			json = 1;
		else if (o == 'h') {
			printf("usage: eht bench share [--sizes GIB,GIB,...] [--chunk BYTES] [--json]\n"
			       "Seconds per GiB to create and export a host-NUMA table and to import and map it in a\n"
			       "second process, beside the anchors measured on the H200 machine. Needs a GPU.\n");
			return 0;
		} else
			return 2;
	}
	if (optind < argc)
		return cli_usage_error("bench share", "unexpected argument");
	double sizes[16];
	int n = parse_sizes(size_list, sizes, 16);
	if (n <= 0)
		return cli_usage_error("bench share", "--sizes wants GiB values like 1,48");
	uint64_t chunk = 0;
	if (chunk_s && eht_parse_size(chunk_s, &chunk))
		return cli_usage_error("bench share", "--chunk wants a size like 1G");

	/* Is there a GPU? Asked in a child: CUDA must not be initialized before the ranks fork. */
	pid_t c = fork();
	if (c == 0)
		_exit(eht_dev_count() > 0 ? 0 : 77);
	int st = 0;
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if (json) {
			json_t *r = bench_report_new("share");
			json_object_update_new(r, json_pack("{s:b, s:s, s:[]}", "gpu", 0, "reason", "no usable CUDA device",
							    "results"));
			return cli_print_json(r);
		} else
			printf("eht bench share: no GPU here; nothing measured\n");
		return 0;
	}

	char key[64];
	snprintf(key, sizeof(key), "bench.share.%d", (int)getpid());
	struct result *res = calloc((size_t)n, sizeof(*res));
	if (!res)
		return cli_error("bench share", json, "out of memory");
	pid_t peer = fork();
	if (peer == 0)
		_exit(bench_rank(1, key, sizes, n, chunk, NULL));
	int rc = bench_rank(0, key, sizes, n, chunk, res);
	waitpid(peer, &st, 0);
	if (!rc && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
		rc = cli_error("bench share", json, "the second process failed");
	else if (rc && json)
		cli_error("bench share", json, NULL);
	if (rc) {
		free(res);
		return rc;
	}
	if (json) {
		json_t *out = bench_report_new("share"), *arr = json_array();
		json_object_update_new(out, json_pack("{s:b, s:{s:f, s:f, s:f, s:f}}", "gpu", 1, "anchors_s_per_gib",
						      "create_lo", ANCHOR_CREATE_LO, "create_hi", ANCHOR_CREATE_HI, "map",
						      ANCHOR_MAP, "import_map", ANCHOR_IMPORT_MAP));
		for (int i = 0; i < n; i++) {
			const struct result *r = &res[i];
			double g = (double)r->t0.padded / (double)(1ull << 30);
			if (g <= 0)
				g = r->gib;
			int ok = r->rc == 0;
			json_t *e = json_pack("{s:f, s:b}", "gib", r->gib, "ok", ok);
			json_object_set_new(e, "handle", ok ? json_string(r->t0.handle_type == EHT_VMM_FABRIC
									      ? "fabric" : "posix-fd")
							    : json_null());
			json_object_set_new(e, "create_s_per_gib", bench_real_or_null(r->t0.create_s / g, ok));
			json_object_set_new(e, "export_s_per_gib", bench_real_or_null(r->t0.export_s / g, ok));
			json_object_set_new(e, "map_s_per_gib", bench_real_or_null(r->t0.map_s / g, ok));
			json_object_set_new(e, "import_map_s_per_gib",
					    bench_real_or_null((r->t1.import_s + r->t1.map_s) / g, ok));
			json_object_set_new(e, "error", ok ? json_null() : json_string(r->err));
			json_array_append_new(arr, e);
		}
		json_object_set_new(out, "results", arr);
		cli_print_json(out);
	} else {
		printf("host-NUMA share, seconds per GiB (anchors from the lent H200 machine in brackets)\n");
		printf("%8s %10s %18s %10s %10s %16s\n", "GiB", "handle", "create [0.22-0.33]", "export", "map [0.04]",
		       "import+map [0.03]");
		for (int i = 0; i < n; i++) {
			const struct result *r = &res[i];
			if (r->rc) {
				printf("%8.1f  failed: %s\n", r->gib, r->err);
				continue;
			}
			double g = (double)r->t0.padded / (double)(1ull << 30);
			printf("%8.1f %10s %18.3f %10.4f %10.4f %16.4f\n", r->gib,
			       r->t0.handle_type == EHT_VMM_FABRIC ? "fabric" : "posix-fd", r->t0.create_s / g,
			       r->t0.export_s / g, r->t0.map_s / g, (r->t1.import_s + r->t1.map_s) / g);
		}
	}
	free(res);
	return 0;
}
