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

#include "cli.h"
#include "eht.h"

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
	double t = cli_now_s(), el = t - p->start;
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

static int parse_tier(const char *s)
{
	if (!strcmp(s, "auto"))
		return 0;
	if (!strcmp(s, "host-numa"))
		return EHT_TIER_HOST_NUMA;
	if (!strcmp(s, "region"))
		return EHT_TIER_REGION;
	if (!strcmp(s, "region-pinned"))
		return EHT_TIER_REGION_PINNED;
	if (!strcmp(s, "disk"))
		return EHT_TIER_DISK;
	return -1;
}

int cmd_serve(int argc, char **argv)
{
	struct eht_serve_opts o = {.size = sizeof(o), .device = -1};
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--tensors") && v)
			o.pattern = argv[++i];
		else if (!strcmp(a, "--key") && v)
			o.key = argv[++i];
		else if (!strcmp(a, "--tier") && v) {
			o.tier = parse_tier(argv[++i]);
			if (o.tier < 0)
				return cli_fail("serve", "--tier takes auto, host-numa, region-pinned, region or disk");
		} else if (!strcmp(a, "--device") && v)
			o.device = atoi(argv[++i]);
		else if (!strcmp(a, "--threads") && v)
			o.threads = (unsigned)atoi(argv[++i]);
		else if (a[0] == '-' || path) {
			fprintf(stderr, "usage: eht serve CHECKPOINT [--tensors PATTERN] [--tier auto|host-numa|region|disk]\n"
					"                 [--key KEY] [--device N] [--threads N]\n");
			return 2;
		} else
			path = a;
	}
	if (!path)
		return cli_fail("serve", "no checkpoint given (a .safetensors file or a checkpoint directory)");
	const char *key = o.key ? o.key : "default";

	/* Signals are taken with sigwait: block them before any thread starts. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_t sigt;
	if (pthread_create(&sigt, NULL, signal_thread, &set) != 0)
		return cli_fail("serve", "cannot start the signal thread");

	struct progress p = {.start = cli_now_s(), .tty = isatty(2), .last_decile = -1};
	o.progress = show_progress;
	o.progress_arg = &p;
	o.cancel = &stop_loading;
	eht_server *s = NULL;
	if (eht_serve_start(path, &o, &s) != 0) {
		if (__atomic_load_n(&stop_signal, __ATOMIC_RELAXED)) {
			pthread_join(sigt, NULL);
			fprintf(stderr, "\neht serve: %s during the load: stopped; nothing was left behind\n",
				stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
			return 1;
		}
		int rc = cli_fail("serve", NULL);
		pthread_kill(sigt, SIGTERM); /* taken by its sigwait: ends the thread */
		pthread_join(sigt, NULL);
		return rc;
	}
	double secs = cli_now_s() - p.start;
	uint64_t total = 0;
	printf("%-44s %12s %6s %-14s %5s %9s\n", "TABLE", "ROWS", "BYTES", "TIER", "NUMA", "PAGE");
	for (size_t i = 0; i < eht_serve_table_count(s); i++) {
		struct eht_table_info info = {.size = sizeof(info)};
		if (eht_serve_table_info(s, i, &info) == 0) {
			printf("%-44s %12llu %6llu %-14s %5d %8lluK\n", info.name, (unsigned long long)info.rows,
			       (unsigned long long)info.row_bytes, eht_tier_name(info.tier), info.numa_node,
			       (unsigned long long)(info.page_size >> 10));
			if (info.tier != EHT_TIER_DISK)
				total += info.rows * info.row_bytes;
		}
	}
	printf("eht serve: %zu table(s), %.2f GiB loaded in %.1f s; serving under key '%s' "
	       "(workers: eht_attach(\"%s\") or eht.attach(\"%s\")); SIGINT or SIGTERM stops\n",
	       eht_serve_table_count(s), (double)total / (1 << 30), secs, key, key, key);
	fflush(stdout);
	pthread_join(sigt, NULL);
	int sig = stop_signal;
	unsigned clients = eht_serve_clients(s);
	unsigned long long attaches = (unsigned long long)eht_serve_attaches(s);
	int rc = eht_serve_stop(s);
	printf("eht serve: %s: stopped after %llu attach(es), %u worker(s) still attached; tables released\n",
	       sig == SIGINT ? "SIGINT" : "SIGTERM", attaches, clients);
	return rc ? cli_fail("serve", NULL) : 0;
}
