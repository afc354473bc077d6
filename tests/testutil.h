/* SPDX-License-Identifier: Apache-2.0 */
/* testutil.h: tiny helpers for the test programs (exit 0 pass, 1 fail, 77 skip). */
#ifndef EHT_TESTUTIL_H
#define EHT_TESTUTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "eht.h"

#define T_SKIP 77

extern int t_failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__,    \
				__LINE__, #cond, eht_last_error());                                \
			t_failures++;                                                              \
		}                                                                                  \
	} while (0)
/* Checks an eht_ call returned rc (e.g. 0 or -EINVAL). */
#define CHECK_RC(call, rc)                                                                         \
	do {                                                                                       \
		long long r_ = (long long)(call);                                                  \
		if (r_ != (long long)(rc)) {                                                       \
			fprintf(stderr, "%s:%d: %s returned %lld, expected %lld (last error: %s)\n", \
				__FILE__, __LINE__, #call, r_, (long long)(rc), eht_last_error()); \
			t_failures++;                                                              \
		}                                                                                  \
	} while (0)

/* Exit status for the test: 1 when any CHECK failed, else 0. */
int t_done(void);
/* Skips (exit 77) with a reason on stderr. */
_Noreturn void t_skip(const char *why);
/* tests/fixtures path from EHT_FIXTURES; fails (exit 1) when the folder is missing. */
const char *t_fixtures(void);
/* Creates a fresh temporary directory (removed by t_rmtree); returns a static path. */
char *t_tmpdir(const char *tag);
/* Removes a directory tree (rm -rf). */
void t_rmtree(const char *path);
/* Entries of a folder but . and .. (0 when it cannot be read; a hidden file counts): what a test left
 * behind in /dev/shm, or the descriptors in /proc/self/fd. */
int t_dir_entries(const char *path);
/* Paths that match the glob pattern dir/name (what a run left in dir: files, cgroups). */
size_t t_glob_count(const char *dir, const char *name);
/* Sends this process's stderr to a new file at path (a forked rank's log). Returns 0 or -errno. */
int t_stderr_to(const char *path);
/* A child that says it is ready with one byte 'R' on ready_fd (the read end of its pipe, closed here):
 * returns pid once it did, else kills and reaps it and returns -1 (pid <= 0: -1). */
int t_child_ready(int pid, int ready_fd);
/* SIGKILL and reap a child (pid <= 0: nothing). */
void t_kill_child(int pid);
/* The built CLI's path ($EHT_CLI, which ctest sets); exits 77 (skip) where it is not set. */
const char *t_cli(void) __attribute__((returns_nonnull));
/* Runs the built CLI ($EHT_CLI) with args (shell words), under `timeout timeout_s`; its stdout goes
 * into out and its stderr into err (out_len / err_len bytes at most, NUL-terminated; NULL: dropped;
 * err == out: both streams into out). Returns its exit status, 128 when it did not exit normally, 127
 * without $EHT_CLI (a failure, not a skip: the caller may have failed checks already). */
int t_cli_run(const char *args, int timeout_s, char *out, size_t out_len, char *err, size_t err_len);
/* setenv(name, value, 1) (value NULL: unsetenv) and eht_settings_reload(): libeht reads its EHT_*
 * settings (src/util/settings.c) once per process. Exits 1 when out of memory. */
void t_setenv(const char *name, const char *value);
/* Writes bytes to a file; returns 0 or -errno. */
int t_write_file(const char *path, const void *data, size_t len);
/* Deterministic pseudo-random numbers (splitmix64). */
uint64_t t_rand(uint64_t *state);
/* nrows * rb bytes of t_rand (a table's rows), malloc'd; exits 1 when out of memory. */
uint8_t *t_rand_rows(uint64_t nrows, size_t rb, uint64_t *rs);
/* Rows of out (n rows of rb bytes, one per id) that differ from table's (nrows rows): a dead id
 * (negative or past the end) reads as zeros; *dead gets the number of dead ids. */
size_t t_rows_compare(const uint8_t *table, uint64_t nrows, size_t rb, const int64_t *ids, size_t n,
		      const uint8_t *out, uint64_t *dead);
/* True when a CUDA device is usable (libcuda loads and has a device). */
int t_have_gpu(void);
/* t_have_gpu asked in a forked child, so this process never initializes CUDA (a test that forks
 * ranks or children that use the GPU must not before it forks). */
int t_have_gpu_forked(void);
/* Lines of the file at path that contain needle (0 when it cannot be read): a log's warnings. */
int t_count_lines(const char *path, const char *needle);
/* /proc/sys/vm/nr_hugepages, -1 when unreadable; setting it (root only) returns 0 or -1. */
long t_nr_hugepages(void);
int t_set_nr_hugepages(long n);
/* A test that resizes the 2 MiB huge page pool: *pool filled and nr_hugepages returned (to put it
 * back at the end); skips (77) without such pages in the kernel, or unless root may resize it. */
struct eht_hugetlb_pool;
long t_hugepages_resizable_or_skip(struct eht_hugetlb_pool *pool);
/* 2 MiB huge pages a new mapping can still get (free less reserved), 0 without a pool. */
uint64_t t_hugepages_available(void);
/* True when libeht was built with liburing and this kernel lets the process use io_uring. */
int t_uring_works(void);
/* eht_serve_status(key) parsed (a json_t, json_decref it); NULL when no server holds key. */
struct json_t *t_serve_status(const char *key);
/* Hex SHA-256 of data into out[65]. */
void t_sha256_hex(const void *data, size_t len, char out[65]);

#endif
