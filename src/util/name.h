/* SPDX-License-Identifier: Apache-2.0 */
/* name.h: the one rule for names that become file or socket names (regions, group and serve keys). */
#ifndef EHT_UTIL_NAME_H
#define EHT_UTIL_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* Checks that name is 1..max characters of [A-Za-z0-9._-]; with file_name also that it neither
 * starts with '.' nor contains "..", so it cannot hide or climb out of a folder. what names the
 * thing in the message ("region name", "serve key"). Returns 0 or -EINVAL naming the rule broken. */
int eht_name_check(const char *what, const char *name, size_t max, bool file_name);

#endif
