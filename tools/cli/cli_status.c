/* SPDX-License-Identifier: Apache-2.0 */
/* cli_status.c: `eht status [KEY] [--json]`: what the running servers of this node hold, for whom,
 * and whether they are ready (asked over each server's status socket). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eht.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: eht status [KEY] [--json | --metrics]\n"
		   "Asks the running servers of this user (eht serve, or any program serving with libeht) what\n"
		   "they hold: key, checkpoint, tables (tier, NUMA node, bytes), attached workers (pid, uid),\n"
		   "uptime and readiness. With KEY, that server only (exit 1 when none holds it).\n"
		   "  --json   {\"servers\": [...]}, the servers' answers, with KEY or without (one server or\n"
		   "           none or several); errors as {\"error\": ...}\n"
		   "  --metrics the same in the Prometheus text exposition format (0.0.4): per server readiness,\n"
		   "           uptime, bytes held and workers attached; per table rows, bytes, CPU page size and\n"
		   "           hot-set rows (labels key, table, tier); workers per copy\n");
}

static void human(uint64_t b, char *buf, size_t n)
{
	if (b >= (1ull << 30))
		snprintf(buf, n, "%.2f GiB", (double)b / (double)(1ull << 30));
	else
		snprintf(buf, n, "%.1f MiB", (double)b / (double)(1ull << 20));
}

/* A string field of a server's answer, "?" where it is missing or not a string (a server of another
 * eht version): never NULL into printf. */
static const char *field(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? v : "?";
}

static void print_server(json_t *s)
{
	char b[32];
	human((uint64_t)json_integer_value(json_object_get(s, "bytes")), b, sizeof(b));
	json_t *workers = json_object_get(s, "workers"), *tables = json_object_get(s, "tables");
	printf("key %s  pid %lld  %s  up %.0f s  %s in memory  %zu table(s)  %zu worker(s)\n",
	       field(s, "key"), json_integer_value(json_object_get(s, "pid")),
	       field(s, "state"), json_real_value(json_object_get(s, "uptime_s")), b,
	       json_array_size(tables), json_array_size(workers));
	printf("  checkpoint %s\n", field(s, "checkpoint"));
	if (!json_is_true(json_object_get(s, "ready"))) {
		char d[32], t[32];
		human((uint64_t)json_integer_value(json_object_get(s, "loaded_bytes")), d, sizeof(d));
		human((uint64_t)json_integer_value(json_object_get(s, "load_bytes")), t, sizeof(t));
		printf("  loading: %s of %s\n", d, t);
	}
	size_t i;
	json_t *t;
	json_array_foreach(tables, i, t)
	{
		human((uint64_t)json_integer_value(json_object_get(t, "bytes")), b, sizeof(b));
		printf("  table %-44s %-13s node %2lld %12lld rows x %4lld B  %s  pages %s\n",
		       field(t, "name"), field(t, "tier"),
		       json_integer_value(json_object_get(t, "numa_node")), json_integer_value(json_object_get(t, "rows")),
		       json_integer_value(json_object_get(t, "row_bytes")), b, field(t, "cpu_pages"));
		json_t *hr = json_object_get(t, "hotset_rows"), *hf = json_object_get(t, "hotset");
		if (json_integer_value(hr) > 0)
			printf("    hot set %lld rows%s%s\n", json_integer_value(hr), json_is_string(hf) ? " from " : "",
			       json_is_string(hf) ? json_string_value(hf) : "");
	}
	json_t *copies = json_object_get(s, "copies"), *note = json_object_get(s, "copies_note");
	json_array_foreach(copies, i, t)
	{
		human((uint64_t)json_integer_value(json_object_get(t, "bytes")), b, sizeof(b));
		printf("  copy %lld on NUMA node %lld: %s, read by %lld worker(s)\n", json_integer_value(json_object_get(t, "index")),
		       json_integer_value(json_object_get(t, "numa_node")), b, json_integer_value(json_object_get(t, "workers")));
	}
	if (json_is_string(note))
		printf("  one copy for every NUMA node: %s\n", json_string_value(note));
	json_t *bud = json_object_get(s, "cpu_budget");
	if (bud)
		printf("  CPU budget %lld core(s) for %lld worker(s): %lld pool thread(s) each\n",
		       json_integer_value(json_object_get(bud, "cores")), json_integer_value(json_object_get(bud, "workers")),
		       json_integer_value(json_object_get(bud, "per_worker")));
	json_array_foreach(workers, i, t)
	{
		char place[96] = "";
		json_t *dev = json_object_get(t, "device"), *node = json_object_get(t, "numa_node"), *cp = json_object_get(t, "copy");
		if (json_is_integer(cp))
			snprintf(place, sizeof(place), "  GPU %s%lld  node %s%lld  copy %lld  %lld pool thread(s)",
				 json_is_integer(dev) ? "" : "-", json_is_integer(dev) ? json_integer_value(dev) : 1,
				 json_is_integer(node) ? "" : "-", json_is_integer(node) ? json_integer_value(node) : 1,
				 json_integer_value(cp), json_integer_value(json_object_get(t, "pool_threads")));
		printf("  worker pid %lld uid %lld attached %.0f s ago%s\n", json_integer_value(json_object_get(t, "pid")),
		       json_integer_value(json_object_get(t, "uid")), json_real_value(json_object_get(t, "attached_s")), place);
	}
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_status[] = {{"json", no_argument, NULL, 'j'}, {"metrics", no_argument, NULL, 'm'},
					 {"help", no_argument, NULL, 'h'}, {0}};

int cmd_status(int argc, char **argv)
{
	const struct option *longopts = cli_opts_status;
	int json = 0, metrics = 0, c;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "status", "h", longopts)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'm') {
			metrics = 1;
			continue;
		}
		if (c != 'j')
			return 2;
		json = 1;
	}
	if (json && metrics)
		return cli_usage_error("status", "--json or --metrics, not both");
	if (optind + 1 < argc)
		return cli_usage_error("status", "one KEY at most");
	const char *key = optind < argc ? argv[optind] : NULL;
	char *text = NULL;
	if (eht_serve_status(key, &text) != 0)
		return cli_error("status", json, NULL);
	json_error_t je;
	json_t *v = json_loads(text, 0, &je);
	free(text);
	if (!v)
		return cli_error("status", json, "unreadable answer");
	if (metrics) {
		json_t *servers = json_is_array(v) ? v : json_pack("[O]", v);
		int rc = cli_status_metrics(stdout, servers);
		json_decref(servers);
		if (!json_is_array(v))
			json_decref(v);
		return rc;
	}
	if (json) /* one shape with KEY and without: a list of servers */
		return cli_print_json(json_pack("{s:o}", "servers", json_is_array(v) ? v : json_pack("[o]", v)));
	if (json_is_array(v) && json_array_size(v) == 0)
		printf("no eht server runs on this node for this user\n");
	else if (json_is_array(v)) {
		size_t i;
		json_t *s;
		json_array_foreach(v, i, s) print_server(s);
	} else
		print_server(v);
	json_decref(v);
	return 0;
}
