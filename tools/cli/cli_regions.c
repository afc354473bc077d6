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
		   "creators' leftover temporary files; never a region in use.\n");
}

static const char *opt_value(int argc, char **argv, const char *name)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	return NULL;
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

static int list(int argc, char **argv)
{
	const char *dir = opt_value(argc, argv, "--dir");
	struct eht_region_entry *v = NULL;
	int n = eht_region_list(dir, &v);
	if (n < 0)
		return cli_fail("regions list", NULL);
	if (cli_has_flag(argc, argv, "--json")) {
		json_t *arr = json_array();
		for (int i = 0; i < n; i++) {
			json_array_append_new(arr, entry_json(&v[i]));
		}
		char *s = json_dumps(arr, JSON_INDENT(2));
		printf("%s\n", s ? s : "[]");
		free(s);
		json_decref(arr);
	} else if (n == 0) {
		printf("no regions\n");
	} else {
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

static int gc(int argc, char **argv)
{
	const char *dir = opt_value(argc, argv, "--dir");
	struct gc_out g = {.dry = cli_has_flag(argc, argv, "--dry-run")};
	int json = cli_has_flag(argc, argv, "--json");
	if (json)
		g.arr = json_array();
	int n = eht_region_gc(dir, g.dry ? EHT_REGION_GC_DRY_RUN : 0, gc_report, &g);
	if (n < 0) {
		json_decref(g.arr);
		return cli_fail("regions gc", NULL);
	}
	if (json) {
		json_t *o = json_pack("{s:b, s:i, s:o}", "dry_run", g.dry, "count", n, "regions", g.arr);
		char *s = json_dumps(o, JSON_INDENT(2));
		printf("%s\n", s ? s : "{}");
		free(s);
		json_decref(o);
	} else {
		printf("%s %d region(s)\n", g.dry ? "would remove" : "removed", n);
	}
	return 0;
}

int cmd_regions(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "list"))
		return list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gc"))
		return gc(argc - 1, argv + 1);
	usage(stderr);
	return 2;
}
