/* SPDX-License-Identifier: Apache-2.0 */
/* log.c: leveled logging; EHT_LOG picks the level once per process. */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eht.h"

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};
static int log_level = EHT_LOG_WARN;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t sink_mu = PTHREAD_MUTEX_INITIALIZER;
static eht_log_fn sink_fn;
static void *sink_arg;

static void log_init(void)
{
	const char *s = getenv("EHT_LOG");
	if (!s || !*s)
		return;
	for (int i = 0; i <= EHT_LOG_TRACE; i++)
		if (strcmp(s, level_names[i]) == 0)
			log_level = i;
	if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0')
		log_level = s[0] - '0';
}

int eht_log_enabled(int level)
{
	pthread_once(&log_once, log_init);
	return level <= log_level;
}

void eht_log_set_level(int level)
{
	pthread_once(&log_once, log_init);
	if (level >= EHT_LOG_ERROR && level <= EHT_LOG_TRACE)
		log_level = level;
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
