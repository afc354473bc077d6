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
/* Prefixes the current message with more context ("opening x: <old message>"); returns rc. The
 * message under it must be this failure's own (the callee set it, or the caller cleared it before
 * calling): with none, rc's strerror stands in. */
int eht_err_prefix(int rc, const char *fmt, ...) EHT_PRINTF(2, 3);
#define EHT_ERR_MAX 1024

#ifdef __clang_analyzer__
/* For `make analyze`: eht_err and eht_err_sys never return 0 (err.c turns 0 into -EIO), which the
 * analyzer cannot see across files; without this it follows every error return as a success. */
static inline int eht_err_negative_(int rc)
{
	if (rc >= 0)
		__builtin_unreachable();
	return rc;
}
#define eht_err(...) eht_err_negative_(eht_err(__VA_ARGS__))
#define eht_err_sys(...) eht_err_negative_(eht_err_sys(__VA_ARGS__))
#endif

/* This thread's message, saved so that the teardown after a failure (whose own errors are logged)
 * cannot replace the cause the caller is told. */
struct eht_err_saved {
	char msg[EHT_ERR_MAX];
};
void eht_err_save(struct eht_err_saved *saved);
/* Puts the saved message back and returns rc (as eht_err). */
int eht_err_restore(const struct eht_err_saved *saved, int rc);

/* Clears this thread's message. */
void eht_err_clear(void);

#endif
