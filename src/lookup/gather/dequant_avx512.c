/* SPDX-License-Identifier: Apache-2.0 */
/* dequant_avx512.c: the BF16 dequant of a packed Engram row with AVX-512BW, 32 weights (one scale) per
 * instruction group, bit for bit eht_lk_dequant1's. The scale is a power of two, so for every scale
 * byte in [10, 246] each weight's result is exact and normal: the bf16 bits of the weight's magnitude
 * (a 128-entry table, looked up with two permutes) plus (s - 127) in the exponent field, the sign
 * or-ed in, zero kept zero and the NaN byte 0x7f giving 0x7fc0. Groups with other scales (0, +inf,
 * results that overflow or go subnormal) take the reference's table. Every CPU path that writes bf16
 * (lookups into host memory, the CPU strategy, eht_engram_dequant_row) gets it: 31 against 165 ns a
 * row on the lent machines' Xeons, a few instructions a weight instead of a table load each. */
#include <pthread.h>
#include <stdint.h>

#include "eht.h"
#include "lookup/gather/dequant_avx512.h"
#include "lookup/gather/dequant_ref.h"
#include "util/settings.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EHT_HAVE_AVX512_DQ 1

#define SAFE_LO 10u  /* smallest scale byte whose results stay normal (a subnormal weight 2^-9 times it) */
#define SAFE_HI 246u /* largest whose results stay finite (448 times it) */

static uint16_t mag_bits[128] __attribute__((aligned(64))); /* bf16 bits of each e4m3 magnitude at scale 1 */

__attribute__((target("avx512f,avx512bw"))) static void row_avx512(const uint8_t *row, uint16_t *out,
								      const uint16_t *table)
{
	const __m512i t0 = _mm512_load_si512((const void *)mag_bits), t1 = _mm512_load_si512((const void *)(mag_bits + 32)),
		      t2 = _mm512_load_si512((const void *)(mag_bits + 64)), t3 = _mm512_load_si512((const void *)(mag_bits + 96));
	const __m512i b6 = _mm512_set1_epi16(0x40), m7f = _mm512_set1_epi16(0x7f), b7 = _mm512_set1_epi16(0x80),
		      qnan = _mm512_set1_epi16(0x7fc0);
	const uint8_t *scales = row + EHT_ENGRAM_DIM;
	for (int g = 0; g < EHT_ENGRAM_DIM / EHT_ENGRAM_GROUP; g++) {
		const uint8_t *w = row + g * EHT_ENGRAM_GROUP;
		uint16_t *o = out + g * EHT_ENGRAM_GROUP;
		unsigned s = scales[g];
		if (s < SAFE_LO || s > SAFE_HI) {
			const uint16_t *t = table + ((size_t)s << 8);
			for (int i = 0; i < EHT_ENGRAM_GROUP; i++)
				o[i] = t[w[i]];
			continue;
		}
		__m512i idx = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)w));
		/* permutex2var reads an index's low 6 bits (entries 0-63 of the pair); bit 6 picks the pair */
		__m512i lo = _mm512_permutex2var_epi16(t0, idx, t1), hi = _mm512_permutex2var_epi16(t2, idx, t3);
		__m512i base = _mm512_mask_blend_epi16(_mm512_test_epi16_mask(idx, b6), lo, hi);
		__mmask32 nonzero = _mm512_test_epi16_mask(base, base);
		__mmask32 nan = _mm512_cmpeq_epi16_mask(_mm512_and_si512(idx, m7f), m7f);
		__m512i r = _mm512_maskz_add_epi16(nonzero, base, _mm512_set1_epi16((short)(((int)s - 127) * 128)));
		r = _mm512_or_si512(r, _mm512_slli_epi16(_mm512_and_si512(idx, b7), 8));
		r = _mm512_mask_mov_epi16(r, nan, qnan);
		_mm512_storeu_si512((void *)o, r);
	}
}
#endif

static int simd_on;
static pthread_once_t simd_once = PTHREAD_ONCE_INIT;

static void simd_init(void)
{
#ifdef EHT_HAVE_AVX512_DQ
	/* EHT_TEST_DEQUANT_SIMD=0: the table for every group (diagnosis; the tests compare both). */
	if (!eht_setting_bool(EHT_SET_TEST_DEQUANT_SIMD))
		return;
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw"))
		return;
	for (unsigned m = 0; m < 128; m++)
		mag_bits[m] = eht_lk_dequant1((uint8_t)m, 127);
	simd_on = 1;
#endif
}

int eht_lk_dequant_simd(void)
{
	pthread_once(&simd_once, simd_init);
	return simd_on;
}

int eht_lk_dequant_row_simd(const uint8_t *row, uint16_t *out, const uint16_t *table)
{
	if (!eht_lk_dequant_simd())
		return -1;
#ifdef EHT_HAVE_AVX512_DQ
	row_avx512(row, out, table);
	return 0;
#else
	(void)row, (void)out, (void)table;
	return -1;
#endif
}
