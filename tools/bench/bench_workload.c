/* SPDX-License-Identifier: Apache-2.0 */
/* bench_workload.c: per-step row ids for the benches: uniform, or real text hashed with the V4.1
 * layout (prefill: consecutive-token windows; decode: sequences at random positions). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_workload.h"
#include "eht.h"
#include "util/err.h"
#include "util/file.h"

#define COLS 24
#define PREFILL_MIN_IDS (24 * 1024)

struct bench_workload {
	char name[300];
	uint64_t rows, x;
	int32_t *ids; /* text: [tokens][COLS] scaled ids; NULL for uniform */
	size_t tokens;
	size_t begin, end; /* tokens the steps are drawn from (bench_workload_set_range) */
	int layer;         /* layer index hashed */
};

static uint64_t next(struct bench_workload *w)
{
	w->x ^= w->x << 13, w->x ^= w->x >> 7, w->x ^= w->x << 17;
	return w->x;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

static int load_text(struct bench_workload *w, const char *path)
{
	uint32_t *raw = NULL, *starts = NULL;
	int32_t *all = NULL;
	size_t nst = 0, len = 0;
	json_t *sj = NULL;
	eht_engram_layout *l = NULL;
	char *text = NULL;
	/* The file rule (util/file.h): a FIFO named as the workload (or its starts) fails, never blocks. */
	int rc = eht_file_read_all(path, "workload", (size_t)1 << 30, &text, &len);
	if (rc)
		return rc;
	raw = (uint32_t *)(void *)text;
	if (len == 0 || len % 4) {
		rc = eht_err(EINVAL, "workload %s: %zu bytes is not a stream of uint32 ids", path, len);
		goto out;
	}
	w->tokens = len / 4;
	for (size_t i = 0; i < w->tokens; i++)
		if (raw[i] >= 99092) {
			rc = eht_err(EINVAL, "workload %s: id %zu is %u, not a V4.1 compressed id (< 99092)", path, i, raw[i]);
			goto out;
		}
	char sp[1100];
	snprintf(sp, sizeof(sp), "%s.starts.json", path);
	json_error_t je;
	char *sjt = NULL;
	size_t sjn = 0;
	if (access(sp, F_OK) == 0) { /* optional: no starts file, one document */
		if ((rc = eht_file_read_all(sp, "workload starts", 64u << 20, &sjt, &sjn)))
			goto out;
		sj = json_loadb(sjt, sjn, 0, &je);
		free(sjt);
	}
	nst = sj && json_is_array(sj) ? json_array_size(sj) : 0;
	starts = malloc((nst + 2) * sizeof(*starts));
	if (!starts) {
		rc = eht_err(ENOMEM, "out of memory");
		goto out;
	}
	size_t nr = 0;
	starts[nr++] = 0;
	for (size_t i = 0; i < nst; i++) {
		json_int_t v = json_integer_value(json_array_get(sj, i));
		if (v > (json_int_t)starts[nr - 1] && (size_t)v < w->tokens)
			starts[nr++] = (uint32_t)v; /* documents in order; 0 and repeats skipped */
	}
	starts[nr] = (uint32_t)w->tokens;
	if ((rc = eht_engram_layout_preset("v41", &l)))
		goto out;
	struct eht_engram_info in = {.size = sizeof(in)};
	eht_engram_layout_info(l, &in);
	if (w->layer < 0 || (uint32_t)w->layer >= in.n_layers) {
		rc = eht_err(EINVAL, "workload %s: layer index %d (the layout has %u)", path, w->layer, in.n_layers);
		goto out;
	}
	if (!w->rows)
		w->rows = in.rows[w->layer];
	all = malloc(w->tokens * 48 * sizeof(*all));
	w->ids = malloc(w->tokens * COLS * sizeof(*w->ids));
	if (!all || !w->ids) {
		rc = eht_err(ENOMEM, "out of memory");
		goto out;
	}
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = w->tokens, .tokens = (const int32_t *)raw,
				     .n_requests = nr, .starts = starts};
	if ((rc = eht_engram_hash(l, &b, all)))
		goto out;
	for (size_t i = 0; i < w->tokens; i++)
		for (int c = 0; c < COLS; c++)
			w->ids[i * COLS + c] = (int32_t)((unsigned __int128)(uint64_t)all[i * 48 + w->layer * COLS + c] *
							 w->rows / in.rows[w->layer]);
	w->begin = 0;
	w->end = w->tokens;
out:
	free(raw);
	free(starts);
	free(all);
	json_decref(sj);
	eht_engram_layout_free(l);
	return rc;
}

int bench_workload_open(const char *spec, uint64_t table_rows, uint64_t seed, struct bench_workload **out)
{
	if (!table_rows)
		return eht_err(EINVAL, "workload: bad argument");
	return bench_workload_open_layer(spec, table_rows, 0, seed, out);
}

int bench_workload_open_layer(const char *spec, uint64_t table_rows, int layer, uint64_t seed,
			      struct bench_workload **out)
{
	if (!spec || !out || table_rows > INT32_MAX || (!table_rows && strncmp(spec, "text:", 5)))
		return eht_err(EINVAL, "workload: bad argument");
	struct bench_workload *w = calloc(1, sizeof(*w));
	if (!w)
		return eht_err(ENOMEM, "out of memory");
	w->rows = table_rows;
	w->layer = layer;
	w->x = seed ? seed : 0x853c49e6748fea9bull;
	int rc = 0;
	if (!strcmp(spec, "uniform")) {
		snprintf(w->name, sizeof(w->name), "uniform");
	} else if (!strncmp(spec, "text:", 5) && spec[5]) {
		snprintf(w->name, sizeof(w->name), "text:%s", spec + 5);
		rc = load_text(w, spec + 5);
	} else {
		rc = eht_err(EINVAL, "workload '%s': use uniform or text:FILE", spec);
	}
	if (rc) {
		bench_workload_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int bench_workload_fill(struct bench_workload *w, size_t n, size_t steps, size_t stride, int32_t *ids,
			double *distinct)
{
	int32_t *tmp = distinct ? malloc(n * sizeof(*tmp) + 1) : NULL;
	if (distinct && !tmp)
		return eht_err(ENOMEM, "out of memory");
	double sum = 0;
	for (size_t s = 0; s < steps; s++) {
		int32_t *p = ids + s * stride;
		if (!w->ids) {
			for (size_t i = 0; i < n; i++)
				p[i] = (int32_t)(next(w) % w->rows);
		} else if (n >= PREFILL_MIN_IDS) {
			size_t toks = (n + COLS - 1) / COLS, len = w->end - w->begin;
			if (toks > len)
				toks = len;
			size_t start = (size_t)(next(w) % (len - toks + 1));
			for (size_t i = 0; i < n; i++) /* a window longer than the range wraps around inside it */
				p[i] = w->ids[w->begin * COLS + (start * COLS + i) % (len * COLS)];
		} else {
			for (size_t i = 0; i < n; i += COLS) {
				size_t q = w->begin + (size_t)(next(w) % (w->end - w->begin));
				for (size_t c = 0; c < COLS && i + c < n; c++)
					p[i + c] = w->ids[q * COLS + c];
			}
		}
		if (tmp && n) {
			memcpy(tmp, p, n * sizeof(*tmp));
			qsort(tmp, n, sizeof(*tmp), cmp_i32);
			size_t d = 1;
			for (size_t i = 1; i < n; i++)
				d += tmp[i] != tmp[i - 1];
			sum += (double)d / (double)n;
		}
	}
	free(tmp);
	if (distinct)
		*distinct = steps ? sum / (double)steps : 0;
	return 0;
}

size_t bench_workload_tokens(const struct bench_workload *w) { return w->ids ? w->tokens : 0; }
uint64_t bench_workload_rows(const struct bench_workload *w) { return w->rows; }

int bench_workload_set_range(struct bench_workload *w, size_t begin, size_t end)
{
	if (!w->ids)
		return eht_err(EINVAL, "workload %s: a token range needs a text workload", w->name);
	if (begin >= end || end > w->tokens)
		return eht_err(EINVAL, "workload %s: token range [%zu, %zu) not inside [0, %zu)", w->name, begin, end,
			       w->tokens);
	w->begin = begin;
	w->end = end;
	return 0;
}

struct hot_count {
	int32_t id;
	uint32_t n;
};

static int cmp_count(const void *a, const void *b)
{
	const struct hot_count *x = a, *y = b;
	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id);
}

int bench_workload_hotset(const struct bench_workload *w, size_t k, size_t skip_begin, size_t skip_end,
			  int64_t **rows, size_t *nrows, double *coverage)
{
	*rows = NULL;
	*nrows = 0;
	if (!w->ids)
		return eht_err(EINVAL, "workload %s: a hot set is learned from a text workload", w->name);
	if (skip_end > w->tokens)
		skip_end = w->tokens;
	if (skip_begin > skip_end)
		skip_begin = skip_end;
	size_t ntok = w->tokens - (skip_end - skip_begin), n = ntok * COLS;
	if (!n)
		return eht_err(EINVAL, "workload %s: no tokens left to learn a hot set from", w->name);
	int32_t *all = malloc(n * sizeof(*all));
	struct hot_count *c = malloc(n * sizeof(*c));
	int rc = 0;
	if (!all || !c) {
		rc = eht_err(ENOMEM, "out of memory");
		goto out;
	}
	memcpy(all, w->ids, skip_begin * COLS * sizeof(*all));
	memcpy(all + skip_begin * COLS, w->ids + skip_end * COLS, (w->tokens - skip_end) * COLS * sizeof(*all));
	qsort(all, n, sizeof(*all), cmp_i32);
	size_t nc = 0;
	for (size_t i = 0; i < n; i++) {
		if (nc && c[nc - 1].id == all[i])
			c[nc - 1].n++;
		else
			c[nc++] = (struct hot_count){all[i], 1};
	}
	qsort(c, nc, sizeof(*c), cmp_count); /* most frequent first; ties by row: deterministic */
	if (k > nc)
		k = nc;
	if (!(*rows = malloc((k ? k : 1) * sizeof(**rows)))) {
		rc = eht_err(ENOMEM, "out of memory");
		goto out;
	}
	uint64_t hit = 0;
	for (size_t i = 0; i < k; i++) {
		(*rows)[i] = c[i].id;
		hit += c[i].n;
	}
	*nrows = k;
	if (coverage)
		*coverage = (double)hit / (double)n;
out:
	free(all);
	free(c);
	return rc;
}

const char *bench_workload_name(const struct bench_workload *w) { return w->name; }

void bench_workload_free(struct bench_workload *w)
{
	if (!w)
		return;
	free(w->ids);
	free(w);
}
