/* SPDX-License-Identifier: Apache-2.0 */
/* version.c: the library's version string. */
#include "eht.h"

const char *eht_version(void) { return EHT_VERSION; }
