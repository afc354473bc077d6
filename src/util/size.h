/* SPDX-License-Identifier: Apache-2.0 */
/* size.h: sizes written as text ("123", "0x10", "4K", "1.5GiB"), as the settings (util/settings.h) and
 * the tools take them. */
#ifndef EHT_UTIL_SIZE_H
#define EHT_UTIL_SIZE_H

#include <stdint.h>

/* Parses "123", "0x10", "4K", "1.5G", "2MiB" style sizes (binary K/M/G/T suffixes, an optional i and
 * B); 0 on success, -EINVAL (malformed) or -ERANGE (above 2^64 - 1) otherwise. */
int eht_parse_size(const char *s, uint64_t *out);

#endif
