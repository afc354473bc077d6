/* SPDX-License-Identifier: Apache-2.0 */
/* cli_metrics.c: `eht status --metrics`: the servers' answers in the Prometheus text exposition format
 * (0.0.4), for a node exporter's textfile collector or a scrape through a small wrapper. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* A label value with \, " and newlines escaped as the format asks. */
static void label(FILE *f, const char *name, const char *v, int first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (const char *p = v ? v : ""; *p; p++) {
		if (*p == '\\' || *p == '"')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

struct family {
	const char *name, *type, *help;
};

static const struct family families[] = {
	{"eht_server_ready", "gauge", "1 once the server holds every table, 0 while it loads"},
	{"eht_server_uptime_seconds", "gauge", "seconds since the server started"},
	{"eht_server_bytes", "gauge", "bytes of tables the server holds in memory"},
	{"eht_server_workers", "gauge", "workers attached now"},
	{"eht_table_rows", "gauge", "rows of a served table"},
	{"eht_table_bytes", "gauge", "bytes of a served table"},
	{"eht_table_cpu_page_bytes", "gauge", "CPU page size the table's rows are mapped with (0: unknown)"},
	{"eht_table_hotset_rows", "gauge", "rows of the hot set served with the table"},
	{"eht_copy_workers", "gauge", "workers reading one copy of the tables (one per NUMA node with --per-numa)"},
};
enum { F_READY, F_UPTIME, F_BYTES, F_WORKERS, F_ROWS, F_TBYTES, F_PAGE, F_HOT, F_COPY, NFAM };

static long long jint(json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

/* One family's samples over every server. */
static void samples(FILE *f, int fam, json_t *servers)
{
	size_t i, j;
	json_t *s, *t;
	json_array_foreach(servers, i, s)
	{
		const char *key = json_string_value(json_object_get(s, "key"));
		if (fam <= F_WORKERS) {
			fprintf(f, "%s{", families[fam].name);
			label(f, "key", key, 1);
			if (fam == F_READY)
				fprintf(f, "} %d\n", json_is_true(json_object_get(s, "ready")));
			else if (fam == F_UPTIME)
				fprintf(f, "} %.3f\n", json_real_value(json_object_get(s, "uptime_s")));
			else if (fam == F_BYTES)
				fprintf(f, "} %lld\n", jint(s, "bytes"));
			else
				fprintf(f, "} %zu\n", json_array_size(json_object_get(s, "workers")));
			continue;
		}
		json_t *list = json_object_get(s, fam == F_COPY ? "copies" : "tables");
		json_array_foreach(list, j, t)
		{
			fprintf(f, "%s{", families[fam].name);
			label(f, "key", key, 1);
			if (fam == F_COPY) {
				char idx[32], node[32];
				snprintf(idx, sizeof(idx), "%lld", jint(t, "index"));
				snprintf(node, sizeof(node), "%lld", jint(t, "numa_node"));
				label(f, "copy", idx, 0);
				label(f, "numa_node", node, 0);
				fprintf(f, "} %lld\n", jint(t, "workers"));
				continue;
			}
			label(f, "table", json_string_value(json_object_get(t, "name")), 0);
			label(f, "tier", json_string_value(json_object_get(t, "tier")), 0);
			long long v = fam == F_ROWS ? jint(t, "rows") : fam == F_TBYTES ? jint(t, "bytes")
				    : fam == F_PAGE ? jint(t, "cpu_page_size") : jint(t, "hotset_rows");
			fprintf(f, "} %lld\n", v);
		}
	}
}

int cli_status_metrics(FILE *f, json_t *servers)
{
	for (int fam = 0; fam < NFAM; fam++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", families[fam].name, families[fam].help, families[fam].name,
			families[fam].type);
		samples(f, fam, servers);
	}
	return fflush(f) == 0 ? 0 : 1;
}
