/* SPDX-License-Identifier: Apache-2.0 */
/* dequant.c: the CPU reference of the BF16 output format (eht.h documents the formula). The GPU kernel
 * (src/cuda/kernels/lookup.cu, dq1) follows the same integer steps, so both agree bit for bit. */
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
	if (s == 0xff || (w & 0x7f) == 0x7f)
		return 0x7fc0;
	uint32_t e = (w >> 3) & 15u, m = w & 7u;
	/* e4m3 magnitude, exact: normal (1 + m/8) * 2^(e-7), subnormal m * 2^-9. */
	float v = e ? u2f(((e + 120u) << 23) | (m << 20)) : (float)m * 0x1p-9f;
	/* 2^(s-127) is a float for every s < 255 (s == 0: the subnormal 2^-127). */
	float sc = u2f(s ? (uint32_t)s << 23 : 0x00400000u);
	volatile float p = v * sc; /* one IEEE multiply, exact unless it overflows */
	uint32_t u = f2u(p) | ((uint32_t)(w & 0x80) << 24);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void eht_engram_dequant_row(const uint8_t *row, uint16_t *out)
{
	const uint8_t *sc = row + EHT_ENGRAM_DIM;
	for (int i = 0; i < EHT_ENGRAM_DIM; i++)
		out[i] = eht_lk_dequant1(row[i], sc[i / EHT_ENGRAM_GROUP]);
}
