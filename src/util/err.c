/* SPDX-License-Identifier: Apache-2.0 */
/* err.c: the thread-local error message behind eht_last_error(). */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "eht.h"

#undef eht_err /* the analyzer's wrappers (err.h) are not for the definitions */
#undef eht_err_sys

static _Thread_local char err_msg[EHT_ERR_MAX];

static int normalize(int err) { return err > 0 ? -err : (err == 0 ? -EIO : err); }

/* Messages are formatted aside and then copied in: an argument may be the last message itself
 * (eht_err(..., "...(%s)", eht_last_error())), which vsnprintf must not read while it writes it. */
int eht_err(int err, const char *fmt, ...)
{
	char msg[EHT_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(err_msg, msg, sizeof(err_msg));
	return normalize(err);
}

int eht_err_sys(int err, const char *fmt, ...)
{
	int e = err < 0 ? -err : err;
	char msg[EHT_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(e));
	memcpy(err_msg, msg, sizeof(err_msg));
	return normalize(err);
}

int eht_err_prefix(int rc, const char *fmt, ...)
{
	char old[EHT_ERR_MAX];
	memcpy(old, err_msg, sizeof(old));
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	/* No message under it (the failing call set none): the code's own text, never nothing. */
	const char *tail = old[0] ? old : strerror(rc < 0 ? -rc : rc);
	size_t at = n >= 0 ? (size_t)n : sizeof(err_msg);
	if (at + 2 < sizeof(err_msg)) { /* appended by hand: a long cause is cut, never a warning */
		memcpy(err_msg + at, ": ", 2);
		at += 2;
		size_t k = strnlen(tail, sizeof(err_msg) - 1 - at);
		memcpy(err_msg + at, tail, k);
		err_msg[at + k] = '\0';
	}
	return rc;
}

void eht_err_save(struct eht_err_saved *saved) { memcpy(saved->msg, err_msg, sizeof(saved->msg)); }

int eht_err_restore(const struct eht_err_saved *saved, int rc)
{
	memcpy(err_msg, saved->msg, sizeof(err_msg));
	return normalize(rc);
}

void eht_err_clear(void) { err_msg[0] = '\0'; }

const char *eht_last_error(void) { return err_msg; }
