/* SPDX-License-Identifier: Apache-2.0 */
/* log.c: leveled logging; EHT_LOG (util/settings.h) picks the level until eht_log_set_level does. */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "eht.h"
#include "util/settings.h"

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};
/* eht_log_set_level's level; -1: EHT_LOG's (read through the settings, so a reload applies). */
static atomic_int set_level = -1;
static pthread_mutex_t sink_mu = PTHREAD_MUTEX_INITIALIZER;
static eht_log_fn sink_fn;
static void *sink_arg;

int eht_log_enabled(int level)
{
	int l = atomic_load_explicit(&set_level, memory_order_relaxed);
	/* EHT_LOG's choices are in the order of the levels */
	return level <= (l >= 0 ? l : (int)eht_setting_enum(EHT_SET_LOG));
}

void eht_log_set_level(int level)
{
	if (level >= EHT_LOG_ERROR && level <= EHT_LOG_TRACE)
		atomic_store_explicit(&set_level, level, memory_order_relaxed);
}

/* Lines to stderr carry a UTC timestamp (2026-12-03T10:29:39.123Z), except under journald, which
 * stamps them itself (systemd sets JOURNAL_STREAM for a service whose stderr is the journal). */
static pthread_once_t stamp_once = PTHREAD_ONCE_INIT;
static int stamp_lines;
static void stamp_decide(void) { stamp_lines = getenv("JOURNAL_STREAM") == NULL; }

static void stamp(char *buf, size_t len)
{
	pthread_once(&stamp_once, stamp_decide);
	buf[0] = 0;
	struct timespec ts;
	struct tm tm;
	if (!stamp_lines || clock_gettime(CLOCK_REALTIME, &ts) || !gmtime_r(&ts.tv_sec, &tm))
		return;
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (n)
		snprintf(buf + n, len - n, ".%03ldZ ", ts.tv_nsec / 1000000);
}

void eht_log(int level, const char *fmt, ...)
{
	if (!eht_log_enabled(level))
		return;
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&sink_mu);
	eht_log_fn fn = sink_fn;
	void *arg = sink_arg;
	pthread_mutex_unlock(&sink_mu);
	if (fn) /* called unlocked: the callback may log, or take the caller's locks (Python's GIL) */
		fn(level, line, arg);
	else { /* One fprintf per line so lines from several threads do not interleave. */
		char ts[40];
		stamp(ts, sizeof(ts));
		fprintf(stderr, "%seht: %s: %s\n", ts, level_names[level], line);
	}
}

void eht_log_set_callback(eht_log_fn fn, void *arg)
{
	pthread_mutex_lock(&sink_mu);
	sink_fn = fn;
	sink_arg = arg;
	pthread_mutex_unlock(&sink_mu);
}
