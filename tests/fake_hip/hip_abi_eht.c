/* SPDX-License-Identifier: Apache-2.0 */
/* hip_abi_eht.c: the values of eht's own HIP declarations, compared with ROCm's by test_hip_abi. */
#include <stddef.h>

#include "gpu/hip/hip_types.h"

#include "hip_abi_list.h"

#define V(x) (long)(x),
const long eht_hip_abi_values[] = {EHT_HIP_ABI_VALUES};
