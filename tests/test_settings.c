/* SPDX-License-Identifier: Apache-2.0 */
/* test_settings.c: the table of EHT_* settings: its rows, parsing, bounds and their warnings, the
 * log line of what differs from the defaults, reloads beside readers. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "testutil.h"
#include "util/log.h"
#include "util/settings.h"

/* The log lines since the last clear. */
static char lines[8192];
static int nlines;
static pthread_mutex_t lines_mu = PTHREAD_MUTEX_INITIALIZER;

static void sink(int level, const char *message, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lines_mu);
	size_t o = strlen(lines);
	snprintf(lines + o, sizeof(lines) - o, "%d %s\n", level, message);
	nlines++;
	pthread_mutex_unlock(&lines_mu);
}

static void clear_lines(void)
{
	lines[0] = '\0';
	nlines = 0;
}

/* Sets name (NULL value: unsets it), reloads, and returns the log lines the reload wrote. */
static int set_reload(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	clear_lines();
	CHECK_RC(eht_settings_reload(), 0);
	return nlines;
}

/* Every row: a name of its own spelt EHT_*, EHT_TEST_* exactly for the test class, a meaning on
 * one line, bounds in order, a default that parses within them; at most 24 settings outside tests. */
static void rows(void)
{
	int outside_tests = 0;
	for (int i = 0; i < EHT_SET_COUNT; i++) {
		const struct eht_setting_def *r = eht_setting_def(i);
		CHECK(r && r->name && r->meaning && *r->meaning);
		if (!r || !r->name || !r->meaning)
			continue;
		CHECK(strncmp(r->name, "EHT_", 4) == 0);
		CHECK((r->cls == EHT_SETTING_TEST) == (strncmp(r->name, "EHT_TEST_", 9) == 0));
		CHECK(strchr(r->meaning, '\n') == NULL);
		CHECK(eht_setting_find(r->name) == i);
		CHECK(r->lo <= r->hi && r->dlo <= r->dhi);
		CHECK((r->type == EHT_SETTING_ENUM) == (r->choices != NULL));
		outside_tests += r->cls != EHT_SETTING_TEST;
		if (r->dflt) { /* the default, spelt as the environment would, is valid and reads as set */
			CHECK(set_reload(r->name, r->dflt) == 0);
			if (!eht_setting_is_set(i) || nlines)
				fprintf(stderr, "%s: its default %s does not parse: %s\n", r->name, r->dflt, lines);
			CHECK(eht_setting_is_set(i));
			set_reload(r->name, NULL);
			CHECK(!eht_setting_is_set(i));
		}
	}
	CHECK(outside_tests <= 24);
	CHECK(eht_setting_def(EHT_SET_COUNT) == NULL);
	CHECK(eht_setting_find("EHT_NO_SUCH_SETTING") == -1);
	/* EHT_LOG's choices are the levels, in order */
	const char *levels[] = {"error", "warn", "info", "debug", "trace"};
	for (int l = EHT_LOG_ERROR; l <= EHT_LOG_TRACE; l++) {
		set_reload("EHT_LOG", levels[l]);
		CHECK(eht_setting_enum(EHT_SET_LOG) == (unsigned)l);
	}
	set_reload("EHT_LOG", NULL);
}

/* One value of each type: its accessors; empty is unset. */
static void values(void)
{
	set_reload("EHT_PIN_CHUNK", "1.5G");
	CHECK(eht_setting_u64(EHT_SET_PIN_CHUNK) == 3ull << 29);
	CHECK(strcmp(eht_setting_str(EHT_SET_PIN_CHUNK), "1.5G") == 0);
	set_reload("EHT_PIN_CHUNK", "");
	CHECK(!eht_setting_is_set(EHT_SET_PIN_CHUNK) && eht_setting_u64(EHT_SET_PIN_CHUNK) == 64ull << 30);
	CHECK(set_reload("EHT_THREADS", "0x10") == 0);
	CHECK(eht_setting_u64(EHT_SET_THREADS) == 16 && eht_setting_is_set(EHT_SET_THREADS));
	set_reload("EHT_THREADS", NULL);
	CHECK(!eht_setting_is_set(EHT_SET_THREADS) && eht_setting_u64(EHT_SET_THREADS) == 0);
	CHECK(set_reload("EHT_NO_CUDA", "yes") == 0 && eht_setting_bool(EHT_SET_NO_CUDA));
	CHECK(set_reload("EHT_NO_CUDA", "0") == 0 && !eht_setting_bool(EHT_SET_NO_CUDA));
	CHECK(set_reload("EHT_REGION_GC_GRACE_S", "0.25") == 0 && eht_setting_double(EHT_SET_REGION_GC_GRACE_S) == 0.25);
	set_reload("EHT_REGION_GC_GRACE_S", NULL);
	CHECK(eht_setting_double(EHT_SET_REGION_GC_GRACE_S) == 30.0);
	CHECK(set_reload("EHT_DISK_URING", "0") == 0 && eht_setting_enum(EHT_SET_DISK_URING) == EHT_SET_DISK_URING_OFF);
	CHECK(set_reload("EHT_DISK_URING", "1") == 0 && eht_setting_enum(EHT_SET_DISK_URING) == EHT_SET_DISK_URING_ALL);
	set_reload("EHT_DISK_URING", NULL);
	CHECK(eht_setting_enum(EHT_SET_DISK_URING) == EHT_SET_DISK_URING_AUTO);
	CHECK(eht_setting_str(EHT_SET_NODE_ID) == NULL);
	CHECK(strcmp(eht_setting_str(EHT_SET_SHM_DIR), "/dev/shm") == 0);
	/* a string read before a reload stays valid after it */
	set_reload("EHT_SHM_DIR", "/tmp/eht-settings-a");
	const char *before = eht_setting_str(EHT_SET_SHM_DIR);
	set_reload("EHT_SHM_DIR", "/tmp/eht-settings-b");
	CHECK(strcmp(before, "/tmp/eht-settings-a") == 0);
	CHECK(strcmp(eht_setting_str(EHT_SET_SHM_DIR), "/tmp/eht-settings-b") == 0);
	set_reload("EHT_SHM_DIR", NULL);
}

/* Expects one warning from setting name to value, naming the setting and needle (a bound, a
 * reason), and the default after. */
static void expect_warning(const char *name, const char *value, const char *needle)
{
	int n = set_reload(name, value);
	int id = eht_setting_find(name);
	if (n != 1 || !strstr(lines, name) || !strstr(lines, needle) || strncmp(lines, "1 ", 2))
		fprintf(stderr, "%s=%s: want one warning naming it and '%s', got %d lines:\n%s", name, value, needle,
			n, lines);
	CHECK(n == 1 && strstr(lines, name) && strstr(lines, needle) && !strncmp(lines, "1 ", 2));
	CHECK(!eht_setting_is_set(id));
	/* the warning is logged once, not at every read */
	clear_lines();
	(void)eht_setting_u64(id);
	(void)eht_setting_str(id);
	CHECK(nlines == 0);
	unsetenv(name); /* (the next reload reads it unset) */
}

static void bounds_and_warnings(void)
{
	expect_warning("EHT_THREADS", "5000", "above its bound 1024");
	CHECK(eht_setting_u64(EHT_SET_THREADS) == 0);
	expect_warning("EHT_THREADS", "0", "below its bound 1");
	expect_warning("EHT_LOOKUP_CHUNK_MAX", "8", "below its bound 16");
	CHECK(eht_setting_u64(EHT_SET_LOOKUP_CHUNK_MAX) == 256);
	expect_warning("EHT_LOOKUP_CHUNK_MAX", "2048", "above its bound 1024");
	CHECK(set_reload("EHT_LOOKUP_CHUNK_MAX", "1024") == 0 && eht_setting_u64(EHT_SET_LOOKUP_CHUNK_MAX) == 1024);
	expect_warning("EHT_PIN_CHUNK", "1K", "below its bound 4K");
	expect_warning("EHT_PIN_CHUNK", "12Q", "not a size");
	CHECK(eht_setting_u64(EHT_SET_PIN_CHUNK) == 64ull << 30);
	expect_warning("EHT_GROUP_TIMEOUT_MS", "5s", "not a non-negative integer");
	expect_warning("EHT_GROUP_TIMEOUT_MS", "-1", "not a non-negative integer");
	CHECK(eht_setting_u64(EHT_SET_GROUP_TIMEOUT_MS) == 300000);
	expect_warning("EHT_TEST_DEDUP_SHARE", "1.5", "above its bound 1");
	expect_warning("EHT_TEST_DEDUP_SHARE", "half", "not a number");
	CHECK(eht_setting_double(EHT_SET_TEST_DEDUP_SHARE) == 0.0);
	expect_warning("EHT_NO_CUDA", "2", "not 0 or 1");
	CHECK(!eht_setting_bool(EHT_SET_NO_CUDA));
	/* an unknown value of a list: named with the choices, and the default */
	expect_warning("EHT_LOG", "loud", "error, warn, info, debug or trace");
	CHECK(eht_setting_enum(EHT_SET_LOG) == EHT_LOG_WARN);
	expect_warning("EHT_DISK_URING", "maybe", "auto, 0 or 1");
	CHECK(eht_setting_enum(EHT_SET_DISK_URING) == EHT_SET_DISK_URING_AUTO);
	set_reload("EHT_LOOKUP_CHUNK_MAX", NULL);
	/* EHT_LOG sets the level, again after a reload */
	set_reload("EHT_LOG", "error");
	CHECK(!eht_log_enabled(EHT_LOG_WARN));
	set_reload("EHT_LOG", "debug");
	CHECK(eht_log_enabled(EHT_LOG_DEBUG));
}

/* The info line: the settings that differ from their defaults, once, again after a reload. */
static void log_line(void)
{
	setenv("EHT_THREADS", "7", 1);
	setenv("EHT_SHM_DIR", "/dev/shm", 1); /* set, but to the default */
	setenv("EHT_LOOKUP_SM_CAP", "40", 1);
	setenv("EHT_NO_SUCH_SETTING", "1", 1);
	set_reload("EHT_LOG", "info");
	clear_lines();
	eht_settings_log_once();
	eht_settings_log_once();
	fprintf(stderr, "the line: %s", lines);
	CHECK(nlines == 1 && !strncmp(lines, "2 settings:", 11));
	CHECK(strstr(lines, "EHT_THREADS=7") && strstr(lines, "EHT_LOOKUP_SM_CAP=40") && strstr(lines, "EHT_LOG=info"));
	CHECK(!strstr(lines, "EHT_SHM_DIR"));
	CHECK(strstr(lines, "not read by libeht:") && strstr(lines, "EHT_NO_SUCH_SETTING"));
	char buf[32];
	CHECK(eht_settings_describe(buf, sizeof(buf)) > (int)sizeof(buf)); /* truncated, as snprintf */
	CHECK(strlen(buf) == sizeof(buf) - 1);
	unsetenv("EHT_THREADS");
	unsetenv("EHT_SHM_DIR");
	unsetenv("EHT_LOOKUP_SM_CAP");
	unsetenv("EHT_NO_SUCH_SETTING");
	set_reload("EHT_LOG", "info");
	clear_lines();
	eht_settings_log_once();
	CHECK(nlines == 1 && !strstr(lines, "EHT_THREADS") && !strstr(lines, "EHT_NO_SUCH_SETTING"));
	set_reload("EHT_LOG", NULL);
	clear_lines();
	eht_settings_log_once(); /* at the default level (warn) the info line is not printed */
	CHECK(nlines == 0);
	char all[256];
	eht_settings_describe(all, sizeof(all));
	CHECK(strstr(all, "every EHT_* setting at its default") != NULL);
}

static atomic_bool stop;

static void *reader(void *arg)
{
	(void)arg;
	uint64_t sum = 0;
	while (!atomic_load(&stop)) {
		sum += eht_setting_u64(EHT_SET_THREADS);
		const char *s = eht_setting_str(EHT_SET_SHM_DIR);
		sum += s ? (uint64_t)s[1] : 0;
	}
	return (void *)(uintptr_t)sum;
}

/* Readers beside reloads (ThreadSanitizer's build runs this too). */
static void reload_beside_readers(void)
{
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&th[i], NULL, reader, NULL) == 0);
	for (int k = 0; k < 50; k++) {
		setenv("EHT_THREADS", k % 2 ? "3" : "5", 1);
		CHECK_RC(eht_settings_reload(), 0);
		unsigned v = (unsigned)eht_setting_u64(EHT_SET_THREADS);
		CHECK(v == (k % 2 ? 3u : 5u));
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	unsetenv("EHT_THREADS");
	eht_settings_reload();
}

int main(void)
{
	/* None of the table's settings from the caller's environment: the test sets its own. */
	for (int i = 0; i < EHT_SET_COUNT; i++)
		unsetenv(eht_setting_def(i)->name);
	eht_log_set_callback(sink, NULL);
	rows();
	values();
	bounds_and_warnings();
	log_line();
	reload_beside_readers();
	eht_log_set_callback(NULL, NULL);
	return t_done();
}
