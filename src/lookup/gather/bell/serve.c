/* SPDX-License-Identifier: Apache-2.0 */
/* serve.c: the CPU side of a rung request (serve.h): the pool gathers chunk c of the request into
 * staging slot c % nslots, then sets ready[slot] = the request's tag | (c + 1); the stage-in kernel
 * copies each slot into the output as soon as it is ready and frees it (ready[slot] = 0), so gather,
 * transfer and the CPU's next chunks overlap. A background request is served group by group
 * (serve_bg.c). */
#include <errno.h>
#include <string.h>

#include "gpu/kernels/lookup_const.h"
#include "lookup/gather/bell/requests.h"
#include "lookup/gather/rows.h"
#include "lookup/gather/bell/serve.h"
#include "lookup/gather/bell/serve_bg.h"
#include "lookup/gather/bell/trace.h"
#include "util/clock.h"
#include "util/cpu.h"
#include "util/err.h"

struct bell_job {
	eht_lookup *lk;
	const struct lk_req *r;
	size_t n; /* rows of this request (of a compact one: what its kernel found) */
	unsigned idx;
	uint32_t chunk, nslots;
	double t0;
	double t_first; /* EHT_TEST_BELL_TRACE: when chunk 0 was published */
	struct lk_joins *joins; /* EHT_TEST_BELL_TRACE: when each worker joined */
};

static void bell_task(void *arg, size_t c, unsigned worker)
{
	struct bell_job *j = arg;
	if (j->joins)
		eht_lk_joins_seen(j->joins, worker);
	eht_lookup *lk = j->lk;
	struct lk_bell *b = lk->bell;
	const struct lk_req *r = j->r;
	uint32_t slot = (uint32_t)(c % j->nslots);
	if (c >= j->nslots) {
		/* The slot's previous chunk must be gathered (by another thread) and then read by the GPU. */
		while (atomic_load_explicit(&b->slot_pub[slot], memory_order_acquire) != (unsigned)(c - j->nslots + 1) ||
		       atomic_load_explicit(&eht_lk_ready(b)[slot], memory_order_acquire) != 0) {
			if (eht_now_s() - j->t0 > LK_STALL_S) {
				eht_lk_bell_fail(b, eht_err(ETIMEDOUT, "lookup: the GPU did not take chunk %zu of a stream-triggered gather on table %s in %.0f s",
						     c - j->nslots, lk->ti.name, LK_STALL_S));
				break;
			}
			eht_cpu_relax();
		}
	}
	size_t begin = c * j->chunk, end = begin + j->chunk < j->n ? begin + j->chunk : j->n;
	uint64_t dead = 0;
	uint8_t *dst = b->staging + (size_t)slot * j->chunk * lk->rb;
	int rc = eht_lk_gather_ids(lk, r->ids, r->id64, r->off, begin, end, dst, lk->rb, EHT_LOOKUP_RAW, &dead);
	if (rc) {
		eht_lk_bell_fail(b, rc);
		memset(dst, 0, (end - begin) * lk->rb); /* the GPU still gets the chunk: it must not wait forever */
	}
	b->cdead[c] = dead;
	/* ready first: a thread that sees slot_pub == c + 1 must then see ready != 0 until the GPU read it. */
	atomic_store_explicit(&eht_lk_ready(b)[slot], LK_READY(j->idx, c), memory_order_release);
	atomic_store_explicit(&b->slot_pub[slot], (unsigned)(c + 1), memory_order_release);
	if (c == 0 && b->trace)
		j->t_first = eht_now_s();
}

void eht_lk_bell_serve(eht_lookup *lk, unsigned i)
{
	struct lk_bell *b = lk->bell;
	struct lk_req *r = &b->reqs[i];
	size_t n = r->n;
	if (r->compact) { /* its kernel wrote the count before it rang */
		uint64_t c = *(volatile uint64_t *)&b->h_count[i];
		n = c < n ? (size_t)c : n;
	}
	if (r->bg) { /* even with no rows: the stream waits for every group */
		eht_lk_bell_serve_bg(lk, i, n);
		return;
	}
	eht_lk_trace_take(b, true); /* (before a request with no rows returns: its launch stamps too) */
	eht_lk_trace_mark(b, EHT_LK_TRACE_SERVED);
	if (n == 0) {
		eht_lk_trace_mark(b, EHT_LK_TRACE_POOL);
		return;
	}
	struct bell_job j = {.lk = lk, .r = r, .n = n, .idx = i, .t0 = eht_now_s()};
	eht_lk_bell_geom(lk, r->n, &j.chunk, &j.nslots); /* the kernel's: it knows only the bound */
	eht_lk_bell_wait_free(lk, j.t0);
	for (unsigned s = 0; s < j.nslots; s++)
		atomic_store_explicit(&b->slot_pub[s], 0, memory_order_relaxed);
	b->prev_slots = j.nslots;
	size_t nchunks = (n + j.chunk - 1) / j.chunk;
	if (nchunks < j.nslots)
		j.nslots = (uint32_t)nchunks; /* as the kernel's geometry for n rows: slots wrap at the same place */
	struct lk_joins joins;
	j.joins = b->trace ? eht_lk_joins_start(&joins) : NULL;
	double t1 = eht_now_s();
	eht_lk_trace_mark(b, EHT_LK_TRACE_POOL);
	eht_pool_run(lk->pool, nchunks, bell_task, &j);
	int k = LK_AUTO_CLASS(r->n);
	b->gclass = k;
	b->st_reqs[k]++;
	b->st_rows[k] += n;
	b->st_wait_s[k] += t1 - j.t0;
	b->st_gather_s[k] += eht_now_s() - t1;
	b->st_first_s[k] += j.t_first > t1 ? j.t_first - t1 : 0;
	if (j.joins)
		eht_lk_joins_add(b, k, j.joins);
}
