/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h: the `eht` subcommands; each lives in its own file and returns the process exit status. */
#ifndef EHT_CLI_H
#define EHT_CLI_H

#include <stdio.h>

int cmd_info(int argc, char **argv);     /* cli_info.c */
int cmd_synth(int argc, char **argv);    /* cli_synth.c */
int cmd_probe(int argc, char **argv);    /* cli_probe.c */
int cmd_regions(int argc, char **argv);  /* cli_regions.c */
int cmd_serve(int argc, char **argv);    /* cli_serve.c */
int cmd_worker(int argc, char **argv);   /* cli_worker.c */
int cmd_hash(int argc, char **argv);     /* cli_hash.c */
int cmd_bench(int argc, char **argv);    /* cli_bench.c: dispatches to the bench_* below */
int bench_lookup(int argc, char **argv); /* cli_bench_lookup.c */
int bench_region(int argc, char **argv); /* cli_bench_region.c */
int bench_share(int argc, char **argv);  /* cli_bench_share.c */
int bench_disk(int argc, char **argv);   /* cli_bench_disk.c */
int bench_hash(int argc, char **argv);   /* cli_bench_hash.c */

/* Prints "eht CMD: <eht_last_error()>" (or msg when given) to stderr and returns 1. */
int cli_fail(const char *cmd, const char *msg);
/* Monotonic seconds, for timings. */
double cli_now_s(void);
/* qsort comparator of doubles (medians of timings). */
int cli_cmp_double(const void *a, const void *b);
/* True when argv has the flag (e.g. "--json"). */
int cli_has_flag(int argc, char **argv, const char *flag);

#endif
