/* SPDX-License-Identifier: Apache-2.0 */
/* serve_load.c: choosing a checkpoint's tables and copying their rows into shared tables, weight and
 * scale joined per row, with several threads and progress reports. */
#include "serve/serve_impl.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/err.h"
#include "util/log.h"
#include "os/mem_guard.h"
#include "util/pool.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int row_bytes_of(const struct eht_st_tensor_info *t, uint64_t *rb)
{
	if (t->ndim != 2)
		return eht_err(EINVAL, "tensor %s has %u dimensions; tables are 2-D [rows, cols]", t->name, t->ndim);
	uint64_t bits = t->shape[1] * (uint64_t)eht_dtype_bits(t->dtype);
	if (bits % 8)
		return eht_err(EINVAL, "tensor %s: a row of %llu bits is not whole bytes", t->name, (unsigned long long)bits);
	*rb = bits / 8;
	return 0;
}

/* A pattern is one or more globs separated by '|' (tensor names never hold '|'). */
static int pattern_match(const char *pattern, const char *name)
{
	char one[512];
	for (const char *p = pattern;;) {
		const char *bar = strchr(p, '|');
		size_t l = bar ? (size_t)(bar - p) : strlen(p);
		if (l < sizeof(one)) {
			memcpy(one, p, l);
			one[l] = '\0';
			if (fnmatch(one, name, 0) == 0)
				return 1;
		}
		if (!bar)
			return 0;
		p = bar + 1;
	}
}

int serve_pick_tables(eht_ckpt *ck, const char *pattern, struct served **out, size_t *n_out)
{
	size_t n = eht_ckpt_count(ck), count = 0;
	struct served *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return eht_err(ENOMEM, "serve: out of memory");
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
		if ((rc = eht_ckpt_tensor(ck, i, &w)) != 0)
			break;
		if (!pattern_match(pattern, w.name))
			continue;
		struct served *t = &v[count];
		/* Table and tensor names are kept in 256 bytes: a longer one would be cut and then not found. */
		if (strlen(w.name) >= sizeof(t->weight)) {
			rc = eht_err(ENAMETOOLONG, "tensor '%.60s...' of %s: its name has %zu characters: name too long "
						   "(table names are at most %zu)",
				     w.name, eht_ckpt_path(ck), strlen(w.name), sizeof(t->weight) - 1);
			break;
		}
		if ((rc = row_bytes_of(&w, &t->wbytes)) != 0)
			break;
		t->rows = w.shape[0];
		snprintf(t->weight, sizeof(t->weight), "%s", w.name);
		snprintf(t->name, sizeof(t->name), "%s", w.name);
		if (ends_with(w.name, ".weight")) {
			char scale[sizeof(t->scale)];
			size_t base = strlen(w.name) - strlen(".weight");
			snprintf(scale, sizeof(scale), "%.*s.scale", (int)base, w.name);
			if (eht_ckpt_find(ck, scale, &s) == 0) {
				if ((rc = row_bytes_of(&s, &t->sbytes)) != 0)
					break;
				/* Joined rows are read as Engram rows (e4m3 weights, e8m0 block scales, the
				 * bf16 format dequantizes them): other dtypes would be served as garbage. */
				if (w.dtype != EHT_DTYPE_F8_E4M3 || s.dtype != EHT_DTYPE_F8_E8M0) {
					rc = eht_err(EINVAL,
						     "%s (%s) with %s (%s) is not an Engram table (F8_E4M3 weight with "
						     "F8_E8M0 scale); serve it with a --tensors pattern naming other tensors",
						     w.name, eht_dtype_name(w.dtype), scale, eht_dtype_name(s.dtype));
					break;
				}
				if (s.shape[0] != t->rows) {
					rc = eht_err(EINVAL, "%s has %llu rows but %s has %llu", w.name,
						     (unsigned long long)t->rows, scale, (unsigned long long)s.shape[0]);
					break;
				}
				snprintf(t->scale, sizeof(t->scale), "%s", scale);
				t->name[base] = '\0'; /* table NAME for NAME.weight + NAME.scale */
			}
		}
		t->row_bytes = t->wbytes + t->sbytes;
		count++;
	}
	if (!rc && count == 0)
		rc = eht_err(ENOENT, "no tensor of %s matches '%s'", eht_ckpt_path(ck), pattern);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n_out = count;
	return 0;
}

#define LOAD_ROWS_PER_TASK 8192

struct load_job {
	unsigned char *dst;
	const unsigned char *w, *s;
	uint64_t rows, wb, sb;
	const volatile int *cancel;
	atomic_uint_fast64_t done_rows;
	atomic_uint_fast64_t tasks_done; /* finished, copied or not: the waiter's exit condition */
	atomic_int err;                  /* first error: -EIO (SIGBUS) or -EINTR (cancelled) */
	atomic_uint_fast64_t bad_row;    /* first row of the task that faulted */
};

struct load_span {
	struct load_job *j;
	uint64_t first, end;
};

static void copy_span(void *arg)
{
	const struct load_span *sp = arg;
	const struct load_job *j = sp->j;
	uint64_t rb = j->wb + j->sb;
	if (!j->s) {
		memcpy(j->dst + sp->first * rb, j->w + sp->first * rb, (sp->end - sp->first) * rb);
		return;
	}
	for (uint64_t r = sp->first; r < sp->end; r++) {
		memcpy(j->dst + r * rb, j->w + r * j->wb, j->wb);
		memcpy(j->dst + r * rb + j->wb, j->s + r * j->sb, j->sb);
	}
}

static void load_task(void *arg, size_t task, unsigned worker)
{
	struct load_job *j = arg;
	struct load_span sp = {.j = j, .first = (uint64_t)task * LOAD_ROWS_PER_TASK};
	sp.end = sp.first + LOAD_ROWS_PER_TASK < j->rows ? sp.first + LOAD_ROWS_PER_TASK : j->rows;
	int rc = 0;
	if (atomic_load(&j->err))
		rc = 0; /* an earlier task failed: skip the rest quickly */
	else if (j->cancel && __atomic_load_n(j->cancel, __ATOMIC_RELAXED))
		rc = -EINTR;
	/* The checkpoint is a file mapping: a file that shrinks under it must fail the load, not kill
	 * the server with SIGBUS. */
	else if ((rc = eht_guarded_call(copy_span, &sp)) == 0)
		atomic_fetch_add(&j->done_rows, sp.end - sp.first);
	int zero = 0;
	if (rc && atomic_compare_exchange_strong(&j->err, &zero, rc))
		atomic_store(&j->bad_row, sp.first);
	atomic_fetch_add(&j->tasks_done, 1);
}

int serve_fill(eht_ckpt *ck, const struct served *t, void *dst, eht_pool *pool, uint64_t base_done,
	       uint64_t total, eht_serve_progress_fn progress, void *arg, const volatile int *cancel)
{
	struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
	int rc = eht_ckpt_find(ck, t->weight, &w);
	if (!rc && t->scale[0])
		rc = eht_ckpt_find(ck, t->scale, &s);
	if (rc)
		return rc;
	struct load_job j = {.dst = dst, .w = w.data, .s = t->scale[0] ? s.data : NULL, .rows = t->rows,
			     .wb = t->wbytes, .sb = t->sbytes, .cancel = cancel};
	size_t tasks = (size_t)((t->rows + LOAD_ROWS_PER_TASK - 1) / LOAD_ROWS_PER_TASK);
	eht_pool_start(pool, tasks, load_task, &j);
	/* The pool works; this thread reports progress every 50 ms until every task is done (a
	 * cancelled or failed load skips its remaining tasks, so this ends quickly too). */
	while (atomic_load(&j.tasks_done) < tasks) {
		if (progress)
			progress(arg, base_done + atomic_load(&j.done_rows) * t->row_bytes, total, t->name);
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	eht_pool_wait(pool);
	rc = atomic_load(&j.err);
	if (rc == -EINTR)
		return eht_err(EINTR, "loading table %s: stopped by a signal", t->name);
	if (rc) {
		uint64_t r = atomic_load(&j.bad_row);
		return eht_err(EIO,
			       "loading table %s: reading rows [%llu, %llu) of %s (or %s) failed: the file shrank or its "
			       "device failed while loading (SIGBUS caught)",
			       t->name, (unsigned long long)r, (unsigned long long)(r + LOAD_ROWS_PER_TASK), w.path,
			       t->scale[0] ? s.path : w.path);
	}
	if (progress)
		progress(arg, base_done + t->rows * t->row_bytes, total, t->name);
	return 0;
}
