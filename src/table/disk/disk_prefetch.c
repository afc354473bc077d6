/* SPDX-License-Identifier: Apache-2.0 */
/* disk_prefetch.c: the disk tier's prefetch: tickets, a dispatcher thread that sorts, deduplicates and
 * gathers each ticket's rows with a deep pool of reader threads, and the lookups' side (serve). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/disk/disk_impl.h"
#include "util/err.h"
#include "util/radix.h"
#include "util/log.h"
#include "util/thread.h"

/* Reader threads spin briefly: they wait on the disk, not on each other. */
#define IO_SPIN_US 50u
#define IO_TASK_ROWS 64u


/* Sorts and deduplicates v[0..n) in place (radix sort through tmp, n entries); returns the count. */
static size_t disk_sort_unique(uint64_t *v, size_t n, uint64_t *tmp)
{
	uint64_t maxv = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] > maxv)
			maxv = v[i];
	uint64_t *a = eht_radix_sort(v, tmp, n, 0, maxv);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || v[u - 1] != a[i])
			v[u++] = a[i]; /* writing v while reading a == tmp or v itself at i >= u: safe */
	return u;
}

/* ------------------------------------------------------------------- dispatcher */
struct io_job {
	struct disk *d;
	struct eht_disk_ticket *tk;
	atomic_int err;
};

static void io_task(void *arg, size_t task, unsigned worker)
{
	(void)worker;
	struct io_job *j = arg;
	struct eht_disk_ticket *tk = j->tk;
	size_t b = task * IO_TASK_ROWS, e = b + IO_TASK_ROWS < tk->nu ? b + IO_TASK_ROWS : tk->nu;
	int rc = disk_read_direct(j->d, tk->rows + b, e - b, tk->buf + b * j->d->rb);
	if (rc) {
		int zero = 0;
		if (atomic_compare_exchange_strong(&j->err, &zero, rc))
			snprintf(tk->errmsg, sizeof(tk->errmsg), "%s", eht_last_error());
	}
}

static void gather(struct disk *d, struct eht_disk_ticket *tk)
{
	tk->nu = disk_sort_unique(tk->rows, tk->nu, tk->tmp);
	struct io_job j = {.d = d, .tk = tk};
	atomic_init(&j.err, 0);
	if (tk->nu)
		eht_pool_run(d->io_pool, (tk->nu + IO_TASK_ROWS - 1) / IO_TASK_ROWS, io_task, &j);
	tk->err = atomic_load(&j.err);
	if (tk->err)
		tk->nu = 0; /* serve nothing: the lookup reads the rows itself and reports the error */
}

static struct eht_disk_ticket *oldest(struct disk *d, int min_state)
{
	struct eht_disk_ticket *best = NULL;
	for (unsigned i = 0; i < d->nslots; i++) {
		struct eht_disk_ticket *tk = &d->tk[i];
		if (tk->state >= min_state && (!best || tk->seq < best->seq))
			best = tk;
	}
	return best;
}

static void *dispatcher_main(void *arg)
{
	struct disk *d = arg;
	eht_thread_name("eht-disk-read");
	pthread_mutex_lock(&d->mu);
	while (!d->stop) {
		struct eht_disk_ticket *tk = NULL;
		for (unsigned i = 0; i < d->nslots; i++)
			if (d->tk[i].state == TK_QUEUED && (!tk || d->tk[i].seq < tk->seq))
				tk = &d->tk[i];
		if (!tk) {
			pthread_cond_wait(&d->cv, &d->mu);
			continue;
		}
		tk->state = TK_READING;
		pthread_mutex_unlock(&d->mu);
		gather(d, tk);
		pthread_mutex_lock(&d->mu);
		tk->state = TK_READY;
		pthread_cond_broadcast(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* ------------------------------------------------------------------- set-up */
int disk_prefetch_init(struct disk *d)
{
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->tk = calloc(d->nslots, sizeof(*d->tk));
	if (!d->tk)
		return eht_err(ENOMEM, "disk: out of memory");
	for (unsigned i = 0; i < d->nslots; i++) {
		d->tk[i].d = d;
		d->tk[i].slot = i;
	}
	return 0;
}

/* Buffers, reader pool and dispatcher, made on the first prefetch (tables that never prefetch do
 * not pay for them). Called under d->mu. */
static int start(struct disk *d)
{
	if (d->started)
		return 0;
	size_t pr = d->prefetch_rows;
	for (unsigned i = 0; i < d->nslots; i++) {
		struct eht_disk_ticket *tk = &d->tk[i];
		/* (kept from a call that ran out of memory part way: the next call's start goes on from them) */
		tk->rows = tk->rows ? tk->rows : malloc(pr * sizeof(uint64_t));
		tk->tmp = tk->tmp ? tk->tmp : malloc(pr * sizeof(uint64_t));
		tk->buf = tk->buf ? tk->buf : malloc(pr * d->rb);
		if (!tk->rows || !tk->tmp || !tk->buf)
			return eht_err(ENOMEM, "disk: out of memory for %u prefetch buffers of %zu rows", d->nslots, pr);
	}
	int rc = eht_pool_create(d->io_threads > 1 ? d->io_threads - 1 : 1, -1, IO_SPIN_US, &d->io_pool);
	if (rc)
		return eht_err_prefix(rc, "disk: prefetch reader threads");
	if ((rc = pthread_create(&d->dispatcher, NULL, dispatcher_main, d)) != 0) {
		eht_pool_destroy(d->io_pool);
		d->io_pool = NULL;
		return eht_err(rc, "disk: starting the prefetch thread: %s", strerror(rc));
	}
	d->started = true;
	return 0;
}

/* The slots and their lock, once no ticket is out any more. */
static void slots_free(struct disk *d)
{
	free(d->tk);
	d->tk = NULL;
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
}

bool disk_prefetch_fini(struct disk *d)
{
	if (!d->tk)
		return true;
	if (d->started) {
		pthread_mutex_lock(&d->mu);
		d->stop = true;
		pthread_cond_broadcast(&d->cv);
		pthread_mutex_unlock(&d->mu);
		pthread_join(d->dispatcher, NULL); /* finishes the ticket it reads */
	}
	eht_pool_destroy(d->io_pool);
	d->io_pool = NULL;
	/* A ticket still out stays valid (its caller may wait on it or release it at any time, even on
	 * another thread now): it is done, holds no rows, and says why. */
	unsigned out = 0;
	pthread_mutex_lock(&d->mu);
	for (unsigned i = 0; i < d->nslots; i++) {
		struct eht_disk_ticket *tk = &d->tk[i];
		while (tk->users)
			pthread_cond_wait(&d->cv, &d->mu);
		if (tk->state != TK_FREE) {
			out++;
			tk->state = TK_READY;
			tk->nu = 0;
			tk->err = EBADF;
			snprintf(tk->errmsg, sizeof(tk->errmsg), "prefetch ticket of table %s: the table was closed",
				 d->t ? d->t->name : "?");
		}
		free(tk->rows);
		free(tk->tmp);
		free(tk->buf);
		tk->rows = tk->tmp = NULL;
		tk->buf = NULL;
	}
	d->closed = true;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	if (out) {
		eht_debug("disk table closed with %u unreleased prefetch ticket(s): they fail until released", out);
		return false;
	}
	slots_free(d);
	return true;
}

/* ------------------------------------------------------------------- public */
int eht_disk_prefetch(eht_table *t, const void *ids, int id_type, int64_t off, uint64_t count, uint32_t flags,
		      eht_disk_ticket **out)
{
	struct disk *d = disk_from_table(t);
	if (out)
		*out = NULL;
	if (!d || !out || (!ids && count))
		return eht_err(EINVAL, "eht_disk_prefetch: %s", !d ? "not a disk table" : "NULL ids or out");
	if (flags)
		return eht_err(EINVAL, "eht_disk_prefetch: unknown flags 0x%x", flags);
	if (id_type != EHT_ID_INT32 && id_type != EHT_ID_INT64)
		return eht_err(EINVAL, "eht_disk_prefetch: unknown id type %d", id_type);
	pthread_mutex_lock(&d->mu);
	int rc = start(d);
	struct eht_disk_ticket *tk = NULL;
	for (unsigned i = 0; i < d->nslots && !rc && !tk; i++)
		if (d->tk[i].state == TK_FREE)
			tk = &d->tk[i];
	if (!rc && !tk)
		rc = eht_err(EBUSY, "eht_disk_prefetch: table %s: all %u prefetch slots hold unreleased tickets",
			     t->name, d->nslots);
	if (!rc) {
		tk->state = TK_FILLING;
		tk->seq = d->next_seq++;
		atomic_fetch_add(&d->active, 1);
	}
	pthread_mutex_unlock(&d->mu);
	if (rc)
		return rc;
	/* The ids' live rows, on the caller's thread (a copy: the caller may reuse ids at once). */
	size_t n = count < d->prefetch_rows ? (size_t)count : (size_t)d->prefetch_rows, m = 0;
	int64_t lo = (int64_t)d->first_row, hi = lo + (int64_t)d->local_rows;
	for (size_t i = 0; i < n; i++) {
		int64_t v = id_type == EHT_ID_INT64 ? ((const int64_t *)ids)[i] : ((const int32_t *)ids)[i];
		int64_t r = (int64_t)((uint64_t)v + (uint64_t)off);
		if (r >= lo && r < hi)
			tk->rows[m++] = (uint64_t)r;
	}
	tk->nids = n;
	tk->nu = m;
	tk->err = 0;
	tk->errmsg[0] = '\0';
	pthread_mutex_lock(&d->mu);
	tk->state = TK_QUEUED;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	*out = tk;
	return 0;
}

static int wait_locked(struct eht_disk_ticket *tk)
{
	struct disk *d = tk->d;
	while (tk->state != TK_READY)
		pthread_cond_wait(&d->cv, &d->mu);
	return tk->err;
}

int eht_disk_wait(eht_disk_ticket *tk)
{
	if (!tk)
		return eht_err(EINVAL, "eht_disk_wait: NULL ticket");
	struct disk *d = tk->d;
	pthread_mutex_lock(&d->mu);
	int rc = tk->state == TK_FREE ? -EINVAL : wait_locked(tk);
	pthread_mutex_unlock(&d->mu);
	if (rc == -EINVAL && !tk->err)
		return eht_err(EINVAL, "eht_disk_wait: the ticket was released");
	return rc ? eht_err(rc, "%s", tk->errmsg) : 0;
}

uint64_t eht_disk_ticket_rows(const eht_disk_ticket *tk)
{
	if (!tk)
		return 0;
	struct disk *d = tk->d;
	pthread_mutex_lock(&d->mu);
	uint64_t n = tk->state == TK_READY ? tk->nu : 0;
	pthread_mutex_unlock(&d->mu);
	return n;
}

int eht_disk_release(eht_disk_ticket *tk)
{
	if (!tk)
		return 0;
	struct disk *d = tk->d;
	pthread_mutex_lock(&d->mu);
	if (tk->state == TK_FREE) {
		pthread_mutex_unlock(&d->mu);
		return eht_err(EINVAL, "eht_disk_release: the ticket was already released");
	}
	int rc = wait_locked(tk);
	while (tk->users)
		pthread_cond_wait(&d->cv, &d->mu);
	rc = rc ? eht_err(rc, "%s", tk->errmsg) : 0; /* now: the last release after close frees tk */
	tk->state = TK_FREE;
	bool last = atomic_fetch_sub(&d->active, 1) == 1 && d->closed;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	if (last) {
		slots_free(d);
		free(d);
	}
	return rc;
}

/* First index in v[lo, n) whose value is >= key, galloping from lo (rows usually arrive in order). */
static size_t lower_bound(const uint64_t *v, size_t lo, size_t n, uint64_t key)
{
	size_t step = 1, hi = lo;
	while (hi < n && v[hi] < key) {
		lo = hi + 1;
		hi += step;
		step *= 2;
	}
	if (hi > n)
		hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t disk_prefetch_serve(struct disk *d, const uint64_t *rows, size_t n, uint8_t *dst, uint8_t *done)
{
	memset(done, 0, n);
	if (!atomic_load_explicit(&d->active, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&d->mu);
	struct eht_disk_ticket *tk = oldest(d, TK_FILLING);
	if (tk) {
		wait_locked(tk);
		tk->users++;
	}
	pthread_mutex_unlock(&d->mu);
	if (!tk)
		return 0;
	size_t served = 0, pos = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && rows[i] < rows[i - 1])
			pos = 0; /* out of order: search from the start */
		pos = lower_bound(tk->rows, pos, tk->nu, rows[i]);
		if (pos < tk->nu && tk->rows[pos] == rows[i]) {
			memcpy(dst + i * d->rb, tk->buf + pos * d->rb, d->rb);
			done[i] = 1;
			served++;
		}
	}
	disk_count(d->ctr, DC_PREFETCH_HITS, served);
	pthread_mutex_lock(&d->mu);
	if (--tk->users == 0)
		pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	return served;
}
