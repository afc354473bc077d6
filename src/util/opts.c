/* SPDX-License-Identifier: Apache-2.0 */
/* opts.c: structs that grow by their `size` field stay compatible both ways (see opts.h). */
#include "util/opts.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "eht.h"
#include "util/err.h"

int eht_opts_in(void *dst, size_t dst_size, const void *src, const char *what)
{
	if (!src)
		return 0;
	uint32_t size;
	memcpy(&size, src, sizeof(size));
	if (size < sizeof(uint32_t))
		return eht_err(EINVAL, "%s: size %u is too small (set it to sizeof the struct, %zu here)", what, size,
			       dst_size);
	const unsigned char *s = src;
	for (size_t i = dst_size; i < size; i++)
		if (s[i])
			return eht_err(E2BIG, "%s: size %u: byte %zu is not zero, and this libeht (%s) knows only the first "
					      "%zu bytes (a field of a newer eht.h is set)",
				       what, size, i, EHT_VERSION, dst_size);
	memcpy(dst, src, size < dst_size ? size : dst_size);
	uint32_t ds = (uint32_t)dst_size;
	memcpy(dst, &ds, sizeof(ds));
	return 0;
}

int eht_opts_out(void *dst, const void *full, size_t full_size, const char *what)
{
	if (!dst)
		return eht_err(EINVAL, "%s: NULL struct", what);
	uint32_t size;
	memcpy(&size, dst, sizeof(size));
	if (size < sizeof(uint32_t))
		return eht_err(EINVAL, "%s: size %u is too small (set it to sizeof the struct, %zu here)", what, size,
			       full_size);
	unsigned char *d = dst;
	if (size > full_size)
		memset(d + full_size, 0, size - full_size);
	size_t n = size < full_size ? size : full_size;
	if (n > sizeof(size))
		memcpy(d + sizeof(size), (const unsigned char *)full + sizeof(size), n - sizeof(size));
	return 0;
}
