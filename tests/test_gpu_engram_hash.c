/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_engram_hash.c: the CUDA Engram hash is bit-identical to the CPU hash on large random
 * batches (token map, image tokens, histories, many requests, one long request), and the fused path
 * (token ids on the GPU -> hash -> lookup) equals the CPU hash followed by a CPU lookup. Skips (77)
 * without a GPU. */
#include <string.h>

#include "gpu/dev.h"
#include "testutil.h"

static void random_batch(uint64_t seed, size_t nt, size_t nr, uint32_t vocab, int32_t *tok, uint8_t *dead,
			 uint32_t *st, int32_t *hist)
{
	uint64_t s = seed;
	for (size_t i = 0; i < nt; i++) {
		tok[i] = (int32_t)(t_rand(&s) % (i % 5 == 0 ? 40 : vocab));
		dead[i] = t_rand(&s) % 19 == 0;
	}
	for (size_t i = 0; i < nr * 3; i++) {
		uint64_t x = t_rand(&s) % 5;
		hist[i] = x == 0 ? -1 : x == 1 ? -2 : (int32_t)(t_rand(&s) % 99092);
	}
	st[0] = 0;
	for (size_t r = 1; r < nr; r++)
		st[r] = (uint32_t)(nt * r / nr + t_rand(&s) % 3);
	st[nr] = (uint32_t)nt;
	for (size_t r = 1; r < nr; r++) {
		if (st[r] > nt)
			st[r] = (uint32_t)nt;
		if (st[r] < st[r - 1])
			st[r] = st[r - 1];
	}
}

static void check_equal(eht_engram_layout *l, size_t nt, size_t nr, uint64_t seed, int with_map)
{
	int32_t *tok = malloc(nt * 4 + 4), *hist = malloc(nr * 12 + 4), *cpu = malloc(nt * 192 + 4),
		*gpu = malloc(nt * 192 + 4);
	uint8_t *dead = malloc(nt + 1);
	uint32_t *st = malloc((nr + 1) * 4);
	random_batch(seed, nt, nr, with_map ? 129280 : 99092, tok, dead, st, hist);
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = nt, .tokens = tok, .dead = dead, .n_requests = nr,
				     .starts = st, .history = hist};
	CHECK_RC(eht_engram_hash(l, &b, cpu), 0);
	memset(gpu, 0x5a, nt * 192);
	CHECK_RC(eht_engram_hash_gpu_copy(l, &b, gpu, 0), 0);
	size_t bad = 0;
	for (size_t i = 0; i < nt * 48; i++)
		bad += cpu[i] != gpu[i];
	if (bad)
		fprintf(stderr, "%zu tokens, %zu requests, map %d: %zu of %zu rows differ\n", nt, nr, with_map, bad,
			nt * 48);
	CHECK(bad == 0);
	b.history = NULL; /* every request starts here */
	CHECK_RC(eht_engram_hash(l, &b, cpu), 0);
	CHECK_RC(eht_engram_hash_gpu_copy(l, &b, gpu, 0), 0);
	CHECK(!memcmp(cpu, gpu, nt * 192));
	free(tok);
	free(hist);
	free(cpu);
	free(gpu);
	free(dead);
	free(st);
}

/* v41-small table of layer 14 with random rows; fused GPU lookup (bf16) against CPU hash + CPU lookup */
static void check_fused(void)
{
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_preset("v41-small", &l), 0);
	struct eht_engram_info in = {.size = sizeof(in)};
	eht_engram_layout_info(l, &in);
	uint64_t rows = in.rows[1], s = 3;
	uint8_t *tab = malloc(rows * 264);
	for (uint64_t i = 0; i < rows * 264; i++) {
		uint8_t x = (uint8_t)t_rand(&s);
		tab[i] = i % 264 >= 256 ? (uint8_t)(120 + x % 15) : ((x & 0x7f) == 0x7f ? x ^ 1 : x);
	}
	enum { NT = 3000, NR = 7 };
	int32_t tok[NT], hist[NR * 3], ids[NT * 48];
	uint8_t dead[NT];
	uint32_t st[NR + 1];
	random_batch(9, NT, NR, 99092, tok, dead, st, hist);
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = NT, .tokens = tok, .dead = dead, .n_requests = NR,
				     .starts = st, .history = hist};
	CHECK_RC(eht_engram_hash(l, &b, ids), 0);
	int32_t *ids14 = malloc(NT * 24 * 4);
	for (size_t i = 0; i < NT; i++)
		memcpy(ids14 + i * 24, ids + i * 48 + 24, 24 * 4);
	uint16_t *want = malloc((size_t)NT * 24 * 512), *got = malloc((size_t)NT * 24 * 512);
	for (size_t i = 0; i < (size_t)NT * 24; i++)
		eht_engram_dequant_row(tab + (size_t)ids14[i] * 264, want + i * 256);

	eht_table *t = NULL;
	eht_lookup *lk = NULL;
	eht_engram_lookup *el = NULL;
	CHECK_RC(eht_table_wrap(tab, rows, 264, 0, "v41-small.14", &t), 0);
	struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_DIRECT, .format = EHT_LOOKUP_BF16,
				    .device = 0};
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	CHECK_RC(eht_dev_use(0), 0);
	eht_dptr d_tok = 0, d_dead = 0, d_st = 0, d_hist = 0, d_out = 0;
	CHECK_RC(eht_dev_alloc(&d_tok, sizeof(tok)), 0);
	CHECK_RC(eht_dev_alloc(&d_dead, sizeof(dead)), 0);
	CHECK_RC(eht_dev_alloc(&d_st, sizeof(st)), 0);
	CHECK_RC(eht_dev_alloc(&d_hist, sizeof(hist)), 0);
	CHECK_RC(eht_dev_alloc(&d_out, (size_t)NT * 24 * 512), 0);
	eht_dev_h2d(d_tok, tok, sizeof(tok));
	eht_dev_h2d(d_dead, dead, sizeof(dead));
	eht_dev_h2d(d_st, st, sizeof(st));
	eht_dev_h2d(d_hist, hist, sizeof(hist));
	struct eht_engram_batch db = b;
	db.tokens = (const int32_t *)(uintptr_t)d_tok;
	db.dead = (const uint8_t *)(uintptr_t)d_dead;
	db.starts = (const uint32_t *)(uintptr_t)d_st;
	db.history = (const int32_t *)(uintptr_t)d_hist;
	CHECK_RC(eht_engram_lookup_create(l, 1, lk, NT, &el), 0);
	uint64_t deadn = 99;
	if (el)
		CHECK_RC(eht_engram_lookup_run(el, &db, (void *)(uintptr_t)d_out, NULL, 0, &deadn), 0);
	CHECK(deadn == 0);
	eht_dev_sync();
	CHECK_RC(eht_dev_d2h(got, d_out, (size_t)NT * 24 * 512), 0);
	CHECK(!memcmp(got, want, (size_t)NT * 24 * 512));
	db.n_tokens = NT + 1;
	if (el)
		CHECK_RC(eht_engram_lookup_run(el, &db, (void *)(uintptr_t)d_out, NULL, 0, NULL), -EINVAL);
	eht_engram_lookup_destroy(el);
	eht_dptr all[] = {d_tok, d_dead, d_st, d_hist, d_out};
	for (int i = 0; i < 5; i++)
		eht_dev_free(all[i]);
	eht_lookup_destroy(lk);
	eht_table_close(t);
	free(tab);
	free(ids14);
	free(want);
	free(got);
	eht_engram_layout_free(l);
}

int main(void)
{
	if (!t_have_gpu())
		t_skip("no GPU");
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_preset("v41", &l), 0);
	check_equal(l, 1, 1, 1, 0);
	check_equal(l, 8192, 1, 2, 0);     /* one prefill window */
	check_equal(l, 256, 256, 3, 0);    /* a decode step */
	check_equal(l, 300000, 997, 4, 0); /* large, many requests */
	int32_t *map = malloc(129280 * 4);
	for (int i = 0; i < 129280; i++)
		map[i] = (int32_t)((uint64_t)i * 7919 % 99092);
	CHECK_RC(eht_engram_layout_set_token_map(l, map, 129280), 0);
	free(map);
	check_equal(l, 100000, 50, 5, 1);
	eht_engram_layout_free(l);
	check_fused();
	return t_done();
}
