/* SPDX-License-Identifier: Apache-2.0 */
/* control.cu: the negative control of scripts/analyze-kernels.sh. Two defects the clang static
 * analyzer's default checkers must report (an uninitialized value stored, a null pointer
 * dereferenced), so the script knows its analyzer really reads device code. Never built. */
#include "gpu/kernels/lookup/rows.cuh"

extern "C" __global__ void eht_analyze_control(int *out, int n)
{
	int x;
	if (n > 3)
		x = 1;
	out[threadIdx.x] = x;
	int *p = nullptr;
	if (n == 7)
		*p = 3;
}
