/* SPDX-License-Identifier: Apache-2.0 */
/* serve_impl.h: the server's state and its loading steps (private to src/serve). */
#ifndef EHT_SERVE_SERVE_IMPL_H
#define EHT_SERVE_SERVE_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "eht.h"
#include "table/numa_copy.h"
#include "util/pool.h"

/* One served table. */
struct served {
	char name[256];   /* table name (NAME for NAME.weight + NAME.scale) */
	char weight[256]; /* tensor names in the checkpoint */
	char scale[256];  /* "" when the table has no scale tensor */
	uint64_t rows, row_bytes, wbytes, sbytes;
	eht_table *table; /* whatever tier it was loaded in: copies[0] */
	eht_table *copies[EHT_COPIES_MAX]; /* one per NUMA node with --per-numa (eht_server.ncopies) */
	/* Its hot set (serve_hot.c): rows checked at load, nhot of them, the sealed memfd every worker
	 * gets a duplicate of, and the file they came from. hot_fd means something only when hot is set. */
	int64_t *hot;
	uint64_t nhot;
	int hot_fd;
	char hot_file[512];
};

/* The tables of the checkpoint whose weight tensor matches pattern (see eht_serve_opts). *out is
 * malloc'ed. Returns 0, -ENOENT (no match), -EINVAL or -ENOMEM. */
int serve_pick_tables(eht_ckpt *ck, const char *pattern, struct served **out, size_t *n);
/* Copies table t's rows (weight and scale joined) into dst with the pool's threads, reporting
 * progress as base_done + bytes copied of total, stopping soon after *cancel (may be NULL) turns
 * non-zero. Returns 0, -EINTR (cancelled), -EIO (SIGBUS reading the checkpoint: it shrank or its
 * device failed; names the file) or the checkpoint's error. */
int serve_fill(eht_ckpt *ck, const struct served *t, void *dst, eht_pool *pool, uint64_t base_done,
	       uint64_t total, eht_serve_progress_fn progress, void *arg, const volatile int *cancel);

/* The node's CPU budget for workers' lookup pools (serve_budget.c). */
struct serve_budget {
	unsigned cores;      /* cores for eht's pools on the node */
	unsigned workers;    /* worker processes expected to share them */
	unsigned per_worker; /* pool threads each worker is handed: cores / workers, at least 1 */
	unsigned usable;     /* cores this process may use (affinity, cgroup cpu.max) */
	const char *source;  /* "option" (cpu_budget given), or "cores" (usable less 2 per worker) */
};
/* Plans the budget from opts' cpu_budget and workers (0: defaults, see eht_serve_opts). */
void serve_budget_plan(unsigned cpu_budget, unsigned workers, struct serve_budget *b);

/* The copies, their nodes, why there is only one (or ""), and the budget, as status fields:
 * {"copies": [{"index", "numa_node", "bytes"}], "copies_note", "cpu_budget": {...}}. */
json_t *serve_copies_json(const eht_server *s);

/* Table i of a server (NULL past the end), for serve_status.c. */
const struct served *serve_table_at(const eht_server *s, size_t i);

#endif
