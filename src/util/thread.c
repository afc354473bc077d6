/* SPDX-License-Identifier: Apache-2.0 */
/* thread.c: see thread.h. */
#include "util/thread.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/prctl.h>

void eht_thread_name(const char *fmt, ...)
{
	char name[16]; /* the kernel's TASK_COMM_LEN, NUL included */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	(void)prctl(PR_SET_NAME, name, 0, 0, 0);
}
