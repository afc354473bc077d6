/* SPDX-License-Identifier: Apache-2.0 */
/* disk_ref.h: helpers shared by the disk tier's tests: the in-memory packed reference built from a
 * checkpoint's tensors, and id lists with duplicates, dead ids and ids of every rank. */
#ifndef EHT_TESTS_DISK_REF_H
#define EHT_TESTS_DISK_REF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define W_NAME(layer, buf) (snprintf(buf, sizeof(buf), "model.layers.%u.engram.embedding.weight", layer), buf)
#define S_NAME(layer, buf) (snprintf(buf, sizeof(buf), "model.layers.%u.engram.embedding.scale", layer), buf)

/* Packs weight row || scale row for every row, read through the st layer's views (not the disk
 * tier). Returns malloc'd rows x *rb bytes, or NULL (a CHECK failed). */
static inline uint8_t *ref_table(const char *ckpt_path, unsigned layer, uint64_t *rows, uint64_t *rb)
{
	char wn[128], sn[128];
	eht_ckpt *ck = NULL;
	struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
	CHECK_RC(eht_ckpt_open(ckpt_path, 0, &ck), 0);
	if (!ck)
		return NULL;
	CHECK_RC(eht_ckpt_find(ck, W_NAME(layer, wn), &w), 0);
	CHECK_RC(eht_ckpt_find(ck, S_NAME(layer, sn), &s), 0);
	uint8_t *t = NULL;
	if (w.ndim == 2 && s.ndim == 2 && w.shape[0] == s.shape[0]) {
		uint64_t wb = w.shape[1], sb = s.shape[1]; /* 8-bit dtypes */
		*rows = w.shape[0];
		*rb = wb + sb;
		t = malloc(*rows * *rb);
		for (uint64_t r = 0; t && r < *rows; r++) {
			memcpy(t + r * *rb, (const uint8_t *)w.data + r * wb, wb);
			memcpy(t + r * *rb + wb, (const uint8_t *)s.data + r * sb, sb);
		}
	}
	CHECK(t != NULL);
	eht_ckpt_close(ck);
	return t;
}

/* n ids (int64) over [-3, rows + 3): duplicates (every 3rd repeats an earlier one), dead ids
 * (negative, >= rows), and ids of every rank. */
static inline void ref_ids(int64_t *ids, size_t n, uint64_t rows, uint64_t *rs)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = t_rand(rs);
		if (x % 11 == 0)
			ids[i] = -1 - (int64_t)(x % 3);
		else if (x % 13 == 0)
			ids[i] = (int64_t)rows + (int64_t)(x % 3);
		else if (x % 3 == 0 && i)
			ids[i] = ids[t_rand(rs) % i];
		else
			ids[i] = (int64_t)(x % rows);
	}
}

#endif
