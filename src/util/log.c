/* SPDX-License-Identifier: Apache-2.0 */
/* log.c: leveled logging; EHT_LOG (util/settings.h) picks the level until eht_log_set_level does. */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

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
	else /* One fprintf per line so lines from several threads do not interleave. */
		fprintf(stderr, "eht: %s: %s\n", level_names[level], line);
}

void eht_log_set_callback(eht_log_fn fn, void *arg)
{
	pthread_mutex_lock(&sink_mu);
	sink_fn = fn;
	sink_arg = arg;
	pthread_mutex_unlock(&sink_mu);
}
