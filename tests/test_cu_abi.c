/* SPDX-License-Identifier: Apache-2.0 */
/* test_cu_abi.c: eht declares the CUDA driver types itself (no toolkit needed to build); where
 * cuda.h is installed, check every size, offset and constant against it. Skips without cuda.h. */
#include <stdio.h>
#include <stdlib.h>

#if defined(EHT_HAVE_CUDA_H)
#include <cuda.h>
#include <stddef.h>

extern const long eht_abi_values[];

#include "cu_abi_list.h"

#define V(x) (long)(x),
static const long cuda_h_values[] = {EHT_CU_ABI_VALUES};

int main(void)
{
	int bad = 0;
	for (int i = 0; cuda_h_values[i] != -1 || eht_abi_values[i] != -1; i++) {
		if (cuda_h_values[i] != eht_abi_values[i]) {
			fprintf(stderr, "entry %d: cuda.h says %ld, src/gpu/cuda/cu_types.h says %ld\n", i,
				cuda_h_values[i], eht_abi_values[i]);
			bad++;
		}
		if (cuda_h_values[i] == -1 || eht_abi_values[i] == -1)
			break;
	}
	fprintf(stderr, bad ? "FAIL\n" : "PASS\n");
	return bad ? 1 : 0;
}
#else
int main(void)
{
	fprintf(stderr, "SKIP: cuda.h not installed; nothing to compare\n");
	return 77;
}
#endif
