/* SPDX-License-Identifier: Apache-2.0 */
/* hash_gpu.c: Engram hashing on the GPU (src/gpu/kernels/engram_hash.cu) and the fused path from
 * token ids on the GPU straight into a lookup. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/dev.h"
#include "engram/engram_impl.h"
#include "util/err.h"

#define THREADS 256u

struct engram_gpu {
	void *ctx; /* the device context the copy lives in */
	eht_module mod;
	eht_kernel fn;
	eht_dptr tab, map;
	int sms;
};

/* One lock for the lazy per-layout load: loads are rare, hashing takes no lock. */
static pthread_mutex_t gpu_mu = PTHREAD_MUTEX_INITIALIZER;

void engram_gpu_free(struct eht_engram_layout *l)
{
	struct engram_gpu *g = l->gpu;
	if (!g)
		return;
	/* best effort: the context may be gone at teardown */
	eht_dev_free(g->tab);
	eht_dev_free(g->map);
	eht_dev_module_unload(g->mod);
	free(g);
	l->gpu = NULL;
}

static int gpu_load(struct eht_engram_layout *l, void *ctx, int dev, struct engram_gpu **out)
{
	struct engram_gpu *g = calloc(1, sizeof(*g));
	if (!g)
		return eht_err(ENOMEM, "engram hash: out of memory");
	l->gpu = g;
	g->ctx = ctx;
	const size_t L = l->n_layers, K = l->max_ngram, C = l->cols, n = L * K + 3 * L * C;
	uint64_t *tab = malloc(n * sizeof(*tab));
	int rc = tab ? 0 : eht_err(ENOMEM, "engram hash: out of memory");
	if (!rc) {
		for (size_t i = 0; i < L; i++) {
			memcpy(tab + i * K, l->mult[i], K * 8);
			memcpy(tab + L * K + i * C, l->mod[i], C * 8);
			memcpy(tab + L * K + L * C + i * C, l->off[i], C * 8);
			memcpy(tab + L * K + 2 * L * C + i * C, l->rcp[i], C * 8);
		}
		rc = eht_dev_module_load(&g->mod, "engram_hash");
	}
	if (!rc)
		rc = eht_dev_kernel(&g->fn, g->mod, "eht_engram_hash_kernel");
	if (!rc)
		rc = eht_dev_alloc(&g->tab, n * 8);
	if (!rc)
		rc = eht_dev_h2d(g->tab, tab, n * 8);
	if (!rc && l->token_map) {
		rc = eht_dev_alloc(&g->map, (size_t)l->token_map_len * 4);
		if (!rc)
			rc = eht_dev_h2d(g->map, l->token_map, (size_t)l->token_map_len * 4);
	}
	if (!rc)
		rc = eht_dev_attr(dev, EHT_DEV_ATTR_SM_COUNT, &g->sms);
	free(tab);
	if (rc) {
		engram_gpu_free(l);
		return eht_err_prefix(rc, "loading the engram hash kernel");
	}
	*out = g;
	return 0;
}

/* The layout's GPU copy in the current context (made on first use). */
static int gpu_get(const eht_engram_layout *cl, struct engram_gpu **out)
{
	struct eht_engram_layout *l = (struct eht_engram_layout *)cl; /* only the lazy GPU copy changes */
	void *ctx = NULL;
	int dev = -1;
	int rc = eht_dev_load();
	if (rc)
		return eht_err(ENOTSUP, "engram hash on the GPU: no CUDA driver or device");
	if ((rc = eht_dev_current(&ctx, &dev)))
		return rc;
	if (!ctx)
		return eht_err(EINVAL, "engram hash on the GPU: no current CUDA context on this thread");
	pthread_mutex_lock(&gpu_mu);
	struct engram_gpu *g = l->gpu;
	if (g && g->ctx != ctx)
		rc = eht_err(EINVAL, "engram hash on the GPU: this layout's GPU copy lives in another context "
				     "(use one layout per device)");
	else if (!g)
		rc = gpu_load(l, ctx, dev, &g);
	pthread_mutex_unlock(&gpu_mu);
	if (!rc)
		*out = g;
	return rc;
}

static int launch(const eht_engram_layout *l, struct engram_gpu *g, const struct eht_engram_batch *b, int layer_sel,
		  eht_dptr d_rows, eht_stream s)
{
	uint64_t total = (uint64_t)b->n_tokens * (layer_sel < 0 ? l->n_layers : 1) * l->cols;
	if (!total)
		return 0;
	uint64_t blocks = (total + THREADS - 1) / THREADS, cap = (uint64_t)(g->sms > 0 ? g->sms : 1) * 16;
	if (blocks > cap)
		blocks = cap;
	eht_dptr tab = g->tab, map = l->token_map ? g->map : 0;
	unsigned nl = l->n_layers, k = l->max_ngram, nh = l->n_heads, cols = l->cols, map_len = l->token_map_len;
	unsigned n_req = (unsigned)b->n_requests;
	long long pad = l->pad;
	unsigned long long vocab = l->compressed_vocab, nt = b->n_tokens;
	const void *tokens = b->tokens, *dead = b->dead, *starts = b->starts, *hist = b->history;
	void *args[] = {&tab, &nl, &k, &nh, &cols, &pad, &vocab, &map, &map_len, (void *)&tokens, (void *)&dead,
			(void *)&starts, &n_req, (void *)&hist, &nt, &layer_sel, &d_rows};
	int rc = eht_dev_launch(g->fn, (unsigned)blocks, THREADS, 0, s, args, 0);
	return rc ? eht_err_prefix(rc, "launching the engram hash kernel (%llu blocks)", (unsigned long long)blocks) : 0;
}

int eht_engram_hash_gpu(const eht_engram_layout *l, const struct eht_engram_batch *b, int32_t *d_rows, void *stream)
{
	int rc = engram_check_batch(l, b, 0);
	if (rc)
		return rc;
	if (b->n_tokens && (!d_rows || !b->n_requests))
		return eht_err(EINVAL, "eht_engram_hash_gpu: NULL rows or no requests for %zu tokens", b->n_tokens);
	struct engram_gpu *g;
	if ((rc = gpu_get(l, &g)))
		return rc;
	return launch(l, g, b, -1, (eht_dptr)(uintptr_t)d_rows, (eht_stream)stream);
}

int eht_engram_hash_gpu_copy(const eht_engram_layout *l, const struct eht_engram_batch *b, int32_t *rows, int device)
{
	int rc = engram_check_batch(l, b, 1);
	if (rc)
		return rc;
	if (b->n_tokens && !rows)
		return eht_err(EINVAL, "eht_engram_hash_gpu_copy: NULL rows");
	if (eht_dev_load() != 0)
		return eht_err(ENOTSUP, "engram hash on the GPU: no CUDA driver or device");
	if ((rc = eht_dev_use(device)))
		return rc;
	const size_t nt = b->n_tokens, nr = b->n_requests, hl = l->max_ngram - 1;
	const size_t nrows = nt * l->n_layers * l->cols;
	eht_dptr d_tok = 0, d_dead = 0, d_st = 0, d_hist = 0, d_rows = 0;
	struct eht_engram_batch db = *b;
	rc = eht_dev_alloc(&d_tok, nt * 4 + 4);
	if (!rc)
		rc = eht_dev_alloc(&d_st, (nr + 1) * 4);
	if (!rc)
		rc = eht_dev_alloc(&d_rows, nrows * 4 + 4);
	if (!rc && b->dead)
		rc = eht_dev_alloc(&d_dead, nt + 1);
	if (!rc && b->history)
		rc = eht_dev_alloc(&d_hist, nr * hl * 4 + 4);
	if (!rc && nt)
		rc = eht_dev_h2d(d_tok, b->tokens, nt * 4);
	if (!rc)
		rc = eht_dev_h2d(d_st, b->starts, (nr + 1) * 4);
	if (!rc && b->dead && nt)
		rc = eht_dev_h2d(d_dead, b->dead, nt);
	if (!rc && b->history && nr)
		rc = eht_dev_h2d(d_hist, b->history, nr * hl * 4);
	if (!rc) {
		db.tokens = (const int32_t *)(uintptr_t)d_tok;
		db.starts = (const uint32_t *)(uintptr_t)d_st;
		db.dead = b->dead ? (const uint8_t *)(uintptr_t)d_dead : NULL;
		db.history = b->history ? (const int32_t *)(uintptr_t)d_hist : NULL;
		rc = eht_engram_hash_gpu(l, &db, (int32_t *)(uintptr_t)d_rows, NULL);
	}
	if (!rc)
		rc = eht_dev_sync();
	if (!rc && nrows)
		rc = eht_dev_d2h(rows, d_rows, nrows * 4);
	eht_dptr all[] = {d_tok, d_dead, d_st, d_hist, d_rows};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i])
			eht_dev_free(all[i]);
	return rc;
}

int engram_gpu_hash_layer(const eht_engram_layout *l, const struct eht_engram_batch *b, int layer_sel,
			  uint64_t d_rows, void *s, void **ctx)
{
	struct engram_gpu *g;
	int rc = engram_check_batch(l, b, 0);
	if (!rc)
		rc = gpu_get(l, &g);
	if (rc)
		return rc;
	if (ctx)
		*ctx = g->ctx;
	return launch(l, g, b, layer_sel, (eht_dptr)d_rows, (eht_stream)s);
}
