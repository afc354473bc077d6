/* SPDX-License-Identifier: Apache-2.0 */
/* cli_regions.c: `eht regions list|gc`: the shared regions of this node, and removal of stale ones. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eht.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: eht regions list [--dir D] [--json]\n"
		   "       eht regions gc [--dir D] [--dry-run] [--json]\n"
		   "The directory defaults to $EHT_SHM_DIR, else /dev/shm. gc removes regions whose creator died\n"
		   "before ready (stale), unlink-when-mapped regions nobody maps (orphaned), unreadable ones and\n"
		   "creators' leftover temporary files (once $EHT_REGION_GC_GRACE_S old, at once where the creator\n"
		   "pid in their name is gone); never a region in use.\n"
		   "  --dir D    the directory of regions\n"
		   "  --dry-run  gc: list what it would delete, delete nothing\n"
		   "  --json     one object: {\"regions\": [...]} (list), {\"dry_run\", \"count\", \"regions\"} (gc)\n");
}

/* Options of both subcommands. */
struct ropts {
	const char *dir;
	int json, dry;
};

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_regions[] = {{"dir", required_argument, NULL, 'd'},
					 {"json", no_argument, NULL, 'j'},
					 {"dry-run", no_argument, NULL, 'n'},
					 {"help", no_argument, NULL, 'h'},
					 {0}};

static int parse(int argc, char **argv, const char *cmd, int allow_dry, struct ropts *o)
{
	const struct option *longopts = cli_opts_regions;
	int c;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, cmd, "h", longopts)) != -1) {
		switch (c) {
		case 'd':
			o->dir = optarg;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'n':
			if (!allow_dry)
				return cli_usage_error(cmd, "--dry-run belongs to eht regions gc");
			o->dry = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument");
	return -1;
}

static json_t *entry_json(const struct eht_region_entry *e)
{
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", e->mode);
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:b, s:s, s:i, s:i, s:s, s:i, s:i, s:f}",
			 "name", e->name, "state", eht_region_state_name(e->state), "bytes", (json_int_t)e->bytes,
			 "file_bytes", (json_int_t)e->file_bytes, "allocated", (json_int_t)e->allocated, "rows",
			 (json_int_t)e->rows, "row_bytes", (json_int_t)e->row_bytes, "page_size",
			 (json_int_t)e->page_size, "numa_node", e->numa_node, "creator_pid", e->creator_pid,
			 "creator_alive", e->creator_alive, "lifecycle", e->unlink_when_mapped ? "unlink-when-mapped" : "keep",
			 "attached", (int)e->attached, "expected_peers", (int)e->expected_peers, "mode",
			 mode, "uid", (int)e->uid, "gid", (int)e->gid, "age_s", e->age_s);
}

static void human_size(uint64_t b, char *buf, size_t n)
{
	if (b >= (1ull << 30))
		snprintf(buf, n, "%.2f GiB", (double)b / (double)(1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, n, "%.1f MiB", (double)b / (double)(1ull << 20));
	else
		snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
}

/* Tables held by running servers (their region files are unlinked once mapped, so the directory
 * does not show them): one entry per table of a memory tier, state "served". */
static json_t *served_entries(void)
{
	char *text = NULL;
	json_t *out = json_array();
	if (eht_serve_status(NULL, &text) != 0) {
		fprintf(stderr, "eht regions list: cannot ask running servers: %s\n", eht_last_error());
		return out;
	}
	json_t *servers = json_loads(text, 0, NULL);
	free(text);
	size_t i, j;
	json_t *s, *t;
	json_array_foreach(servers, i, s)
	{
		json_array_foreach(json_object_get(s, "tables"), j, t)
		{
			/* Tables read in place (from the checkpoint's files) hold no memory of a region. */
			if (!json_is_true(json_object_get(t, "in_memory")))
				continue;
			json_array_append_new(out, json_pack("{s:O, s:s, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:I}", "name",
							     json_object_get(t, "name"), "state", "served", "tier",
							     json_object_get(t, "tier"), "bytes", json_object_get(t, "bytes"),
							     "rows", json_object_get(t, "rows"), "row_bytes",
							     json_object_get(t, "row_bytes"), "page_size",
							     json_object_get(t, "page_size"), "numa_node",
							     json_object_get(t, "numa_node"), "key", json_object_get(s, "key"),
							     "server_pid", json_object_get(s, "pid"), "attached",
							     (json_int_t)json_array_size(json_object_get(s, "workers"))));
		}
	}
	json_decref(servers);
	return out;
}

int cmd_regions_list(int argc, char **argv)
{
	struct ropts o = {0};
	int prc = parse(argc, argv, "regions list", 0, &o);
	if (prc >= 0)
		return prc;
	struct eht_region_entry *v = NULL;
	int n = eht_region_list(o.dir, &v);
	if (n < 0)
		return cli_error("regions list", o.json, NULL);
	json_t *served = served_entries();
	if (o.json) {
		json_t *arr = json_array();
		for (int i = 0; i < n; i++) {
			json_array_append_new(arr, entry_json(&v[i]));
		}
		json_array_extend(arr, served);
		json_decref(served);
		eht_region_list_free(v);
		return cli_print_json(arr ? json_pack("{s:o}", "regions", arr) : NULL);
	}
	if (n == 0 && json_array_size(served) == 0) {
		printf("no regions\n");
	} else if (n > 0) {
		printf("%-32s %-9s %11s %11s %5s %8s %-20s %5s %s\n", "NAME", "STATE", "SIZE", "ALLOCATED", "NODE",
		       "CREATOR", "LIFECYCLE", "MODE", "AGE");
		for (int i = 0; i < n; i++) {
			const struct eht_region_entry *e = &v[i];
			char sz[24], al[24], cr[24], life[32];
			human_size(e->bytes, sz, sizeof(sz));
			human_size(e->allocated, al, sizeof(al));
			if (e->creator_pid)
				snprintf(cr, sizeof(cr), "%d%s", e->creator_pid, e->creator_alive ? "" : "(gone)");
			else
				snprintf(cr, sizeof(cr), "-");
			if (e->unlink_when_mapped)
				snprintf(life, sizeof(life), "unlink at %u/%u", e->attached, e->expected_peers);
			else
				snprintf(life, sizeof(life), "keep");
			printf("%-32s %-9s %11s %11s %5d %8s %-20s %04o %.0fs\n", e->name,
			       eht_region_state_name(e->state), sz, al, e->numa_node, cr, life, e->mode, e->age_s);
		}
	}
	if (json_array_size(served)) {
		printf("held by running servers (unlinked once mapped; eht status shows more):\n");
		printf("%-44s %-13s %11s %5s %8s %-16s %s\n", "TABLE", "TIER", "SIZE", "NODE", "SERVER", "KEY", "WORKERS");
		size_t i;
		json_t *e;
		json_array_foreach(served, i, e)
		{
			char sz[24];
			human_size((uint64_t)json_integer_value(json_object_get(e, "bytes")), sz, sizeof(sz));
			printf("%-44s %-13s %11s %5lld %8lld %-16s %lld\n", json_string_value(json_object_get(e, "name")),
			       json_string_value(json_object_get(e, "tier")), sz,
			       json_integer_value(json_object_get(e, "numa_node")),
			       json_integer_value(json_object_get(e, "server_pid")),
			       json_string_value(json_object_get(e, "key")),
			       json_integer_value(json_object_get(e, "attached")));
		}
	}
	json_decref(served);
	eht_region_list_free(v);
	return 0;
}

struct gc_out {
	json_t *arr;
	int dry;
};

static void gc_report(const struct eht_region_entry *e, void *arg)
{
	struct gc_out *g = arg;
	if (g->arr) {
		json_array_append_new(g->arr, json_pack("{s:s, s:s, s:I}", "name", e->name, "state",
							eht_region_state_name(e->state), "bytes", (json_int_t)e->bytes));
		return;
	}
	char sz[24];
	human_size(e->file_bytes, sz, sizeof(sz));
	printf("%s %s region %s (%s)\n", g->dry ? "would remove" : "removed", eht_region_state_name(e->state), e->name,
	       sz);
}

int cmd_regions_gc(int argc, char **argv)
{
	struct ropts o = {0};
	int prc = parse(argc, argv, "regions gc", 1, &o);
	if (prc >= 0)
		return prc;
	struct gc_out g = {.dry = o.dry};
	int json = o.json;
	if (json)
		g.arr = json_array();
	int n = eht_region_gc(o.dir, g.dry ? EHT_REGION_GC_DRY_RUN : 0, gc_report, &g);
	if (n < 0) {
		json_decref(g.arr);
		return cli_error("regions gc", json, NULL);
	}
	if (json) {
		if (cli_print_json(json_pack("{s:b, s:i, s:o}", "dry_run", g.dry, "count", n, "regions", g.arr)))
			return 1;
	} else {
		printf("%s %d region(s)\n", g.dry ? "would remove" : "removed", n);
	}
	return 0;
}
