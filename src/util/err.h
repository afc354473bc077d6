/* SPDX-License-Identifier: Apache-2.0 */
/* err.h: 0 / -errno results plus a thread-local human message (eht_last_error). */
#ifndef EHT_UTIL_ERR_H
#define EHT_UTIL_ERR_H

#include <errno.h>

#if defined(__GNUC__)
#define EHT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define EHT_PRINTF(a, b)
#endif

/* Records the message for this thread and returns -err (err given positive or negative). */
int eht_err(int err, const char *fmt, ...) EHT_PRINTF(2, 3);
/* Like eht_err, but appends ": strerror(errno-value)". */
int eht_err_sys(int err, const char *fmt, ...) EHT_PRINTF(2, 3);
/* Prefixes the current message with more context ("opening x: <old message>"); returns rc. */
int eht_err_prefix(int rc, const char *fmt, ...) EHT_PRINTF(2, 3);
/* Clears this thread's message. */
void eht_err_clear(void);

#endif
