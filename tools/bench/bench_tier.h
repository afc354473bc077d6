/* SPDX-License-Identifier: Apache-2.0 */
/* bench_tier.h: the table a bench reads, made in the tier a worker reads it from (its CPU page size
 * reported): memory (the bench's own anonymous memory with THP advised, wrapped), or a tier
 * eht_table_share makes (host-numa, region-pinned, region: as eht serve makes them). */
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

/* Whether a bench can make its table in tier: one eht_table_wrap makes (EHT_TIER_CAP_WRAP: the
 * bench's own memory) or eht_table_share does (EHT_TIER_CAP_SHARE). */
int bench_tier_can(int tier);
/* Their names, comma-separated, into buf (`eht --list bench-tiers`, messages). 0 or -ENOSPC. */
int bench_tier_names(char *buf, size_t len);
/* 0 when s names such a tier; else 2, the usage error printed for cmd (listing them). */
int bench_tier_parse(const char *cmd, const char *s);

/* Makes rows x rb bytes in the tier named (device >= 0: pinned / GPU-mapped for it where the tier can),
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
