/* SPDX-License-Identifier: Apache-2.0 */
/* futex.h: the process-private futex on a 32-bit atomic word, for threads that sleep until another
 * changes it: FUTEX_WAIT sleeps while *word == val (until a wake, a signal or the timeout; NULL: none),
 * FUTEX_WAKE wakes up to val sleepers. */
#ifndef EHT_UTIL_FUTEX_H
#define EHT_UTIL_FUTEX_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline long eht_futex(atomic_uint *word, int op, unsigned val, const struct timespec *timeout)
{
	return syscall(SYS_futex, (unsigned *)(void *)word, op | FUTEX_PRIVATE_FLAG, val, timeout, NULL, 0);
}

#endif
