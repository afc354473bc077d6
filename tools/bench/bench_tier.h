/* SPDX-License-Identifier: Apache-2.0 */
/* bench_tier.h: the table a bench reads, made in the tier a worker reads it from (its CPU page size
 * reported): memory (the bench's own anonymous memory with THP advised, wrapped), region or
 * host-NUMA (eht_table_share, as eht serve makes them). */
#ifndef EHT_TOOLS_BENCH_TIER_H
#define EHT_TOOLS_BENCH_TIER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "eht.h"

struct bench_table {
	eht_table *t;
	void *host;  /* row 0, to fill */
	void *anon;  /* the memory tier's own mapping (NULL otherwise) */
	size_t bytes;
	char tier[16];
};

/* "memory", "region" or "host-numa"; 0, or 2 (usage error, message printed) for another word. */
int bench_tier_parse(const char *s);

/* Makes rows x rb bytes in the tier (device >= 0: pinned / GPU-mapped for it where the tier can),
 * calling fill(host, bytes, arg) on the rows before the memory tier pins them (pinning faults in
 * what is not yet). *fill_s and *make_s: the seconds each took. Returns 0, or -errno with
 * eht_last_error() set. */
int bench_table_open(const char *tier, uint64_t rows, uint64_t rb, int device,
		     void (*fill)(void *host, size_t bytes, void *arg), void *arg, double *fill_s, double *make_s,
		     struct bench_table *bt);

/* After the fill: the CPU page size the rows are mapped with (eht_table_page_size) and in words. */
uint64_t bench_table_pages(const struct bench_table *bt, char *text, size_t len);

void bench_table_close(struct bench_table *bt);

#endif
