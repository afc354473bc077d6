/* SPDX-License-Identifier: Apache-2.0 */
/* dequant_ref.h: the CPU reference of the BF16 output format, one weight (dequant_ref.c). */
#ifndef EHT_LOOKUP_GATHER_DEQUANT_REF_H
#define EHT_LOOKUP_GATHER_DEQUANT_REF_H

#include <stdint.h>

/* e4m3 byte w with ue8m0 scale s -> bf16 bits (eht.h documents the formula). */
uint16_t eht_lk_dequant1(uint8_t w, uint8_t s);

#endif
