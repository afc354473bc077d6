/* SPDX-License-Identifier: Apache-2.0 */
/* engram_impl.h: the Engram layout's internals shared by the CPU hash, the GPU hash and the state. */
#ifndef EHT_ENGRAM_IMPL_H
#define EHT_ENGRAM_IMPL_H

#include <stdint.h>

#include "eht_engram.h"

#define ENGRAM_MAX_COLS ((EHT_ENGRAM_MAX_NGRAM - 1) * EHT_ENGRAM_MAX_HEADS)

struct eht_engram_layout {
	uint32_t n_layers, max_ngram, n_heads, cols;
	uint32_t layer_ids[EHT_ENGRAM_MAX_LAYERS];
	uint64_t vocab[EHT_ENGRAM_MAX_NGRAM]; /* engram vocab size per order (index order - 2) */
	uint64_t compressed_vocab;
	int32_t pad;
	uint64_t rows[EHT_ENGRAM_MAX_LAYERS];
	uint64_t mult[EHT_ENGRAM_MAX_LAYERS][EHT_ENGRAM_MAX_NGRAM];
	/* per column: modulus, offset, and floor(2^64 / modulus) for the reciprocal mod */
	uint64_t mod[EHT_ENGRAM_MAX_LAYERS][ENGRAM_MAX_COLS];
	uint64_t off[EHT_ENGRAM_MAX_LAYERS][ENGRAM_MAX_COLS];
	uint64_t rcp[EHT_ENGRAM_MAX_LAYERS][ENGRAM_MAX_COLS];
	uint64_t tokenizer_vocab; /* entries a token map must have (0: not known) */
	int32_t *token_map;
	uint32_t token_map_len;
	void *gpu; /* struct engram_gpu *, made on the first GPU call (hash_gpu.c) */
};

/* x mod m for x < 2^64 through r = floor(2^64 / m): the quotient estimate is low by at most one. */
static inline uint64_t engram_mod(uint64_t x, uint64_t m, uint64_t r)
{
	uint64_t q = (uint64_t)(((unsigned __int128)x * r) >> 64);
	uint64_t y = x - q * m;
	return y >= m ? y - m : y;
}

/* Validates a batch against the layout (sizes, starts, tokens, history). */
int engram_check_batch(const struct eht_engram_layout *l, const struct eht_engram_batch *b, int check_values);

void engram_gpu_free(struct eht_engram_layout *l);

/* GPU hash of batch (device pointers) into d_rows, one layer (layer_sel >= 0: rows [token][col]) or
 * all (-1), on stream s (eht_stream); *ctx (may be NULL) gets the context of the layout's GPU copy. */
int engram_gpu_hash_layer(const struct eht_engram_layout *l, const struct eht_engram_batch *b, int layer_sel,
			  uint64_t d_rows, void *s, void **ctx);

#endif
