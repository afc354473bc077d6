/* SPDX-License-Identifier: Apache-2.0 */
/* cu_abi_eht.c: layout facts of eht's own CUDA declarations, compared with cuda.h by test_cu_abi. */
#include <stddef.h>

#include "gpu/cuda/cu_types.h"

#include "cu_abi_list.h"

#define V(x) (long)(x),
const long eht_abi_values[] = {EHT_CU_ABI_VALUES};
