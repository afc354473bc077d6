/* SPDX-License-Identifier: Apache-2.0 */
/* test_hip_abi.c: eht declares the HIP runtime's types and constants itself (src/gpu/hip/hip_types.h:
 * no ROCm needed to build); where hip_runtime_api.h is installed (scripts/deps.sh hip), check each
 * against it. Skips without it. */
#include <stdio.h>

#if defined(EHT_HAVE_HIP_H)
#include <hip/hip_runtime_api.h>

extern const long eht_hip_abi_values[];

#include "hip_abi_list.h"

#define V(x) (long)(x),
static const long hip_h_values[] = {EHT_HIP_ABI_VALUES};

int main(void)
{
	int bad = 0;
	for (int i = 0;; i++) {
		if (hip_h_values[i] != eht_hip_abi_values[i]) {
			fprintf(stderr, "entry %d: hip_runtime_api.h says %ld, src/gpu/hip/hip_types.h says %ld\n", i,
				hip_h_values[i], eht_hip_abi_values[i]);
			bad++;
		}
		if (hip_h_values[i] == -1 || eht_hip_abi_values[i] == -1)
			break;
	}
	fprintf(stderr, bad ? "FAIL\n" : "PASS (HIP %d)\n", HIP_VERSION);
	return bad ? 1 : 0;
}
#else
int main(void)
{
	fprintf(stderr, "SKIP: hip_runtime_api.h not installed; nothing to compare\n");
	return 77;
}
#endif
