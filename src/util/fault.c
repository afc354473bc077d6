/* SPDX-License-Identifier: Apache-2.0 */
/* fault.c: the parse of EHT_TEST_FAULT's list (fault.h). */
#include "util/fault.h"

#include <stdlib.h>
#include <string.h>

#include "util/settings.h"

bool eht_fault_listed(const char *step, int rank)
{
	const char *spec = eht_setting_str(EHT_SET_TEST_FAULT);
	if (!spec || !step)
		return false;
	size_t sl = strlen(step);
	for (const char *p = spec; *p;) {
		size_t n = strcspn(p, ",");
		if (n >= sl && !strncmp(p, step, sl) && (n == sl || p[sl] == ':')) {
			if (n == sl)
				return true;
			if (rank >= 0 && !strncmp(p + sl, ":rank=", 6)) {
				char *end = NULL;
				long r = strtol(p + sl + 6, &end, 10);
				if (end != p + sl + 6 && end == p + n && r == rank)
					return true;
			}
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}
