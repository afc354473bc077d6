/* SPDX-License-Identifier: Apache-2.0 */
/* fault.c: EHT_TEST_FAULT=<step>:rank=<r>: one step of a tier's share fails on one rank, so that the
 * all-or-none paths run in tests without broken hardware. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/table_impl.h"
#include "util/err.h"
#include "util/settings.h"

int eht_fault(const char *step, int rank)
{
	const char *spec = eht_setting_str(EHT_SET_TEST_FAULT);
	if (!spec || !step)
		return 0;
	size_t sl = strlen(step);
	for (const char *p = spec; *p;) {
		size_t n = strcspn(p, ",");
		if (n >= sl && !strncmp(p, step, sl) && (n == sl || p[sl] == ':')) {
			int match = n == sl;
			if (!match && !strncmp(p + sl, ":rank=", 6)) {
				char *end = NULL;
				long r = strtol(p + sl + 6, &end, 10);
				match = end != p + sl + 6 && end == p + n && r == rank;
			}
			if (match)
				return eht_err(EIO, "injected fault (EHT_TEST_FAULT=%s) at step '%s' on rank %d", spec, step,
					       rank);
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}
