/* SPDX-License-Identifier: Apache-2.0 */
/* dequant_ref.c: the CPU reference of the BF16 output format (eht.h documents the formula), one
 * weight: the table of dequant.c and the AVX-512 path (dequant_avx512.c) are built from it, and the
 * GPU kernel (src/gpu/kernels/lookup/rows.cuh, dq1) follows the same integer steps, so all agree bit
 * for bit. */
#include <string.h>

#include "lookup/gather/dequant_ref.h"

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
