/* SPDX-License-Identifier: Apache-2.0 */
/* state.c: each request's recent tokens across steps (add, step, fork, rollback, drop). */
#include <stdlib.h>
#include <string.h>

#include "engram/engram_impl.h"
#include "util/err.h"
#include "util/grow.h"

struct req {
	uint64_t id;
	uint64_t seen;  /* tokens appended so far */
	uint64_t hw;    /* highest position ever written + 1: the ring holds [hw - keep, hw) */
	int32_t *ring;  /* keep entries; ring[(seen - 1 - j) % keep] is the entry j tokens back */
};

struct eht_engram_state {
	const eht_engram_layout *l;
	uint32_t keep;
	struct req *v;
	size_t n, cap;
};

int eht_engram_state_create(const eht_engram_layout *l, uint32_t keep, eht_engram_state **out)
{
	if (!l || !out)
		return eht_err(EINVAL, "eht_engram_state_create: NULL argument");
	if (!keep)
		keep = 64;
	if (keep < l->max_ngram - 1 || keep > (1u << 20))
		return eht_err(EINVAL, "eht_engram_state_create: keep %u (%u .. 2^20)", keep, l->max_ngram - 1);
	eht_engram_state *st = calloc(1, sizeof(*st));
	if (!st)
		return eht_err(ENOMEM, "engram state: out of memory");
	st->l = l;
	st->keep = keep;
	*out = st;
	return 0;
}

void eht_engram_state_destroy(eht_engram_state *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		free(st->v[i].ring);
	free(st->v);
	free(st);
}

static struct req *find(const eht_engram_state *st, uint64_t id)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i].id == id)
			return &st->v[i];
	return NULL;
}

static int add(eht_engram_state *st, uint64_t id, struct req **out)
{
	struct req *v = eht_grow(st->v, &st->cap, st->n, sizeof(*v));
	if (!v)
		return eht_err(ENOMEM, "engram state: out of memory");
	st->v = v;
	int32_t *ring = malloc(st->keep * sizeof(*ring));
	if (!ring)
		return eht_err(ENOMEM, "engram state: out of memory");
	st->v[st->n] = (struct req){id, 0, 0, ring};
	*out = &st->v[st->n++];
	return 0;
}

int eht_engram_state_add(eht_engram_state *st, uint64_t req)
{
	struct req *r;
	if (!st)
		return eht_err(EINVAL, "eht_engram_state_add: NULL state");
	if (find(st, req))
		return eht_err(EEXIST, "engram state: request %llu exists", (unsigned long long)req);
	return add(st, req, &r);
}

int eht_engram_state_drop(eht_engram_state *st, uint64_t req)
{
	struct req *r = st ? find(st, req) : NULL;
	if (!r)
		return eht_err(ENOENT, "engram state: no request %llu", (unsigned long long)req);
	free(r->ring);
	*r = st->v[--st->n];
	return 0;
}

int eht_engram_state_fork(eht_engram_state *st, uint64_t parent, uint64_t child)
{
	if (!st)
		return eht_err(EINVAL, "eht_engram_state_fork: NULL state");
	if (!find(st, parent))
		return eht_err(ENOENT, "engram state: no request %llu", (unsigned long long)parent);
	if (find(st, child))
		return eht_err(EEXIST, "engram state: request %llu exists", (unsigned long long)child);
	struct req *c;
	int rc = add(st, child, &c);
	if (rc)
		return rc;
	struct req *p = find(st, parent); /* add may have moved the array */
	memcpy(c->ring, p->ring, st->keep * sizeof(*c->ring));
	c->seen = p->seen;
	c->hw = p->hw;
	return 0;
}

int eht_engram_state_rollback(eht_engram_state *st, uint64_t req, uint32_t n)
{
	struct req *r = st ? find(st, req) : NULL;
	if (!r)
		return eht_err(ENOENT, "engram state: no request %llu", (unsigned long long)req);
	if (n > r->seen)
		return eht_err(ERANGE, "engram state: rollback of %u tokens; request %llu has seen %llu", n,
			       (unsigned long long)req, (unsigned long long)r->seen);
	r->seen -= n;
	return 0;
}

/* j tokens back (0 = newest): the stored entry, BLOCK before the start, UNKNOWN past `keep`
 * (entries overwritten in the ring, or exposed by a rollback). */
static int32_t entry(const eht_engram_state *st, const struct req *r, uint64_t j, uint64_t hw)
{
	if (j >= r->seen)
		return EHT_ENGRAM_HIST_BLOCK;
	uint64_t pos = r->seen - 1 - j; /* absolute position */
	if (pos + st->keep < hw)
		return EHT_ENGRAM_HIST_UNKNOWN;
	return r->ring[pos % st->keep];
}

/* A rollback lowers seen only: positions in [hw - keep, seen) are still in the ring. */
static uint64_t high_water(const struct req *r) { return r->hw; }

int eht_engram_state_history(const eht_engram_state *st, uint64_t req, int32_t *hist)
{
	const struct req *r = st ? find(st, req) : NULL;
	if (!r || !hist)
		return eht_err(ENOENT, "engram state: no request %llu", (unsigned long long)req);
	for (uint32_t s = 0; s + 1 < st->l->max_ngram; s++)
		hist[s] = entry(st, r, s, high_water(r));
	return 0;
}

int eht_engram_state_batch_history(const eht_engram_state *st, const uint64_t *reqs, size_t n, int32_t *hist)
{
	if (!st || (n && (!reqs || !hist)))
		return eht_err(EINVAL, "eht_engram_state_batch_history: NULL argument");
	const uint32_t hl = st->l->max_ngram - 1;
	for (size_t i = 0; i < n; i++) {
		const struct req *r = find(st, reqs[i]);
		for (uint32_t s = 0; s < hl; s++)
			hist[i * hl + s] = r ? entry(st, r, s, high_water(r)) : EHT_ENGRAM_HIST_BLOCK;
	}
	return 0;
}

int eht_engram_state_advance(eht_engram_state *st, const uint64_t *reqs, const struct eht_engram_batch *b)
{
	if (!st || (!reqs && b && b->n_requests))
		return eht_err(EINVAL, "eht_engram_state_advance: NULL argument");
	int rc = engram_check_batch(st->l, b, 1);
	if (rc)
		return rc;
	const eht_engram_layout *l = st->l;
	for (size_t i = 0; i < b->n_requests; i++)
		for (size_t j = 0; j < i; j++)
			if (reqs[i] == reqs[j])
				return eht_err(EINVAL, "engram state: request %llu named twice", (unsigned long long)reqs[i]);
	/* add unknown requests first, so a failure leaves the histories as they were */
	size_t n0 = st->n;
	for (size_t i = 0; i < b->n_requests; i++) {
		struct req *r;
		if (!find(st, reqs[i]) && (rc = add(st, reqs[i], &r))) {
			while (st->n > n0)
				free(st->v[--st->n].ring);
			return rc;
		}
	}
	for (size_t i = 0; i < b->n_requests; i++) {
		struct req *r = find(st, reqs[i]);
		for (uint32_t t = b->starts[i]; t < b->starts[i + 1]; t++) {
			int32_t e = b->dead && b->dead[t] ? EHT_ENGRAM_HIST_BLOCK
				    : l->token_map        ? l->token_map[b->tokens[t]]
							  : b->tokens[t];
			r->ring[r->seen % st->keep] = e;
			r->seen++;
			if (r->seen > r->hw)
				r->hw = r->seen;
		}
	}
	return 0;
}

int eht_engram_state_step(eht_engram_state *st, const uint64_t *reqs, const struct eht_engram_batch *b,
			  int32_t *rows)
{
	if (!st || !b || (!reqs && b->n_requests))
		return eht_err(EINVAL, "eht_engram_state_step: NULL argument");
	int rc = engram_check_batch(st->l, b, 0);
	if (rc)
		return rc;
	if (b->history)
		return eht_err(EINVAL, "eht_engram_state_step: batch->history must be NULL (the state keeps it)");
	for (size_t i = 0; i < b->n_requests; i++)
		for (size_t j = 0; j < i; j++)
			if (reqs[i] == reqs[j])
				return eht_err(EINVAL, "eht_engram_state_step: request %llu named twice",
					       (unsigned long long)reqs[i]);
	const uint32_t hl = st->l->max_ngram - 1;
	int32_t *hist = malloc((b->n_requests * hl + 1) * sizeof(*hist));
	if (!hist)
		return eht_err(ENOMEM, "engram state: out of memory");
	struct eht_engram_batch hb = *b;
	hb.history = hist;
	if (!(rc = eht_engram_state_batch_history(st, reqs, b->n_requests, hist)) &&
	    !(rc = eht_engram_hash(st->l, &hb, rows)))
		rc = eht_engram_state_advance(st, reqs, b);
	free(hist);
	return rc;
}
