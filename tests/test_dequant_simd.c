/* SPDX-License-Identifier: Apache-2.0 */
/* test_dequant_simd.c: the AVX-512BW row dequant (the CPU gathers' bf16 path) bit for bit the scalar
 * reference, eht_lk_dequant1, for every (scale, weight) pair: all 256 weights under each of the 256
 * scales (the safe range's edges, 0 and +inf included); then random rows of mixed scales against the
 * table path, and eht_engram_dequant_row (which uses it) against both. Exit 77 where the CPU lacks
 * AVX-512BW (the table path alone is checked by test_lookup_host). */
#include <string.h>

#include "lookup/lookup_impl.h"
#include "testutil.h"

#define RB EHT_ENGRAM_ROW_BYTES

static uint16_t g_table[256 * 256];

int main(void)
{
	if (!eht_lk_dequant_simd())
		t_skip("no AVX-512BW on this CPU (or EHT_TEST_DEQUANT_SIMD=0)");
	for (int s = 0; s < 256; s++)
		for (int w = 0; w < 256; w++)
			g_table[s << 8 | w] = eht_lk_dequant1((uint8_t)w, (uint8_t)s);
	uint8_t row[RB];
	uint16_t got[EHT_ENGRAM_DIM], want[EHT_ENGRAM_DIM];
	long bad = 0;
	for (int s = 0; s < 256; s++) {
		for (int i = 0; i < EHT_ENGRAM_DIM; i++)
			row[i] = (uint8_t)(i * 37 + s); /* every weight once, in another order per scale */
		memset(row + EHT_ENGRAM_DIM, s, RB - EHT_ENGRAM_DIM);
		memset(got, 0xab, sizeof(got));
		CHECK(eht_lk_dequant_row_simd(row, got, g_table) == 0);
		for (int i = 0; i < EHT_ENGRAM_DIM; i++)
			if (got[i] != eht_lk_dequant1(row[i], (uint8_t)s) && bad++ < 5)
				fprintf(stderr, "scale %d weight 0x%02x: 0x%04x, want 0x%04x\n", s, row[i], got[i],
					eht_lk_dequant1(row[i], (uint8_t)s));
	}
	CHECK(bad == 0);
	uint64_t rs = 11;
	bad = 0;
	for (int r = 0; r < 20000; r++) {
		for (int i = 0; i < RB; i++)
			row[i] = (uint8_t)t_rand(&rs);
		if (r % 2) /* mostly realistic scales (around 2^-10 .. 2^0), some of every kind */
			for (int g = 0; g < RB - EHT_ENGRAM_DIM; g++)
				row[EHT_ENGRAM_DIM + g] = (uint8_t)(t_rand(&rs) % 8 ? 112 + t_rand(&rs) % 16 : t_rand(&rs));
		CHECK(eht_lk_dequant_row_simd(row, got, g_table) == 0);
		eht_lk_dequant_row_table(row, want);
		bad += memcmp(got, want, sizeof(got)) != 0;
		eht_engram_dequant_row(row, got);
		bad += memcmp(got, want, sizeof(got)) != 0;
	}
	CHECK(bad == 0);
	return t_done();
}
