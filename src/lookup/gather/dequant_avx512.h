/* SPDX-License-Identifier: Apache-2.0 */
/* dequant_avx512.h: the CPU's BF16 dequant of a packed Engram row with AVX-512BW (dequant_avx512.c). */
#ifndef EHT_LOOKUP_GATHER_DEQUANT_AVX512_H
#define EHT_LOOKUP_GATHER_DEQUANT_AVX512_H

#include <stdint.h>

/* 1 where rows are dequantized with AVX-512BW (the CPU has it and EHT_TEST_DEQUANT_SIMD is not 0). */
int eht_lk_dequant_simd(void);
/* One row with AVX-512BW (table: eht_lk_dequant1 of every scale << 8 | weight, for the groups whose
 * scale it cannot shift exactly); -1 (nothing written) without it. */
int eht_lk_dequant_row_simd(const uint8_t *row, uint16_t *out, const uint16_t *table);

#endif
