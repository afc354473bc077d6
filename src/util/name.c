/* SPDX-License-Identifier: Apache-2.0 */
/* name.c: validation of names that end up in /dev/shm file names or abstract socket addresses. */
#include "util/name.h"

#include <errno.h>
#include <string.h>

#include "util/err.h"

int eht_name_check(const char *what, const char *name, size_t max, bool file_name)
{
	if (!name)
		return eht_err(EINVAL, "%s is NULL", what);
	size_t n = strlen(name);
	if (n == 0 || n > max)
		return eht_err(EINVAL, "%s '%.40s%s' has %zu characters (1..%zu of [A-Za-z0-9._-] allowed)", what, name,
			       n > 40 ? "..." : "", n, max);
	if (file_name && name[0] == '.')
		return eht_err(EINVAL, "%s '%s' starts with '.'", what, name);
	if (file_name && strstr(name, ".."))
		return eht_err(EINVAL, "%s '%s' contains '..'", what, name);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-'))
			return eht_err(EINVAL, "%s '%s': character 0x%02x at %zu is not one of [A-Za-z0-9._-]", what,
				       name, c, i);
	}
	return 0;
}
