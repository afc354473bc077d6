/* SPDX-License-Identifier: Apache-2.0 */
/* bench_cpu_limit.h: the CPU's own gather limit on a bench's table (bench_cpu_limit.c). */
#ifndef EHT_BENCH_CPU_LIMIT_H
#define EHT_BENCH_CPU_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_LIMIT_MAX_THREADS 256

struct bench_cpu_limit {
	double local_s;   /* median batch, rows into a small buffer per thread */
	double staging_s; /* median batch, rows into one buffer of every row */
	double seen_s;    /* the same, the rows the engines have just read (the others: rows nobody read) */
	double gap_s;     /* the idle before each batch of the two below; 0: not run */
	double gap_asleep_s, gap_spinning_s; /* into staging after it, the threads asleep / spinning */
	unsigned threads, prefetch, piece; /* piece: rows a thread takes at a time */
};

/* Median time of reps batches of n rows of rb bytes from table (batch b's ids, rows of table, at
 * ids + b * stride, b cycling over batches) by `threads` spinning threads (the caller one of them)
 * taking small pieces from a shared counter, prefetching `prefetch` rows ahead. Each pass reads the
 * ids' rows moved by its own offset (modulo rows), rows no engine and no earlier pass read; seen_s
 * reads the ids' own rows, last. With gap_s > 0, also into staging after gap_s idle before each
 * batch, the threads asleep on a futex through it and spinning through it. 0, or -1 (out of memory,
 * no thread). */
int bench_cpu_limit(const uint8_t *table, uint64_t rows, uint32_t rb, const int32_t *ids, size_t n, size_t batches,
		    size_t stride, unsigned threads, unsigned prefetch, int reps, double gap_s,
		    struct bench_cpu_limit *out);

#endif
