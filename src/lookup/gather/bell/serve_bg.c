/* SPDX-License-Identifier: Apache-2.0 */
/* serve_bg.c: the CPU side of a background request (serve_bg.h): the pool gathers the request's rows
 * group by group into their place in staging; each group is then marked ready (the stream waits for
 * it and copies it), or, pushed, copied to the GPU by the CPU itself, whose last copy is followed by
 * the request's done word, the one thing the stream waits for. */
#include <string.h>

#include "gpu/gpu_lookup.h"
#include "lookup/gather/bell/requests.h"
#include "lookup/gather/dequant.h"
#include "lookup/gather/rows.h"
#include "lookup/gather/bell/serve_bg.h"
#include "lookup/gather/bell/trace.h"
#include "util/clock.h"
#include "util/err.h"

struct bg_job {
	eht_lookup *lk;
	const struct lk_req *r;
	size_t n, chunk, tasks_per_group;
	unsigned idx;
	uint32_t groups, group_rows;
	_Atomic uint64_t dead;
	double t_first; /* EHT_TEST_BELL_TRACE: when group 0 was marked ready */
	struct lk_joins *joins; /* EHT_TEST_BELL_TRACE: when each worker joined */
};

/* Whether pushed request r is dequantized group by group (push_rows), else once by push_done. */
static bool push_per_group(const struct lk_req *r)
{
	return r->push_out && r->n > LK_BG_DEQUANT_ROWS;
}

/* A pushed request's rows [begin, end) (group g) from staging to their place in push_dst, by the copy
 * engine on push_stream, then, with push_out above LK_BG_DEQUANT_ROWS, dequantized there by an
 * expand kernel on the dequant stream once the copy is done (on push_stream it held up the next
 * groups' copies), which push_done joins (the CPU emulation of the tests: memcpy and the CPU's
 * dequant, every group). */
static void push_rows(eht_lookup *lk, const struct lk_req *r, uint32_t g, size_t begin, size_t end)
{
	struct lk_bell *b = lk->bell;
	if (begin >= end)
		return;
	const size_t off = begin * lk->rb, bytes = (end - begin) * lk->rb;
	if (!lk->gpu) {
		memcpy((uint8_t *)(uintptr_t)r->push_dst + off, b->staging + off, bytes);
		for (size_t i = begin; r->push_out && i < end; i++)
			eht_lk_dequant_row_table(b->staging + i * lk->rb, (uint16_t *)(uintptr_t)(r->push_out + i * lk->out_rb));
		if (r->push_out)
			atomic_fetch_add_explicit(&b->pushed_dequants, 1, memory_order_relaxed);
		return;
	}
	int rc = eht_lk_bell_on_device(lk);
	if (!rc)
		rc = eht_dev_h2d_async(r->push_dst + off, b->staging + off, bytes, b->push_stream);
	if (!rc && push_per_group(r)) {
		if (!(rc = eht_dev_event_record(b->bg_copied[g], b->push_stream)))
			rc = eht_dev_stream_wait_event(b->bg_xstream, b->bg_copied[g]);
		if (!rc)
			rc = eht_gpu_expand(&lk->g, b->bg_xstream, 0, end - begin, r->push_dst + off, lk->rb,
					    r->push_out + begin * lk->out_rb, lk->fmt);
		atomic_fetch_add_explicit(&b->pushed_dequants, 1, memory_order_relaxed);
	}
	if (rc)
		eht_lk_bell_fail(b, eht_err_prefix(rc, "lookup: copying rows of table %s to the GPU", lk->ti.name));
}

/* The end of pushed request i: a smaller bf16 one's rows dequantized after its last copy (on
 * push_stream: in stream order, no event), its done word set after that (the stream waits for it),
 * and the copies' end recorded for the next request's use of staging. Should the driver refuse, the CPU
 * sets the word once the copies are done (a fill of GPU memory; a context that refuses that too has
 * failed for good): the stream goes on, the error is the next call's. */
static void push_done(eht_lookup *lk, unsigned i)
{
	struct lk_bell *b = lk->bell;
	if (!lk->gpu) {
		atomic_store_explicit(eht_lk_bell_done(b, lk, i), 1u, memory_order_release);
		return;
	}
	const struct lk_req *r = &b->reqs[i];
	const bool per_group = push_per_group(r);
	int rc = eht_lk_bell_on_device(lk);
	if (!rc && per_group && !(rc = eht_dev_event_record(b->bg_xdone, b->bg_xstream)))
		rc = eht_dev_stream_wait_event(b->push_stream, b->bg_xdone);
	if (!rc && r->push_out && !per_group) {
		rc = eht_gpu_expand(&lk->g, b->push_stream, 0, r->n, r->push_dst, lk->rb, r->push_out, lk->fmt);
		atomic_fetch_add_explicit(&b->pushed_dequants, 1, memory_order_relaxed);
	}
	if (!rc)
		rc = eht_dev_stream_write32(b->push_stream, eht_lk_bell_d_done(b, lk, i), 1u);
	if (!rc && !(rc = eht_dev_event_record(b->ev_pushed, b->push_stream)))
		b->pushed_used = true;
	if (rc) {
		eht_lk_bell_fail(b, eht_err_prefix(rc, "lookup: ending a pushed request of table %s", lk->ti.name));
		eht_dev_stream_sync(b->push_stream);
		if (per_group)
			eht_dev_stream_sync(b->bg_xstream);
		b->pushed_used = false;
		if (!eht_dev_memset32_async(eht_lk_bell_d_done(b, lk, i), 1u, 1, b->push_stream))
			eht_dev_stream_sync(b->push_stream);
	}
}

/* Task t: rows of group t / tasks_per_group straight into their place in staging (a group's rows lie
 * together, no slot wraps inside a request). The last task of a group marks it ready (pushed: copies
 * it to the GPU), except for the last group, which serve_bg marks (pushes) once the dead count is
 * written. */
static void bg_task(void *arg, size_t t, unsigned worker)
{
	struct bg_job *j = arg;
	if (j->joins)
		eht_lk_joins_seen(j->joins, worker);
	eht_lookup *lk = j->lk;
	struct lk_bell *b = lk->bell;
	size_t g = t / j->tasks_per_group, k = t % j->tasks_per_group;
	size_t gend = (g + 1) * j->group_rows < j->n ? (g + 1) * j->group_rows : j->n;
	size_t begin = g * j->group_rows + k * j->chunk, end = begin + j->chunk < gend ? begin + j->chunk : gend;
	if (begin < end) {
		uint64_t dead = 0;
		uint8_t *dst = b->staging + begin * lk->rb;
		int rc = eht_lk_gather_ids(lk, j->r->ids, j->r->id64, j->r->off, begin, end, dst, lk->rb, EHT_LOOKUP_RAW,
					   &dead);
		if (rc) {
			eht_lk_bell_fail(b, rc);
			memset(dst, 0, (end - begin) * lk->rb);
		}
		atomic_fetch_add_explicit(&j->dead, dead, memory_order_relaxed);
	}
	if (atomic_fetch_add_explicit(&b->slot_pub[g], 1, memory_order_acq_rel) + 1 == j->tasks_per_group &&
	    g + 1 < j->groups) {
		if (j->r->push_dst)
			push_rows(lk, j->r, (uint32_t)g, g * j->group_rows, gend);
		else
			atomic_store_explicit(&eht_lk_ready(b)[g], LK_READY(j->idx, g), memory_order_release);
		if (g == 0 && b->trace)
			j->t_first = eht_now_s();
	}
}

/* n rows of request i (r->n for a plain one, the GPU's count for a compact one). The groups are the
 * bound's (r->n), as the stream's waits: those past n are published empty. */
void eht_lk_bell_serve_bg(eht_lookup *lk, unsigned i, size_t n)
{
	struct lk_bell *b = lk->bell;
	const struct lk_req *r = &b->reqs[i];
	double t0 = eht_now_s();
	struct bg_job j = {.lk = lk, .r = r, .n = n, .idx = i};
	eht_lk_bell_bg_geom(lk, r->n, &j.groups, &j.group_rows);
	eht_lk_bell_wait_free(lk, t0);
	b->prev_slots = r->push_dst ? 0 : j.groups; /* (a pushed request's groups have no ready words) */
	j.chunk = eht_lk_chunk_for(lk, n ? n : 1); /* >= 1 row for n >= 1; a group holds >= 1 too */
	if (j.chunk > j.group_rows)
		j.chunk = j.group_rows;
	j.tasks_per_group = (j.group_rows + j.chunk - 1) / j.chunk;
	for (unsigned g = 0; g < j.groups; g++)
		atomic_store_explicit(&b->slot_pub[g], 0, memory_order_relaxed);
	struct lk_joins joins;
	j.joins = b->trace ? eht_lk_joins_start(&joins) : NULL;
	double t1 = eht_now_s();
	eht_pool_run(lk->pool, j.groups * j.tasks_per_group, bg_task, &j);
	/* A plain background request is its run's only piece: its dead count is the run's. A compact
	 * one's rows are valid local rows; the stream copies the dead count of its dedup pass. */
	if (!r->compact)
		*(volatile uint64_t *)lk->h_dead = atomic_load(&j.dead);
	atomic_fetch_add_explicit(&b->bg_reqs, 1, memory_order_relaxed);
	if (r->compact)
		atomic_fetch_add_explicit(&b->bg_compact_reqs, 1, memory_order_relaxed);
	int k = LK_AUTO_CLASS(r->n);
	if (j.joins) /* (before the request is done: the tests read it then) */
		eht_lk_joins_add(b, k, j.joins);
	if (r->push_dst) {
		push_rows(lk, r, j.groups - 1, (size_t)(j.groups - 1) * j.group_rows, n);
		b->pushed_reqs++;
		push_done(lk, i);
	} else {
		atomic_store_explicit(&eht_lk_ready(b)[j.groups - 1], LK_READY(i, j.groups - 1), memory_order_release);
	}
	b->st_reqs[k]++;
	b->st_rows[k] += n;
	b->st_wait_s[k] += t1 - t0;
	double t2 = eht_now_s();
	b->st_gather_s[k] += t2 - t1;
	b->st_first_s[k] += (j.t_first > t1 ? j.t_first : t2) - t1; /* (one group: at the end) */
}
