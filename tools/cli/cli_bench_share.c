/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_share.c: `eht bench share [--sizes 1,48] [--chunk BYTES] [--json]`: seconds per GiB to
 * create and export a host-NUMA table (rank 0) and to import and map it in a second process (rank 1,
 * forked before either touches CUDA), beside the anchors measured on the lent H200 machine. Without a GPU it says
 * so and exits 0 having measured nothing. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cuda/cu_driver.h"
#include "eht.h"
#include "table/host_numa/host_numa.h"
#include "util/env.h"

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

static const char *opt_value(int argc, char **argv, const char *name)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	return NULL;
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

int bench_share(int argc, char **argv)
{
	int json = cli_has_flag(argc, argv, "--json");
	if (cli_has_flag(argc, argv, "--help")) {
		printf("usage: eht bench share [--sizes GIB,GIB,...] [--chunk BYTES] [--json]\n");
		return 0;
	}
	double sizes[16];
	int n = parse_sizes(opt_value(argc, argv, "--sizes") ? opt_value(argc, argv, "--sizes") : "1,48", sizes, 16);
	if (n <= 0)
		return cli_fail("bench share", "--sizes wants GiB values like 1,48");
	uint64_t chunk = 0;
	if (opt_value(argc, argv, "--chunk") && eht_parse_size(opt_value(argc, argv, "--chunk"), &chunk))
		return cli_fail("bench share", "--chunk wants a size like 1G");

	/* Is there a GPU? Asked in a child: CUDA must not be initialized before the ranks fork. */
	pid_t c = fork();
	if (c == 0)
		_exit(eht_cu_device_count() > 0 ? 0 : 77);
	int st = 0;
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if (json)
			printf("{\"gpu\": false, \"reason\": \"no usable CUDA device\", \"results\": []}\n");
		else
			printf("eht bench share: no GPU here; nothing measured\n");
		return 0;
	}

	char key[64];
	snprintf(key, sizeof(key), "bench.share.%d", (int)getpid());
	struct result *res = calloc((size_t)n, sizeof(*res));
	if (!res)
		return cli_fail("bench share", "out of memory");
	pid_t peer = fork();
	if (peer == 0)
		_exit(bench_rank(1, key, sizes, n, chunk, NULL));
	int rc = bench_rank(0, key, sizes, n, chunk, res);
	waitpid(peer, &st, 0);
	if (!rc && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
		rc = cli_fail("bench share", "the second process failed");
	if (rc) {
		free(res);
		return rc;
	}
	if (json) {
		printf("{\"gpu\": true, \"anchors_s_per_gib\": {\"create_lo\": %.4f, \"create_hi\": %.4f, \"map\": %.4f, "
		       "\"import_map\": %.4f}, \"results\": [",
		       ANCHOR_CREATE_LO, ANCHOR_CREATE_HI, ANCHOR_MAP, ANCHOR_IMPORT_MAP);
		for (int i = 0; i < n; i++) {
			const struct result *r = &res[i];
			double g = (double)r->t0.padded / (double)(1ull << 30);
			if (g <= 0)
				g = r->gib;
			printf("%s{\"gib\": %.3f, \"ok\": %s, \"handle\": \"%s\", \"create_s_per_gib\": %.4f, "
			       "\"export_s_per_gib\": %.4f, \"map_s_per_gib\": %.4f, \"import_map_s_per_gib\": %.4f",
			       i ? ", " : "", r->gib, r->rc ? "false" : "true",
			       r->t0.handle_type == CU_MEM_HANDLE_TYPE_FABRIC ? "fabric" : "posix-fd", r->t0.create_s / g,
			       r->t0.export_s / g, r->t0.map_s / g, (r->t1.import_s + r->t1.map_s) / g);
			if (r->rc) {
				printf(", \"error\": \"");
				for (const char *p = r->err; *p; p++)
					printf(*p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
				printf("\"");
			}
			printf("}");
		}
		printf("]}\n");
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
			       r->t0.handle_type == CU_MEM_HANDLE_TYPE_FABRIC ? "fabric" : "posix-fd", r->t0.create_s / g,
			       r->t0.export_s / g, r->t0.map_s / g, (r->t1.import_s + r->t1.map_s) / g);
		}
	}
	free(res);
	return 0;
}
