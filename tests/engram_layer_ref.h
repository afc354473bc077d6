/* SPDX-License-Identifier: Apache-2.0 */
/* engram_layer_ref.h: the reference of eht_engram_layer_lookup, written from ENGRAM.md's rules (a
 * rank reads columns [head_start, head_start + part) of the [T, H] hash output; padded heads and ids
 * outside [vocab_start, vocab_end) give zero rows), and the cases the layer tests run: every
 * (head_start, part) of tp 1/2/3/4/5/6/8 over a layer of the "v41-small" layout, both vocab windows
 * (the whole layer's table; a table of the rank's rows alone), T in {1, 7, 256, 2048}, int32 and
 * int64 ids laid out with other strides, dense and strided outputs. Included by one test each. */
#ifndef EHT_TEST_ENGRAM_LAYER_REF_H
#define EHT_TEST_ENGRAM_LAYER_REF_H

#include <string.h>

#include "eht.h"
#include "testutil.h"

#define LR_RB 264u
#define LR_H 24u

struct lr_case {
	uint32_t tp, rank, head_start, part;
	int64_t vs, ve;      /* the rank's vocab range */
	int shard;           /* the table holds only [vs, ve), from its row 0 */
	uint64_t T;
	int id64, fmt;
	int layout;          /* ids: 0 [T, 2, 24] (another layer's columns between), 1 transposed [24, T] */
	uint64_t out_pad;    /* out_stride - part * R (0: dense) */
};

/* ids of a [T, 24] matrix placed in a buffer with the case's strides; *s_tok / *s_head in elements. */
static void *lr_ids(const struct lr_case *c, const int64_t *m, int64_t *s_tok, int64_t *s_head, size_t *bytes)
{
	const size_t isz = c->id64 ? 8 : 4;
	size_t n;
	if (c->layout == 0) {
		*s_tok = 2 * LR_H;
		*s_head = 1;
		n = c->T * 2 * LR_H;
	} else {
		*s_tok = 1;
		*s_head = (int64_t)c->T;
		n = c->T * LR_H;
	}
	uint8_t *b = malloc(n * isz + 8);
	if (!b)
		return NULL;
	memset(b, 0x5a, n * isz); /* the other layer's columns: ids a wrong stride would read */
	for (uint64_t t = 0; t < c->T; t++)
		for (uint32_t h = 0; h < LR_H; h++) {
			size_t at = (size_t)(t * *s_tok + h * *s_head);
			if (c->id64)
				((int64_t *)(void *)b)[at] = m[t * LR_H + h];
			else
				((int32_t *)(void *)b)[at] = (int32_t)m[t * LR_H + h];
		}
	*bytes = n * isz;
	return b;
}

/* The [T, 24] ids: most inside the rank's range, some in other ranks' ranges, -1, past the table. */
static void lr_matrix(const struct lr_case *c, int64_t rows, int64_t *m, uint64_t *rs)
{
	for (uint64_t i = 0; i < c->T * LR_H; i++) {
		uint64_t r = t_rand(rs);
		int64_t v;
		switch (r % 8) {
		case 0: v = (int64_t)(t_rand(rs) % (uint64_t)rows); break;
		case 1: v = -1; break;
		case 2: v = rows + (int64_t)(t_rand(rs) % 5); break;
		default: v = c->ve > c->vs ? c->vs + (int64_t)(t_rand(rs) % (uint64_t)(c->ve - c->vs)) : 0; break;
		}
		m[i] = v;
	}
}

/* Token t, column j's row of the table holding absolute rows [first, first + local) at row 0, or -1:
 * a dead id (a padded head, an id outside the vocab window, a row outside the table). */
static int64_t lr_row(const struct lr_case *c, const int64_t *m, int64_t first, int64_t local, int64_t shift,
		      uint64_t t, uint32_t j)
{
	const uint32_t col = c->head_start + j;
	if (col >= LR_H)
		return -1;
	int64_t v = m[t * LR_H + col];
	if (v < c->vs || v >= c->ve)
		return -1;
	int64_t row = v + shift;
	return row < first || row >= first + local ? -1 : row - first;
}

/* The dead ids of the case's ids m (lr_row's rule): what an engine's dead count must say. */
static inline uint64_t lr_dead(const struct lr_case *c, const int64_t *m, int64_t first, int64_t local, int64_t shift)
{
	uint64_t dead = 0;
	for (uint64_t t = 0; t < c->T; t++)
		for (uint32_t j = 0; j < c->part; j++)
			dead += lr_row(c, m, first, local, shift, t, j) < 0;
	return dead;
}

/* Expected output of token t, column j; table holds absolute rows [first, first + local) at row 0. */
static void lr_want(const struct lr_case *c, const int64_t *m, const uint8_t *table, int64_t first, int64_t local,
		    int64_t shift, uint64_t t, uint32_t j, uint8_t *dst)
{
	const size_t R = c->fmt == EHT_LOOKUP_BF16 ? 512 : LR_RB;
	memset(dst, 0, R);
	const int64_t row = lr_row(c, m, first, local, shift, t, j);
	if (row < 0)
		return;
	const uint8_t *src = table + (size_t)row * LR_RB;
	if (c->fmt == EHT_LOOKUP_RAW)
		memcpy(dst, src, LR_RB);
	else
		eht_engram_dequant_row(src, (uint16_t *)(void *)dst);
}

/* Compares out (host memory, the case's stride) with the reference; returns mismatching rows. */
static uint64_t lr_compare(const struct lr_case *c, const int64_t *m, const uint8_t *table, int64_t first,
			   int64_t local, int64_t shift, const uint8_t *out, uint64_t stride)
{
	const size_t R = c->fmt == EHT_LOOKUP_BF16 ? 512 : LR_RB;
	uint8_t want[512];
	uint64_t bad = 0;
	for (uint64_t t = 0; t < c->T; t++)
		for (uint32_t j = 0; j < c->part; j++) {
			lr_want(c, m, table, first, local, shift, t, j, want);
			if (memcmp(out + t * stride + j * R, want, R)) {
				if (!bad)
					fprintf(stderr, "tp %u rank %u (head %u part %u, vocab [%lld, %lld)%s) T %llu id%d fmt %d "
						"layout %d pad %llu: token %llu column %u differs\n", c->tp, c->rank,
						c->head_start, c->part, (long long)c->vs, (long long)c->ve,
						c->shard ? " shard" : "", (unsigned long long)c->T, c->id64 ? 64 : 32,
						c->fmt, c->layout, (unsigned long long)c->out_pad, (unsigned long long)t, j);
				bad++;
			}
		}
	return bad;
}

/* Fills the case's rank geometry from the layout's sharding (vLLM's rule). 0, or -1 when tp refuses. */
static int lr_rank(const eht_engram_layout *lay, struct lr_case *c)
{
	uint64_t vs, ve;
	if (eht_engram_shard(lay, 0, c->tp, c->rank, &vs, &ve))
		return -1;
	c->part = (LR_H + c->tp - 1) / c->tp;
	c->head_start = c->rank * c->part;
	c->vs = (int64_t)vs;
	c->ve = (int64_t)ve;
	return 0;
}

/* What one case runs on: the layer, the case (its T, id type, layout and output padding set), the
 * table's bytes as the reference reads them (a shard's from its row 0), its rows, the shift of live
 * ids onto them, and whether the layer splits calls (max_tokens below T). */
struct lr_at {
	eht_engram_layer *l;
	struct lr_case *c;
	const uint8_t *base;
	int64_t local, shift;
	int small_max;
};

/* Every (head_start, part) of tp 1/2/3/4/5/6/8 x both vocab windows x raw and bf16 x T in {1, 7, 256,
 * 2048}: a layer over `whole` (or a table of the rank's rows, wrapped for `device`), every third with
 * max_tokens small_max_tokens, then fn for each T with the id type, layout and output padding varied
 * case by case. Returns the cases run. */
static inline unsigned lr_for_each_case(const eht_engram_layout *lay, eht_table *whole, const uint8_t *table, int64_t rows,
				 int device, unsigned threads, uint64_t small_max_tokens,
				 void (*fn)(const struct lr_at *at, void *arg), void *arg)
{
	static const uint32_t tps[] = {1, 2, 3, 4, 5, 6, 8};
	static const uint64_t Ts[] = {1, 7, 256, 2048};
	unsigned n = 0;
	for (size_t a = 0; a < sizeof(tps) / sizeof(tps[0]); a++)
		for (uint32_t rank = 0; rank < tps[a]; rank++)
			for (int shard = 0; shard < 2; shard++)
				for (int fmt = 0; fmt < 2; fmt++) {
					struct lr_case c = {.tp = tps[a], .rank = rank, .shard = shard, .fmt = fmt};
					if (lr_rank(lay, &c)) {
						fprintf(stderr, "tp %u refused by eht_engram_shard\n", c.tp);
						t_failures++;
						continue;
					}
					eht_table *t = whole;
					if (shard)
						CHECK_RC(eht_table_wrap((void *)(table + (size_t)c.vs * LR_RB), (uint64_t)(c.ve - c.vs),
									LR_RB, device, "shard", &t), 0);
					const int small = n % 3 == 0;
					struct eht_engram_layer_opts o = {
						.size = sizeof(o), .head_start = c.head_start, .part = c.part, .format = fmt,
						.device = device, .vocab_start = (uint64_t)c.vs, .vocab_end = (uint64_t)c.ve,
						.threads = threads, .max_tokens = small ? small_max_tokens : 0};
					eht_engram_layer *l = NULL;
					CHECK_RC(eht_engram_layer_create(t, &o, &l), 0);
					CHECK(!l || eht_engram_layer_max_tokens(l) == (small ? small_max_tokens : 8192));
					/* the shard is stored from its row 0: live ids move by -vs onto it */
					struct lr_at at = {.l = l, .c = &c, .small_max = small,
							   .base = shard ? table + (size_t)c.vs * LR_RB : table,
							   .local = shard ? c.ve - c.vs : rows, .shift = shard ? -c.vs : 0};
					for (size_t k = 0; l && k < sizeof(Ts) / sizeof(Ts[0]); k++, n++) {
						c.T = Ts[k];
						c.id64 = (n >> 1) & 1;
						c.layout = (n >> 2) & 1;
						c.out_pad = (n % 5 == 0) ? 48 : 0;
						fn(&at, arg);
					}
					eht_engram_layer_destroy(l);
					if (shard)
						eht_table_close(t);
				}
	return n;
}

#endif
