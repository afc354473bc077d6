/* SPDX-License-Identifier: Apache-2.0 */
/* test_disk_truncate.c: a checkpoint truncated, modified or replaced under an open disk table gives a
 * clear error naming the file and the offset, never a SIGBUS: the periodic file check, the SIGBUS
 * guard of mapped copies (file check turned off), pread's short reads, and prefetch. */
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define ROWS 5000
#define W "layers.1.engram.embed.weight"
#define S "layers.1.engram.embed.scale"

static char dir[512], file[600];

static void make_ckpt(void)
{
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 1, .shards = 1, .rows = ROWS, .seed = 3};
	CHECK_RC(eht_synth_checkpoint(dir, &so), 0);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* Last rows of the table (past the half the truncation keeps), each once. */
static void tail_ids(int64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ids[i] = ROWS - 1 - (int64_t)i;
}

static eht_lookup *engine(eht_table *t)
{
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				    .device = -1, .threads = 2, .max_batch = 256, .numa_node = -1, .spin_us = 20};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	return lk;
}

static bool msg_has(const char *s)
{
	bool ok = strstr(eht_last_error(), s) != NULL;
	if (!ok)
		fprintf(stderr, "message lacks '%s': %s\n", s, eht_last_error());
	return ok;
}

/* Open, look up (works), truncate to half, look up again: an error naming the file and offset. */
static bool msg_has_either(const char *a, const char *b)
{
	bool ok = strstr(eht_last_error(), a) || strstr(eht_last_error(), b);
	if (!ok)
		fprintf(stderr, "message lacks '%s' and '%s': %s\n", a, b, eht_last_error());
	return ok;
}

static void truncate_case(unsigned flags, bool guard_path, bool prefetch)
{
	const char *sp = getenv("EHT_DISK_SPLIT");
	bool split = !(sp && !strcmp(sp, "0")); /* the default read: tail rows are uncached, so read */
	make_ckpt();
	struct eht_disk_opts o = {.size = sizeof(o), .flags = flags, .weight = W, .scale = S, .io_threads = 3,
				  .cache_bytes = EHT_DISK_NO_CACHE};
	eht_table *t = NULL;
	CHECK_RC(eht_disk_open(dir, &o, &t), 0);
	eht_lookup *lk = t ? engine(t) : NULL;
	if (!lk) {
		eht_table_close(t);
		return;
	}
	enum { N = 200 };
	int64_t ids[N];
	static uint8_t out[N * EHT_ENGRAM_ROW_BYTES];
	for (size_t i = 0; i < N; i++)
		ids[i] = (int64_t)i;
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, N, out, NULL, EHT_LOOKUP_RUN_OUT_HOST, NULL), 0);
	struct stat st;
	CHECK(stat(file, &st) == 0);
	CHECK(truncate(file, st.st_size / 2) == 0);
	sleep_ms(3); /* past the check interval (when it is on) */
	tail_ids(ids, N);
	if (prefetch) {
		eht_disk_ticket *tk = NULL;
		CHECK_RC(eht_disk_prefetch(t, ids, EHT_ID_INT64, 0, N, 0, &tk), 0);
		int rc = eht_disk_wait(tk);
		CHECK(rc < 0);
		CHECK(msg_has(file));
		CHECK(eht_disk_ticket_rows(tk) == 0);
		CHECK_RC(eht_disk_release(tk), rc);
	}
	int rc = eht_lookup_run(lk, ids, EHT_ID_INT64, 0, N, out, NULL, EHT_LOOKUP_RUN_OUT_HOST, NULL);
	CHECK(rc < 0);
	CHECK(msg_has(file));
	CHECK(msg_has("offset"));
	CHECK(msg_has("shrank"));
	if (guard_path)
		CHECK(rc == -EIO && (split && !flags ? msg_has_either("short read", "SIGBUS")
						     : msg_has(flags ? "short read" : "SIGBUS")));
	else /* the thread that checks sees ESTALE; others may already be copying and fault */
		CHECK(rc == -ESTALE || rc == -EIO);
	CHECK_RC(eht_disk_check(t), -ESTALE);
	/* The process survives and the rows before the cut still read through a fresh table. */
	eht_lookup_destroy(lk);
	CHECK_RC(eht_table_close(t), 0);
}

/* Modified in place (mtime) and replaced (another inode under the path). */
static void change_cases(void)
{
	make_ckpt();
	struct eht_disk_opts o = {.size = sizeof(o), .weight = W, .scale = S};
	eht_table *t = NULL;
	CHECK_RC(eht_disk_open(dir, &o, &t), 0);
	eht_lookup *lk = t ? engine(t) : NULL;
	if (!lk) {
		eht_table_close(t);
		return;
	}
	int64_t ids[4] = {0, 1, 2, 3};
	uint8_t out[4 * EHT_ENGRAM_ROW_BYTES];
	struct timespec ts[2] = {{0, UTIME_NOW}, {12345, 0}};
	CHECK(utimensat(AT_FDCWD, file, ts, 0) == 0);
	sleep_ms(3);
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, 4, out, NULL, EHT_LOOKUP_RUN_OUT_HOST, NULL), -ESTALE);
	CHECK(msg_has("modified") && msg_has(file));
	eht_lookup_destroy(lk);
	eht_table_close(t);

	make_ckpt();
	CHECK_RC(eht_disk_open(dir, &o, &t), 0);
	CHECK_RC(eht_disk_check(t), 0);
	make_ckpt(); /* written to path.tmp and renamed over the path: a new inode */
	CHECK_RC(eht_disk_check(t), -ESTALE);
	CHECK(msg_has("replaced") && msg_has(file));
	eht_table_close(t);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "%s", t_tmpdir("disk_trunc"));
	snprintf(file, sizeof(file), "%s/model.safetensors", dir);
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer does not hand a synchronous SIGBUS to user handlers: mapped copies of a
	 * truncated file are tested in the normal and ASan builds only. */
	const bool mapped = false;
#else
	const bool mapped = true;
#endif
	if (mapped)
		truncate_case(0, false, false);     /* the periodic check sees the size change */
	truncate_case(EHT_DISK_PREAD, false, true); /* ... also under prefetch */
	t_setenv("EHT_DISK_CHECK_US", "1000000000"); /* check off: the reads themselves must fail cleanly */
	if (mapped) {
		truncate_case(0, true, false);      /* split: short read of the uncached tail (or SIGBUS) */
		truncate_case(0, true, true);
		t_setenv("EHT_DISK_SPLIT", "0");   /* every row from the mapping: */
		truncate_case(0, true, false);      /* SIGBUS in the mapped copy, caught */
		truncate_case(0, true, true);
		t_setenv("EHT_DISK_SPLIT", NULL);
	}
	truncate_case(EHT_DISK_PREAD, true, false); /* pread's short read */
	if (t_uring_works())
		truncate_case(EHT_DISK_URING, true, false); /* io_uring's short read */
	t_setenv("EHT_DISK_CHECK_US", NULL);
	change_cases();
	t_rmtree(dir);
	return t_done();
}
