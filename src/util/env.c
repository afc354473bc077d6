/* SPDX-License-Identifier: Apache-2.0 */
/* env.c: options read from the environment. */
#include "util/env.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "util/log.h"

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

uint64_t eht_env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	uint64_t v;
	if (!s || !*s)
		return def;
	if (eht_parse_size(s, &v) != 0) {
		eht_warn("ignoring %s=%s: not a non-negative integer or size", name, s);
		return def;
	}
	return v;
}

double eht_env_double(const char *name, double def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end) {
		eht_warn("ignoring %s=%s: not a number", name, s);
		return def;
	}
	return v;
}

const char *eht_env_str(const char *name, const char *def)
{
	const char *s = getenv(name);
	return (s && *s) ? s : def;
}
