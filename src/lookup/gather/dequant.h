/* SPDX-License-Identifier: Apache-2.0 */
/* dequant.h: the CPU's BF16 dequant of a packed Engram row by table lookup (dequant.c); the public
 * eht_engram_dequant_row takes AVX-512BW where the CPU has it (dequant_avx512.h). */
#ifndef EHT_LOOKUP_GATHER_DEQUANT_H
#define EHT_LOOKUP_GATHER_DEQUANT_H

#include <stdint.h>

/* One row by table lookup only (what rows take without AVX-512BW). */
void eht_lk_dequant_row_table(const uint8_t *row, uint16_t *out);

#endif
