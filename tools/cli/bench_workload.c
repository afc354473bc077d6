/* SPDX-License-Identifier: Apache-2.0 */
/* bench_workload.c: per-step row ids for the benches: uniform, or real text hashed with the V4.1
 * layout (prefill: consecutive-token windows; decode: sequences at random positions). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_workload.h"
#include "eht.h"
#include "util/err.h"

#define COLS 24
#define PREFILL_MIN_IDS (24 * 1024)

struct bench_workload {
	char name[300];
	uint64_t rows, x;
	int32_t *ids; /* text: [tokens][COLS] scaled ids; NULL for uniform */
	size_t tokens;
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
	FILE *f = fopen(path, "rb");
	uint32_t *raw = NULL, *starts = NULL;
	int32_t *all = NULL;
	size_t nst = 0;
	json_t *sj = NULL;
	eht_engram_layout *l = NULL;
	int rc = 0;
	if (!f)
		return eht_err_sys(errno, "workload %s: open", path);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (len <= 0 || len % 4 || len > (1L << 30)) {
		rc = eht_err(EINVAL, "workload %s: %ld bytes is not a stream of uint32 ids", path, len);
		goto out;
	}
	w->tokens = (size_t)len / 4;
	raw = malloc((size_t)len);
	if (!raw || fread(raw, 1, (size_t)len, f) != (size_t)len) {
		rc = raw ? eht_err(EIO, "workload %s: short read", path) : eht_err(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < w->tokens; i++)
		if (raw[i] >= 99092) {
			rc = eht_err(EINVAL, "workload %s: id %zu is %u, not a V4.1 compressed id (< 99092)", path, i, raw[i]);
			goto out;
		}
	char sp[1100];
	snprintf(sp, sizeof(sp), "%s.starts.json", path);
	json_error_t je;
	sj = json_load_file(sp, 0, &je);
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
	struct eht_engram_info in = {.size = sizeof(in)};
	eht_engram_layout_info(l, &in);
	for (size_t i = 0; i < w->tokens; i++)
		for (int c = 0; c < COLS; c++)
			w->ids[i * COLS + c] =
			    (int32_t)((unsigned __int128)(uint64_t)all[i * 48 + c] * w->rows / in.rows[0]);
out:
	if (f)
		fclose(f);
	free(raw);
	free(starts);
	free(all);
	json_decref(sj);
	eht_engram_layout_free(l);
	return rc;
}

int bench_workload_open(const char *spec, uint64_t table_rows, uint64_t seed, struct bench_workload **out)
{
	if (!spec || !out || !table_rows || table_rows > INT32_MAX)
		return eht_err(EINVAL, "workload: bad argument");
	struct bench_workload *w = calloc(1, sizeof(*w));
	if (!w)
		return eht_err(ENOMEM, "out of memory");
	w->rows = table_rows;
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
			size_t toks = (n + COLS - 1) / COLS;
			if (toks > w->tokens)
				toks = w->tokens;
			size_t start = (size_t)(next(w) % (w->tokens - toks + 1));
			for (size_t i = 0; i < n; i++) /* a window longer than the text wraps around */
				p[i] = w->ids[(start * COLS + i) % (w->tokens * COLS)];
		} else {
			for (size_t i = 0; i < n; i += COLS) {
				size_t q = (size_t)(next(w) % w->tokens);
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

const char *bench_workload_name(const struct bench_workload *w) { return w->name; }

void bench_workload_free(struct bench_workload *w)
{
	if (!w)
		return;
	free(w->ids);
	free(w);
}
