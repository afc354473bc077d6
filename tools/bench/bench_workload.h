/* SPDX-License-Identifier: Apache-2.0 */
/* bench_workload.h: per-step row ids for the benches: uniform, or real text hashed with the V4.1 layout. */
#ifndef EHT_CLI_BENCH_WORKLOAD_H
#define EHT_CLI_BENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

struct bench_workload;

/* spec: "uniform", or "text:FILE" with FILE a stream of compressed ids (uint32 LE; documents listed
 * by FILE.starts.json when it exists, each one request). The text is hashed once with the V4.1
 * layout (identity token map); layer 1's 24 ids per token are scaled to table_rows (id * table_rows /
 * layer rows, order kept). Returns 0 or -errno with eht_last_error() set. */
int bench_workload_open(const char *spec, uint64_t table_rows, uint64_t seed, struct bench_workload **out);
/* The same for Engram layer index `layer` (0: the first, V4.1's layer 1; 1: layer 14); table_rows 0:
 * the layer's own rows, unscaled (text only). */
int bench_workload_open_layer(const char *spec, uint64_t table_rows, int layer, uint64_t seed,
			      struct bench_workload **out);
/* Tokens of a text workload (0: uniform), and the row count ids are scaled to. */
size_t bench_workload_tokens(const struct bench_workload *w);
uint64_t bench_workload_rows(const struct bench_workload *w);
/* Steps are drawn from tokens [begin, end) only (a text workload): the measurement part of the text,
 * apart from the part a hot set was learned on. Returns 0 or -EINVAL. */
int bench_workload_set_range(struct bench_workload *w, size_t begin, size_t end);
/* The k most frequent ids (most frequent first, ties by id) over every token outside [skip_begin,
 * skip_end): *rows malloc'd, *n <= k (fewer when fewer distinct ids), *coverage the fraction of those
 * tokens' ids they take. Returns 0, -EINVAL (uniform workload, nothing to learn from), -ENOMEM. */
int bench_workload_hotset(const struct bench_workload *w, size_t k, size_t skip_begin, size_t skip_end,
			  int64_t **rows, size_t *n, double *coverage);
/* Fills steps steps of n ids each (step s at ids + s * stride). A step of n >= 24 * 1024 ids is a
 * prefill window (n / 24 consecutive tokens at a random position); a smaller one is a decode step (n
 * / 24 sequences, one token each at random positions). *distinct (may be NULL): the mean fraction of
 * distinct ids per step. Returns 0 or -ENOMEM. */
int bench_workload_fill(struct bench_workload *w, size_t n, size_t steps, size_t stride, int32_t *ids,
			double *distinct);
const char *bench_workload_name(const struct bench_workload *w);
void bench_workload_free(struct bench_workload *w);

#endif
