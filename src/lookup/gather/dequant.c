/* SPDX-License-Identifier: Apache-2.0 */
/* dequant.c: the CPU's BF16 dequant of a packed Engram row: every (scale, weight) pair of the
 * reference (dequant_ref.c) in a table, and eht_engram_dequant_row, which takes AVX-512BW where the
 * CPU has it (dequant_avx512.c). */
#include <pthread.h>

#include "eht.h"
#include "lookup/gather/dequant.h"
#include "lookup/gather/dequant_avx512.h"
#include "lookup/gather/dequant_ref.h"

/* Every (scale, weight) pair precomputed once (128 KiB): the CPU paths dequantize by table lookup. */
static uint16_t dq_table[256 * 256];
static pthread_once_t dq_once = PTHREAD_ONCE_INIT;

static void dq_init(void)
{
	for (int s = 0; s < 256; s++)
		for (int w = 0; w < 256; w++)
			dq_table[s << 8 | w] = eht_lk_dequant1((uint8_t)w, (uint8_t)s);
}

void eht_lk_dequant_row_table(const uint8_t *row, uint16_t *out)
{
	pthread_once(&dq_once, dq_init);
	const uint8_t *sc = row + EHT_ENGRAM_DIM;
	for (int g = 0; g < EHT_ENGRAM_DIM / EHT_ENGRAM_GROUP; g++) {
		const uint16_t *t = dq_table + ((size_t)sc[g] << 8);
		for (int i = g * EHT_ENGRAM_GROUP; i < (g + 1) * EHT_ENGRAM_GROUP; i++)
			out[i] = t[row[i]];
	}
}

void eht_engram_dequant_row(const uint8_t *row, uint16_t *out)
{
	pthread_once(&dq_once, dq_init);
	if (eht_lk_dequant_row_simd(row, out, dq_table) != 0)
		eht_lk_dequant_row_table(row, out);
}
