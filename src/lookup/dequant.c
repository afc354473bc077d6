/* SPDX-License-Identifier: Apache-2.0 */
/* dequant.c: the CPU reference of the BF16 output format (eht.h documents the formula). The GPU kernel
 * (src/gpu/kernels/lookup/rows.cuh, dq1) follows the same integer steps, so both agree bit for bit. */
#include <pthread.h>
#include <string.h>

#include "eht.h"
#include "lookup/lookup_impl.h"

static inline uint32_t f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static inline float u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t eht_lk_dequant1(uint8_t w, uint8_t s)
{
	if ((w & 0x7f) == 0x7f)
		return 0x7fc0;
	uint32_t e = (w >> 3) & 15u, m = w & 7u;
	/* e4m3 magnitude, exact: normal (1 + m/8) * 2^(e-7), subnormal m * 2^-9. */
	float v = e ? u2f(((e + 120u) << 23) | (m << 20)) : (float)m * 0x1p-9f;
	/* The scale is the float with exponent bits s, as the model's reference kernel reads it:
	 * s = 0 is +0.0 and s = 255 is +inf (so a zero weight under it gives 0 * inf = NaN). */
	float sc = u2f((uint32_t)s << 23);
	volatile float p = v * sc; /* one IEEE multiply, exact unless it overflows */
	uint32_t u = f2u(p);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0x7fc0;
	u |= (uint32_t)(w & 0x80) << 24;
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

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
