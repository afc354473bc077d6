/* SPDX-License-Identifier: Apache-2.0 */
/* fatbin.c: finding an embedded kernel image by name. */
#include "gpu/fatbin.h"

#include <string.h>

const struct eht_fatbin *eht_fatbin_find(const char *name)
{
	for (const struct eht_fatbin *f = eht_fatbins; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}
