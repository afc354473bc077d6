/* SPDX-License-Identifier: Apache-2.0 */
/* size.c: sizes written as text (size.h). */
#include "util/size.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

int eht_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-')
		return -EINVAL;
	char *end = NULL;
	errno = 0;
	double v;
	uint64_t iv;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		iv = strtoull(s, &end, 16);
		if (errno || end == s + 2 || *end)
			return -EINVAL;
		*out = iv;
		return 0;
	}
	iv = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	v = (double)iv;
	if (*end == '.') {
		v = strtod(s, &end);
		if (errno || end == s)
			return -EINVAL;
	}
	uint64_t mul = 1;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': mul = 1ull << 10; end++; break;
	case 'M': mul = 1ull << 20; end++; break;
	case 'G': mul = 1ull << 30; end++; break;
	case 'T': mul = 1ull << 40; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -EINVAL;
	double r = v * (double)mul;
	if (r >= 18446744073709551615.0)
		return -ERANGE;
	*out = (mul == 1 && v == (double)iv) ? iv : (uint64_t)llround(r);
	return 0;
}
