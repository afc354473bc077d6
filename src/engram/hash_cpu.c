/* SPDX-License-Identifier: Apache-2.0 */
/* hash_cpu.c: Engram n-gram hashing on the CPU (reciprocal mods; threads for big batches). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engram/engram_impl.h"
#include "util/cpu.h"
#include "util/err.h"

#define THREAD_MIN_TOKENS 2048 /* per thread: below this, starting threads costs more than it saves */
#define MAX_THREADS 16

/* Hashes one token: win[s] (s = 0..max_ngram-1) is the token at p - s as a compressed id or
 * EHT_ENGRAM_HIST_*; writes n_layers * cols row ids. */
static void engram_hash_window(const struct eht_engram_layout *l, const int32_t *win, int32_t *out)
{
	const uint32_t nh = l->n_heads, cols = l->cols;
	uint64_t v[EHT_ENGRAM_MAX_NGRAM] = {0}; /* max_ngram >= 2 (layout.c); zeroed for the analyzer */
	int blocked = 0;
	for (uint32_t s = 0; s < l->max_ngram; s++) {
		int32_t e = win[s];
		blocked |= e == EHT_ENGRAM_HIST_BLOCK;
		v[s] = blocked || e < 0 ? (uint64_t)l->pad : (uint64_t)e;
	}
	for (uint32_t li = 0; li < l->n_layers; li++) {
		const uint64_t *m = l->mult[li], *mod = l->mod[li], *off = l->off[li], *rcp = l->rcp[li];
		int32_t *o = out + (size_t)li * cols;
		uint64_t r = v[0] * m[0];
		for (uint32_t s = 1; s < l->max_ngram; s++) {
			r ^= v[s] * m[s];
			for (uint32_t h = 0; h < nh; h++) {
				uint32_t c = (s - 1) * nh + h;
				o[c] = (int32_t)(engram_mod(r, mod[c], rcp[c]) + off[c]);
			}
		}
	}
}

int engram_check_batch(const struct eht_engram_layout *l, const struct eht_engram_batch *b, int check_values)
{
	if (!l || !b)
		return eht_err(EINVAL, "engram hash: NULL layout or batch");
	if (b->size < sizeof(*b) || b->flags)
		return eht_err(EINVAL, "engram hash: batch size %u / flags 0x%x", b->size, b->flags);
	if (b->n_tokens > INT32_MAX || b->n_requests > INT32_MAX)
		return eht_err(EINVAL, "engram hash: %zu tokens / %zu requests (at most 2^31-1)", b->n_tokens,
			       b->n_requests);
	if ((b->n_tokens && !b->tokens) || !b->starts)
		return eht_err(EINVAL, "engram hash: NULL tokens or starts");
	if (!check_values)
		return 0;
	if (b->starts[0] != 0 || b->starts[b->n_requests] != b->n_tokens)
		return eht_err(EINVAL, "engram hash: starts[0] = %u and starts[%zu] = %u; need 0 and %zu", b->starts[0],
			       b->n_requests, b->starts[b->n_requests], b->n_tokens);
	for (size_t r = 0; r < b->n_requests; r++)
		if (b->starts[r + 1] < b->starts[r])
			return eht_err(EINVAL, "engram hash: starts[%zu] = %u < starts[%zu] = %u", r + 1, b->starts[r + 1],
				       r, b->starts[r]);
	uint64_t lim = l->token_map_len ? l->token_map_len : l->compressed_vocab;
	for (size_t i = 0; i < b->n_tokens; i++)
		if (b->tokens[i] < 0 || (uint64_t)b->tokens[i] >= lim)
			return eht_err(EINVAL, "engram hash: token %zu is %d, outside [0, %llu)%s", i, b->tokens[i],
				       (unsigned long long)lim, l->token_map_len ? " (the token map)" : " (compressed ids)");
	if (b->history) {
		size_t nh = b->n_requests * (l->max_ngram - 1);
		for (size_t i = 0; i < nh; i++)
			if (b->history[i] < EHT_ENGRAM_HIST_BLOCK || (b->history[i] >= 0 &&
								      (uint64_t)b->history[i] >= l->compressed_vocab))
				return eht_err(EINVAL, "engram hash: history entry %zu (request %zu) is %d", i,
					       i / (l->max_ngram - 1), b->history[i]);
	}
	return 0;
}

struct job {
	const struct eht_engram_layout *l;
	const struct eht_engram_batch *b;
	int32_t *rows;
	size_t t0, t1; /* tokens */
};

static inline int32_t chunk_entry(const struct eht_engram_layout *l, const struct eht_engram_batch *b, size_t i)
{
	if (b->dead && b->dead[i])
		return EHT_ENGRAM_HIST_BLOCK;
	return l->token_map ? l->token_map[b->tokens[i]] : b->tokens[i];
}

/* Tokens [t0, t1): each token's window read directly (the batch, then its request's history), so a
 * range may start and end anywhere. */
static void hash_range(const struct job *j)
{
	const struct eht_engram_layout *l = j->l;
	const struct eht_engram_batch *b = j->b;
	const uint32_t k = l->max_ngram, hl = k - 1;
	const size_t per = (size_t)l->n_layers * l->cols;
	if (j->t0 >= j->t1)
		return;
	/* the request holding t0: the last r with starts[r] <= t0 < starts[r+1] */
	size_t lo = 0, hi = b->n_requests;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (b->starts[mid] <= j->t0)
			lo = mid;
		else
			hi = mid;
	}
	size_t r = lo;
	for (size_t i = j->t0; i < j->t1; i++) {
		while (i >= b->starts[r + 1])
			r++;
		size_t s0 = b->starts[r];
		int32_t win[EHT_ENGRAM_MAX_NGRAM];
		for (uint32_t s = 0; s < k; s++) {
			if (i >= s0 + s)
				win[s] = chunk_entry(l, b, i - s);
			else
				win[s] = b->history ? b->history[r * hl + (s - (i - s0) - 1)] : EHT_ENGRAM_HIST_BLOCK;
		}
		engram_hash_window(l, win, j->rows + i * per);
	}
}

static void *hash_thread(void *arg)
{
	hash_range(arg);
	return NULL;
}

int eht_engram_hash(const eht_engram_layout *l, const struct eht_engram_batch *b, int32_t *rows)
{
	int rc = engram_check_batch(l, b, 1);
	if (rc)
		return rc;
	if (b->n_tokens && !rows)
		return eht_err(EINVAL, "engram hash: NULL rows");
	long ncpu = (long)eht_cpu_usable(NULL);
	size_t nt = b->n_tokens / THREAD_MIN_TOKENS;
	if (nt > (size_t)(ncpu > 0 ? ncpu : 1))
		nt = (size_t)(ncpu > 0 ? ncpu : 1);
	if (nt > MAX_THREADS)
		nt = MAX_THREADS;
	if (nt < 1)
		nt = 1;
	pthread_t th[MAX_THREADS];
	struct job jobs[MAX_THREADS];
	size_t started = 0;
	for (size_t t = 0; t < nt; t++)
		jobs[t] = (struct job){l, b, rows, b->n_tokens * t / nt, b->n_tokens * (t + 1) / nt};
	/* the caller takes job 0; a thread that cannot start has its job done here too */
	for (size_t t = 1; t < nt; t++) {
		if (pthread_create(&th[t], NULL, hash_thread, &jobs[t]) != 0)
			break;
		started = t;
	}
	hash_range(&jobs[0]);
	for (size_t t = 1; t <= started; t++)
		pthread_join(th[t], NULL);
	for (size_t t = started + 1; t < nt; t++)
		hash_range(&jobs[t]);
	return 0;
}
