/* SPDX-License-Identifier: Apache-2.0 */
/* fault.h: whether EHT_TEST_FAULT names a step, so tests reach failure paths (a tier's share step on
 * one rank, an old kernel's refusal in a region's populate) without broken hardware or old kernels. */
#ifndef EHT_UTIL_FAULT_H
#define EHT_UTIL_FAULT_H

#include <stdbool.h>

/* EHT_TEST_FAULT (comma-separated) lists `step`, or `step:rank=R` with R == rank; rank < 0: only the
 * bare step counts. */
bool eht_fault_listed(const char *step, int rank);

#endif
