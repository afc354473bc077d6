/* SPDX-License-Identifier: Apache-2.0 */
/* bench.h: `eht bench KIND` (one file per bench) and the harness they share (bench_harness.c):
 * timings and their statistics, the JSON envelope of every report, the cells of the human tables,
 * and the machine's own ceilings (pinned H2D bandwidth, drive IOPS) measured in the same run. */
#ifndef EHT_BENCH_H
#define EHT_BENCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The benches, each `eht bench NAME ARGS...` (argv[0] is NAME); exit status 0, 1 or 2. */
int bench_lookup(int argc, char **argv); /* bench_lookup.c */
int bench_region(int argc, char **argv); /* bench_region.c */
int bench_share(int argc, char **argv);  /* bench_share.c */
int bench_disk(int argc, char **argv);   /* bench_disk.c (and bench_disk_mem.c for --mem-limit) */
int bench_hash(int argc, char **argv);   /* bench_hash.c */
int bench_step(int argc, char **argv);   /* bench_step.c: python3 -m eht.bench_step (needs torch) */

/* ---- timing ---- */
/* Monotonic seconds: eht_now_s() of util/clock.h, the library's one clock. */
/* qsort comparator of doubles. */
int bench_cmp_double(const void *a, const void *b);
/* Statistics of n timings (sorted in place): median v[n/2], p90 v[min(9n/10, n-1)] and the mean,
 * each times scale (1e3: seconds to ms). */
struct bench_stats {
	double median, p90, mean;
};
void bench_stats(double *v, int n, double scale, struct bench_stats *out);

/* Sleeps s seconds (a signal does not cut it short): the idle a model's step leaves between lookups. */
void bench_idle(double s);

/* CPU seconds of eht's own threads in this process, by their names (util/thread.h: the lookup pool's
 * workers, the doorbell poller), from /proc's schedstat (nanoseconds; clock ticks of stat
 * where the kernel keeps no schedstat). Zeros without /proc (bench_threads.c). */
struct bench_thread_cpu {
	double pool_s, poller_s;
};
void bench_thread_cpu(struct bench_thread_cpu *out);

/* ---- reports ---- */
/* Where a bench's progress lines go: stderr under --json (stdout is the report), else stdout. */
static inline FILE *bench_info(int json) { return json ? stderr : stdout; }
/* A report's envelope: {"bench": what, "eht_version", "host", "time_utc" (ISO 8601)}. */
json_t *bench_report_new(const char *what);
/* json_real(v), or null where the figure does not apply (or is NaN). */
json_t *bench_real_or_null(double v, int applies);
/* A human table's cell: fmt of v into buf, or "-" (none) where the figure does not apply. */
const char *bench_cell(char *buf, size_t len, const char *fmt, double v, int applies, const char *none);

/* ---- the machine's ceilings ---- */
/* Whether GPU dev serves this run (not --cpu, and present). */
int bench_gpu(int cpu, int dev);
/* Best of 6 pinned H2D copies of 256 MiB on GPU dev, timed with events, GB/s (0, said on stderr as
 * "eht CMD: ...", where it could not be measured). */
double bench_link_gbs(int dev, const char *cmd);
/* 4 KiB O_DIRECT random reads of the first `bytes` of path from nthreads threads for `seconds`:
 * IOPS, or 0 with why in note. */
double bench_drive_iops(const char *path, unsigned nthreads, double seconds, uint64_t bytes, char *note, size_t nl);
/* Default table size of a memory bench: a quarter of avail bytes, at most 48 GiB (said on info). */
double bench_default_gib(uint64_t avail, FILE *info); /* bench_size.c */

#endif
