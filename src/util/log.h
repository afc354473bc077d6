/* SPDX-License-Identifier: Apache-2.0 */
/* log.h: leveled logging to stderr; the level comes from EHT_LOG (error|warn|info|debug|trace). */
#ifndef EHT_UTIL_LOG_H
#define EHT_UTIL_LOG_H

#include <stdatomic.h>

#include "util/err.h"

enum eht_log_level { EHT_LOG_ERROR = 0, EHT_LOG_WARN, EHT_LOG_INFO, EHT_LOG_DEBUG, EHT_LOG_TRACE };

/* True when messages of this level are printed. */
int eht_log_enabled(int level);
void eht_log(int level, const char *fmt, ...) EHT_PRINTF(2, 3);

#define eht_error(...) eht_log(EHT_LOG_ERROR, __VA_ARGS__)
#define eht_warn(...) eht_log(EHT_LOG_WARN, __VA_ARGS__)
#define eht_info(...) eht_log(EHT_LOG_INFO, __VA_ARGS__)
#define eht_debug(...) eht_log(EHT_LOG_DEBUG, __VA_ARGS__)

/* Warns once per call site per process: one line for each fallback, not one per call. */
#define eht_warn_once(...)                                                     \
	do {                                                                   \
		static atomic_flag eht_once_ = ATOMIC_FLAG_INIT;               \
		if (!atomic_flag_test_and_set(&eht_once_))                     \
			eht_log(EHT_LOG_WARN, __VA_ARGS__);                    \
	} while (0)

#endif
