/* SPDX-License-Identifier: Apache-2.0 */
/* fault.c: EHT_TEST_FAULT=<step>:rank=<r>: one step of a tier's share fails on one rank, so that the
 * all-or-none paths run in tests without broken hardware. */
#include <errno.h>

#include "table/table_impl.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/settings.h"

int eht_fault(const char *step, int rank)
{
	if (!eht_fault_listed(step, rank))
		return 0;
	return eht_err(EIO, "injected fault (EHT_TEST_FAULT=%s) at step '%s' on rank %d",
		       eht_setting_str(EHT_SET_TEST_FAULT), step, rank);
}
