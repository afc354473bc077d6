/* SPDX-License-Identifier: Apache-2.0 */
/* cli_serve.c: `eht serve CHECKPOINT`: host a checkpoint's tables for this node's workers until
 * SIGINT or SIGTERM. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "cli.h"
#include "eht.h"
#include "serve/serve_impl.h"
#include "table/table_impl.h"
#include "util/clock.h"

struct progress {
	double start;
	double last_print;
	int tty;
	int last_decile;
};

/* Set by the signal thread; the load checks it between chunks of rows (opts.cancel). */
static volatile int stop_loading;
static volatile int stop_signal;

/* Takes SIGINT/SIGTERM (blocked everywhere else) from the first moment, so a long load stops
 * within a fraction of a second instead of running to its end. */
static void *signal_thread(void *arg)
{
	int sig = 0;
	sigwait((sigset_t *)arg, &sig);
	__atomic_store_n(&stop_signal, sig, __ATOMIC_RELAXED);
	__atomic_store_n(&stop_loading, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void show_progress(void *arg, uint64_t done, uint64_t total, const char *table)
{
	struct progress *p = arg;
	double t = eht_now_s(), el = t - p->start;
	double rate = el > 0 ? (double)done / el : 0;
	double eta = rate > 0 ? (double)(total - done) / rate : 0;
	double frac = total ? (double)done / (double)total : 1;
	if (p->tty) {
		if (t - p->last_print < 0.1 && done < total)
			return;
		p->last_print = t;
		char bar[31];
		int fill = (int)(frac * 30);
		for (int i = 0; i < 30; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[30] = '\0';
		fprintf(stderr, "\r[%s] %6.2f / %.2f GiB  %5.2f GB/s  ETA %4.0fs  %-40.40s", bar, (double)done / (1 << 30),
			(double)total / (1 << 30), rate / 1e9, eta, table);
		if (done >= total)
			fputc('\n', stderr);
	} else {
		int decile = (int)(frac * 10);
		if (decile == p->last_decile)
			return;
		p->last_decile = decile;
		fprintf(stderr, "eht serve: loaded %.2f of %.2f GiB (%d%%) at %.2f GB/s, ETA %.0f s (%s)\n",
			(double)done / (1 << 30), (double)total / (1 << 30), decile * 10, rate / 1e9, eta, table);
	}
}

/* What --tier takes: auto, and each tier the library serves (eht_tier_caps: shared, or opened in
 * place). */
static int servable(int tier) { return (eht_tier_caps(tier) & (EHT_TIER_CAP_SHARE | EHT_TIER_CAP_IN_PLACE)) != 0; }

void cli_serve_tier_names(char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "auto");
	for (int t = 1; t <= eht_tier_count() && n < len; t++)
		if (servable(t))
			n += (size_t)snprintf(buf + n, len - n, ", %s", eht_tier_name(t));
}

static int parse_tier(const char *s)
{
	if (!s) /* never from getopt (--tier requires its value); the analyzer cannot tell */
		return -1;
	if (!strcmp(s, "auto"))
		return 0;
	int t = eht_tier_by_name(s);
	return t > 0 && servable(t) ? t : -1;
}

static void usage(FILE *f)
{
	char tiers[128];
	cli_serve_tier_names(tiers, sizeof(tiers));
	fprintf(f, "usage: eht serve CHECKPOINT [--key KEY] [--tensors PATTERN] [--tier T] [--device N]\n"
		   "                 [--threads N] [--hotset [NAME=]FILE]... [--per-numa[=NODES]]\n"
		   "                 [--workers N] [--cpu-budget N] [--ready-file PATH] [--json]\n"
		   "Loads the checkpoint's tables once and serves them to this node's workers under KEY until\n"
		   "SIGINT or SIGTERM.\n"
		   "  --key KEY          attach key (default \"default\")\n"
		   "  --tensors PATTERN  weight tensors to serve (default \"%s\")\n"
		   "  --tier T           %s (default auto)\n"
		   "                     auto takes region-pinned on huge pages when the pool (vm.nr_hugepages)\n"
		   "                     has room for a table, else the first of host-numa, region-pinned, region\n"
		   "                     that works\n"
		   "  --device N         GPU whose host NUMA node gets the tables (default 0 when there is a GPU)\n"
		   "  --threads N        loading threads (default one per CPU)\n"
		   "  --hotset [NAME=]FILE  hot set (`eht hotset build`) of table NAME, handed to every worker at\n"
		   "                     attach for its GPU hot-row cache; read and checked once, before loading.\n"
		   "                     FILE alone: for the only table served. Repeat for several tables\n"
		   "  --per-numa[=NODES] one copy of every table on each NUMA node with a GPU (or each of NODES,\n"
		   "                     e.g. 0,1); every worker attaches to its GPU's node's copy. One copy, and a\n"
		   "                     warning saying why, when they do not fit the nodes' available memory\n"
		   "  --workers N        GPU worker processes that share the CPU budget (default: one per GPU)\n"
		   "  --cpu-budget N     cores for all workers' lookup pools together (default: the cores this\n"
		   "                     process may use, by affinity and cgroup cpu.max, less 2 per worker);\n"
		   "                     each worker's pool gets N / workers threads (at least 1) unless its\n"
		   "                     EHT_THREADS or eht_lookup_opts.threads says otherwise\n"
		   "  --ready-file PATH  written (JSON status) once serving, removed on exit\n"
		   "  --json             JSON lines on stdout, one object per line: {\"event\": \"ready\", ...} once\n"
		   "                     serving, {\"event\": \"stopped\", ...} at the end; errors as {\"error\": ...}\n"
		   "Readiness: READY=1 to $NOTIFY_SOCKET (systemd Type=notify, see examples/eht-serve.service),\n"
		   "the ready file, and `eht status KEY`.\n",
		EHT_SERVE_DEFAULT_PATTERN, tiers);
}

#define MAX_HOTSETS 256

/* The copies (one per NUMA node, or why one) and the CPU budget, from the status. */
static void print_copies(const char *status)
{
	json_t *st = status ? json_loads(status, 0, NULL) : NULL, *cj;
	json_t *copies = json_object_get(st, "copies"), *note = json_object_get(st, "copies_note");
	json_t *b = json_object_get(st, "cpu_budget");
	size_t i;
	if (json_array_size(copies) > 1) {
		printf("copies: %zu, one per NUMA node:", json_array_size(copies));
		json_array_foreach(copies, i, cj)
		printf("%s %lld", i ? "," : "", json_integer_value(json_object_get(cj, "numa_node")));
		printf("; each worker attaches to its GPU's node's copy\n");
	}
	if (json_is_string(note))
		printf("copies: one for every NUMA node: %s\n", json_string_value(note));
	if (b)
		printf("CPU budget: %lld core(s) for %lld worker(s): %lld lookup pool thread(s) each (%s; %lld usable "
		       "core(s))\n",
		       json_integer_value(json_object_get(b, "cores")), json_integer_value(json_object_get(b, "workers")),
		       json_integer_value(json_object_get(b, "per_worker")),
		       !strcmp(json_string_value(json_object_get(b, "source")) ? json_string_value(json_object_get(b, "source")) : "", "option")
			       ? "--cpu-budget"
			       : "usable cores less 2 per worker",
		       json_integer_value(json_object_get(b, "usable_cores")));
	json_decref(st);
}

/* One line per served hot set, from the status (the server's own word on what workers receive). */
static void print_hotsets(const char *status)
{
	json_t *st = status ? json_loads(status, 0, NULL) : NULL, *tj;
	size_t i;
	json_array_foreach(json_object_get(st, "tables"), i, tj)
	{
		uint64_t n = (uint64_t)json_integer_value(json_object_get(tj, "hotset_rows"));
		uint64_t rb = (uint64_t)json_integer_value(json_object_get(tj, "row_bytes"));
		if (n)
			printf("hot set %s: %llu rows of table %s, handed to every worker (GPU memory per worker and "
			       "engine: %.1f MB of rows + at most %.1f MB of index)\n",
			       json_string_value(json_object_get(tj, "hotset")), (unsigned long long)n,
			       json_string_value(json_object_get(tj, "name")), (double)(n * rb) / 1e6, (double)(48 * n) / 1e6);
	}
	json_decref(st);
}

static int numa_list[16];

/* "0,1": the nodes of --per-numa=NODES. */
static int parse_nodes(const char *arg, struct eht_serve_opts *o)
{
	size_t n = 0;
	for (const char *s = arg; *s;) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 0 || v > 4095 || (*end && *end != ',') || n == 16)
			return cli_usage_error("serve", "--per-numa=NODES takes up to 16 NUMA nodes like 0,1");
		numa_list[n++] = (int)v;
		s = *end ? end + 1 : end;
	}
	o->numa_nodes = n ? numa_list : NULL;
	o->nnuma_nodes = n;
	return 0;
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_serve[] = {{"tensors", required_argument, NULL, 'p'},
					 {"key", required_argument, NULL, 'k'},
					 {"tier", required_argument, NULL, 't'},
					 {"device", required_argument, NULL, 'd'},
					 {"threads", required_argument, NULL, 'T'},
					 {"ready-file", required_argument, NULL, 'r'},
					 {"json", no_argument, NULL, 'j'},
					 {"hotset", required_argument, NULL, 'H'},
					 {"per-numa", optional_argument, NULL, 'N'},
					 {"workers", required_argument, NULL, 'W'},
					 {"cpu-budget", required_argument, NULL, 'B'},
					 {"help", no_argument, NULL, 'h'},
					 {0}};

static int parse_serve(int argc, char **argv, struct eht_serve_opts *o, const char **path, const char **ready_file,
		       int *json, const char **hotsets)
{
	const struct option *longopts = cli_opts_serve;
	int c, v = 0;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "serve", "h", longopts)) != -1) {
		switch (c) {
		case 'p':
			o->pattern = optarg;
			break;
		case 'k':
			o->key = optarg;
			break;
		case 't':
			o->tier = parse_tier(optarg);
			if (o->tier < 0) {
				char tiers[128], msg[192];
				cli_serve_tier_names(tiers, sizeof(tiers));
				snprintf(msg, sizeof(msg), "--tier takes %s, not '%s'", tiers, optarg);
				return cli_usage_error("serve", msg);
			}
			break;
		case 'd':
			if (cli_int("serve", "--device", optarg, &o->device))
				return 2;
			break;
		case 'T':
			if (cli_int("serve", "--threads", optarg, &v))
				return 2;
			if (v < 0)
				return cli_usage_error("serve", "--threads takes a count >= 0");
			o->threads = (unsigned)v;
			break;
		case 'r':
			*ready_file = optarg;
			break;
		case 'j':
			*json = 1;
			break;
		case 'H':
			if (o->nhotsets == MAX_HOTSETS)
				return cli_usage_error("serve", "at most 256 --hotset");
			hotsets[o->nhotsets++] = optarg;
			break;
		case 'N':
			o->flags |= EHT_SERVE_PER_NUMA;
			if (optarg && parse_nodes(optarg, o))
				return 2;
			break;
		case 'W':
		case 'B':
			if (cli_int("serve", c == 'W' ? "--workers" : "--cpu-budget", optarg, &v))
				return 2;
			if (v < 1)
				return cli_usage_error("serve", c == 'W' ? "--workers takes a count >= 1"
									 : "--cpu-budget takes a core count >= 1");
			*(c == 'W' ? &o->workers : &o->cpu_budget) = (unsigned)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return 2;
		}
	}
	if (optind >= argc)
		return cli_usage_error("serve", "no CHECKPOINT given (a .safetensors file or a checkpoint directory)");
	if (optind + 1 < argc)
		return cli_usage_error("serve", "one CHECKPOINT only");
	*path = argv[optind];
	return -1;
}

int cmd_serve(int argc, char **argv)
{
	struct eht_serve_opts o = {.size = sizeof(o), .device = -1};
	const char *path = NULL, *ready_file = NULL;
	int json = 0;
	static const char *hotsets[MAX_HOTSETS];
	int prc = parse_serve(argc, argv, &o, &path, &ready_file, &json, hotsets);
	if (prc >= 0)
		return prc;
	o.hotsets = hotsets;
	const char *key = o.key ? o.key : "default";

	/* Signals are taken with sigwait: block them before any thread starts. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_t sigt;
	if (pthread_create(&sigt, NULL, signal_thread, &set) != 0)
		return cli_error("serve", json, "cannot start the signal thread");

	struct progress p = {.start = eht_now_s(), .tty = cli_progress_tty(), .last_decile = -1};
	o.progress = show_progress;
	o.progress_arg = &p;
	o.cancel = &stop_loading;
	eht_server *s = NULL;
	if (eht_serve_start(path, &o, &s) != 0) {
		if (__atomic_load_n(&stop_signal, __ATOMIC_RELAXED)) {
			pthread_join(sigt, NULL);
			if (p.tty)
				fputc('\n', stderr);
			return cli_errorf("serve", 1, "%s during the load: stopped; nothing was left behind",
					  stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
		}
		int rc = cli_error("serve", json, NULL);
		pthread_kill(sigt, SIGTERM); /* taken by its sigwait: ends the thread */
		pthread_join(sigt, NULL);
		return rc;
	}
	double secs = eht_now_s() - p.start;
	uint64_t total = 0;
	if (!json)
		printf("%-44s %12s %6s %-14s %5s  %s\n", "TABLE", "ROWS", "BYTES", "TIER", "NUMA", "CPU PAGES");
	for (size_t i = 0; i < eht_serve_table_count(s); i++) {
		struct eht_table_info info = {.size = sizeof(info)};
		if (eht_serve_table_info(s, i, &info) == 0) {
			const struct served *sv = serve_table_at(s, i);
			char pt[64];
			if (!json)
				printf("%-44s %12llu %6llu %-14s %5d  %s\n", info.name, (unsigned long long)info.rows,
				       (unsigned long long)info.row_bytes, eht_tier_name(info.tier), info.numa_node,
				       sv && sv->table ? eht_table_page_text(sv->table, pt, sizeof(pt)) : "?");
			if (info.host) /* loaded into memory, not read in place */
				total += info.rows * info.row_bytes;
		}
	}
	char *status = NULL;
	if (eht_serve_status(key, &status) != 0)
		status = NULL; /* no status socket: the reports below still go out */
	json_t *stj = status ? json_loads(status, 0, NULL) : NULL;
	if (json_array_size(json_object_get(stj, "copies")) > 1) /* every copy is in memory */
		total = (uint64_t)json_integer_value(json_object_get(stj, "bytes"));
	json_decref(stj);
	if (json) {
		json_t *st = status ? json_loads(status, 0, NULL) : NULL;
		cli_print_json_line(json_pack("{s:s, s:s, s:f, s:o}", "event", "ready", "key", key, "load_s", secs, "status",
					 st ? st : json_null()));
	} else {
		print_hotsets(status);
		print_copies(status);
		printf("eht serve: %zu table(s), %.2f GiB loaded in %.1f s; serving under key '%s' "
		       "(workers: eht_attach(\"%s\") or eht.attach(\"%s\")); SIGINT or SIGTERM stops\n",
		       eht_serve_table_count(s), (double)total / (1 << 30), secs, key, key, key);
	}
	fflush(stdout);
	int rc = 0;
	if (ready_file) {
		int w = cli_write_file_atomic(ready_file, status ? status : "{}");
		if (w) {
			rc = cli_errorf("serve", 1, "cannot write the ready file: %s", eht_last_error());
		}
	}
	free(status);
	char note[256];
	snprintf(note, sizeof(note), "READY=1\nSTATUS=serving %zu table(s), %.2f GiB under key %s\nMAINPID=%d",
		 eht_serve_table_count(s), (double)total / (1 << 30), key, (int)getpid());
	(void)!cli_sd_notify(note);
	if (rc)
		pthread_kill(sigt, SIGTERM); /* taken by its sigwait: ends the thread */
	pthread_join(sigt, NULL);
	int sig = rc ? 0 : stop_signal;
	(void)!cli_sd_notify("STOPPING=1");
	if (ready_file && !rc)
		unlink(ready_file);
	unsigned clients = eht_serve_clients(s);
	unsigned long long attaches = (unsigned long long)eht_serve_attaches(s);
	int src = eht_serve_stop(s);
	const char *why = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "error";
	if (json)
		cli_print_json_line(json_pack("{s:s, s:s, s:s, s:I, s:i}", "event", "stopped", "key", key, "signal", why,
					 "attaches", (json_int_t)attaches, "workers_attached", (int)clients));
	else
		printf("eht serve: %s: stopped after %llu attach(es), %u worker(s) still attached; tables released\n", why,
		       attaches, clients);
	if (src)
		return cli_error("serve", json, NULL);
	return rc;
}
