/* SPDX-License-Identifier: Apache-2.0 */
/* opts.h: versioned structs that start with `uint32_t size`: options in, information out. */
#ifndef EHT_UTIL_OPTS_H
#define EHT_UTIL_OPTS_H

#include <stddef.h>

/* Copies the caller's options struct src (its first uint32_t is its size) into dst, which holds
 * dst_size bytes already set to the defaults. A smaller struct (built against an older eht.h) fills
 * the fields it has and the rest keep their defaults; a larger one (a newer eht.h) is accepted when
 * every byte past dst_size is zero. dst's size field becomes dst_size. src NULL leaves dst as is.
 * Returns 0; -EINVAL (size below 4: not set); -E2BIG (a non-zero byte this library does not know,
 * naming `what`, the offset and the sizes). */
int eht_opts_in(void *dst, size_t dst_size, const void *src, const char *what);

/* Fills the caller's output struct dst (its first uint32_t, set by the caller, is its size) from
 * full (full_size bytes): the first min(size, full_size) bytes are copied, bytes past full_size are
 * zeroed, and the size field stays as the caller set it. Returns 0 or -EINVAL (NULL, size below 4). */
int eht_opts_out(void *dst, const void *full, size_t full_size, const char *what);

#endif
