/* SPDX-License-Identifier: Apache-2.0 */
/* env.h: options read from the environment, with defaults and validation. */
#ifndef EHT_UTIL_ENV_H
#define EHT_UTIL_ENV_H

#include <stdint.h>

/* Value of NAME as an unsigned integer (decimal or 0x hex, optional K/M/G/T binary suffix),
 * or def when unset or empty. A malformed value logs one warning and yields def. */
uint64_t eht_env_u64(const char *name, uint64_t def);
/* Value of NAME as a floating-point number, or def. */
double eht_env_double(const char *name, double def);
/* Value of NAME, or def when unset or empty. */
const char *eht_env_str(const char *name, const char *def);
/* Parses "123", "0x10", "4K", "1.5G" style sizes; 0 on success, -EINVAL otherwise. */
int eht_parse_size(const char *s, uint64_t *out);

#endif
