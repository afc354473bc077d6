/* SPDX-License-Identifier: Apache-2.0 */
/* clock.h: the one monotonic clock of every deadline, timing and rate limit, and the wall clock of
 * timestamps written into shared files. */
#ifndef EHT_UTIL_CLOCK_H
#define EHT_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds: never jumps with the wall clock, so deadlines survive clock changes. */
static inline uint64_t eht_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Monotonic milliseconds (signed, so "deadline - now" may go negative). */
static inline int64_t eht_now_ms(void) { return (int64_t)(eht_now_ns() / 1000000ull); }

/* Monotonic microseconds and seconds, for spin budgets and timings. */
static inline double eht_now_us(void) { return (double)eht_now_ns() * 1e-3; }
static inline double eht_now_s(void) { return (double)eht_now_ns() * 1e-9; }

/* CPU seconds the calling thread has run (user and system): what a call costs its caller. */
static inline double eht_thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wall-clock nanoseconds since the epoch: only for timestamps other processes read. */
static inline uint64_t eht_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
