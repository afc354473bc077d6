/* SPDX-License-Identifier: Apache-2.0 */
/* settings.h: the one table of libeht's EHT_* environment settings, read once per process. */
#ifndef EHT_UTIL_SETTINGS_H
#define EHT_UTIL_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* One id per row of the table (settings.c), in the table's order: the user settings, the tuning
 * ones, then those of tests (named EHT_TEST_*). docs/ENVIRONMENT.md is rendered from the table. */
enum eht_setting {
	/* user */
	EHT_SET_LOG,
	EHT_SET_NO_CUDA,
	EHT_SET_SHM_DIR,
	EHT_SET_SERVE_ALLOW_GID,
	EHT_SET_SHARE_CHUNK,
	EHT_SET_NUMA_RESERVE,
	EHT_SET_GROUP_TIMEOUT_MS,
	EHT_SET_PIN_CHUNK,
	EHT_SET_THREADS,
	EHT_SET_LOOKUP_SM_CAP,
	EHT_SET_LOOKUP_BACKGROUND,
	EHT_SET_LOOKUP_BG_PUSH,
	EHT_SET_NODE_ID,
	EHT_SET_REGION_GC_GRACE_S,
	EHT_SET_DISK_URING,
	/* tuning */
	EHT_SET_LOOKUP_AUTO_SPLIT,
	EHT_SET_LOOKUP_DEDUP_MIN,
	EHT_SET_LOOKUP_PREFETCH,
	EHT_SET_LOOKUP_CHUNK_MAX,
	EHT_SET_BELL_SPIN_US,
	EHT_SET_POOL_SPIN_US,
	EHT_SET_DISK_SPLIT,
	EHT_SET_DISK_HINT_PAGES,
	EHT_SET_DISK_CHECK_US,
	/* tests */
	EHT_SET_TEST_CU_HIDE,
	EHT_SET_TEST_FAULT,
	EHT_SET_TEST_DISK_URING_FAIL,
	EHT_SET_TEST_REGION_SKIP_CAPACITY_CHECK,
	EHT_SET_TEST_SHARE_HUGE_FIRST,
	EHT_SET_TEST_NUMA_NODES,
	EHT_SET_TEST_WORKER_NUMA,
	EHT_SET_TEST_NUMA_AVAIL,
	EHT_SET_TEST_CORES,
	EHT_SET_TEST_DEDUP_SHARE,
	EHT_SET_TEST_DEQUANT_SIMD,
	EHT_SET_TEST_BELL_TRACE,
	EHT_SET_COUNT
};

/* EHT_DISK_URING's choices (auto|0|1), by position; EHT_LOG's are enum eht_log_level's (util/log.h). */
enum { EHT_SET_DISK_URING_AUTO, EHT_SET_DISK_URING_OFF, EHT_SET_DISK_URING_ALL };

enum eht_setting_type {
	EHT_SETTING_BOOL,   /* 0 or 1 (also true/false, yes/no, on/off) */
	EHT_SETTING_U64,    /* a decimal or 0x hex integer */
	EHT_SETTING_SIZE,   /* bytes, with an optional K/M/G/T (binary) suffix: 64M, 1.5G */
	EHT_SETTING_DOUBLE, /* a number */
	EHT_SETTING_STR,    /* any text */
	EHT_SETTING_ENUM,   /* one of the row's choices */
};

enum eht_setting_class {
	EHT_SETTING_USER,   /* what an operator or an engine may want to set */
	EHT_SETTING_TUNING, /* measured defaults; a sweep on another machine may move them */
	EHT_SETTING_TEST,   /* tests and diagnosis only; never set in production */
};

/* A row of the table. */
struct eht_setting_def {
	const char *name;
	enum eht_setting_type type;
	enum eht_setting_class cls;
	/* The default as the environment would spell it; NULL: unset, and the reader decides (the
	 * meaning says how). */
	const char *dflt;
	uint64_t lo, hi;   /* bounds of U64 and SIZE values (inclusive) */
	double dlo, dhi;   /* bounds of DOUBLE values (inclusive) */
	const char *choices; /* ENUM: the values separated by '|'; eht_setting_enum() is the position */
	const char *meaning; /* one line */
};

/* The row of id (NULL past the table). */
const struct eht_setting_def *eht_setting_def(enum eht_setting id);
/* The id of the setting called name ("EHT_THREADS"), or -1. */
int eht_setting_find(const char *name);

/* The value: what the environment says when that is valid, else the row's default. The first call
 * of the process reads every row (malformed or out-of-bounds values get one warning each, naming
 * the setting and the bound, and the default); later calls are a load. Any accessor fits any type:
 * u64 of a BOOL is 0 or 1, of an ENUM its position, of a DOUBLE the value truncated; str of a
 * number is its text. A row without a default that is not set reads 0 / 0.0 / NULL. */
bool eht_setting_bool(enum eht_setting id);
uint64_t eht_setting_u64(enum eht_setting id);
double eht_setting_double(enum eht_setting id);
/* The text, valid for the rest of the process (a reload keeps the old snapshots). */
const char *eht_setting_str(enum eht_setting id);
unsigned eht_setting_enum(enum eht_setting id);
/* Whether the environment sets it to a valid value (an invalid one reads as unset). */
bool eht_setting_is_set(enum eht_setting id);

/* Logs one info line naming the settings that differ from their defaults (and EHT_* names in the
 * environment that are no setting of libeht), once per process (again after a reload): the first
 * engine's creation calls it. */
void eht_settings_log_once(void);
/* That line, without logging it: for tests. Returns the length written (snprintf's). */
int eht_settings_describe(char *buf, size_t len);

/* docs/ENVIRONMENT.md's generated part: the table in Markdown, one section per class. Returns 0 or
 * -EIO. */
int eht_settings_markdown(FILE *f);

/* eht_settings_reload() (read the environment again, for tests and benchmarks that change it in a
 * running process) is public: include/eht.h. */

#endif
