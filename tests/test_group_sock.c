/* SPDX-License-Identifier: Apache-2.0 */
/* test_group_sock.c: the built-in node-local group with forked ranks: barrier, broadcast, all-gather,
 * descriptor passing (also over the user's in-flight limit), a rank killed mid-broadcast, connect
 * timeouts, SO_PEERCRED, the adapter. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define N 4

static char key[64];

static void new_key(const char *tag)
{
	static int n;
	snprintf(key, sizeof(key), "t.%s.%d.%d", tag, (int)getpid(), n++);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct eht_group_opts opts_ms(uint32_t ms)
{
	struct eht_group_opts o = {.size = sizeof(o), .timeout_ms = ms};
	return o;
}

/* Written by a rank once its group formed (ranks of a kill test): the parent kills only then. */
static int formed_fd = -1;

static void formed(void)
{
	if (formed_fd >= 0 && write(formed_fd, "f", 1) != 1)
		fprintf(stderr, "rank: cannot say the group formed\n");
}

/* Forks n ranks running fn(rank) (its return is the exit status); returns how many failed. With
 * kill_rank >= 0, kills that rank kill_after_ms after every rank said its group formed (formed()):
 * a rank slow to start on a loaded machine is never killed before it joined. */
static int run_ranks(int n, int (*fn)(int rank), pid_t *pids_out, int kill_rank, int kill_after_ms)
{
	pid_t pids[16];
	int fp[2] = {-1, -1};
	if (kill_rank >= 0 && pipe(fp) != 0)
		return n;
	formed_fd = fp[1];
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r] == 0)
			_exit(fn(r));
		if (pids_out)
			pids_out[r] = pids[r];
	}
	formed_fd = -1;
	if (kill_rank >= 0) {
		close(fp[1]);
		char b;
		int got = 0;
		while (got < n && read(fp[0], &b, 1) == 1) /* EOF: every rank gone (it failed) */
			got++;
		close(fp[0]);
		struct timespec ts = {kill_after_ms / 1000, (kill_after_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		kill(pids[kill_rank], SIGKILL);
	}
	int failed = 0;
	for (int r = 0; r < n; r++) {
		int st = 0;
		waitpid(pids[r], &st, 0);
		if (r == kill_rank)
			continue;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "rank %d failed (status 0x%x)\n", r, st);
			failed++;
		}
	}
	return failed;
}

/* ---- collectives and descriptor passing ---- */

static int basic_rank(int rank)
{
	eht_group *g = NULL;
	struct eht_group_opts o = opts_ms(20000);
	if (eht_group_create(key, rank, N, &o, &g)) {
		fprintf(stderr, "rank %d: create: %s\n", rank, eht_last_error());
		return 1;
	}
	int bad = 0;
	bad |= eht_group_rank(g) != rank || eht_group_size(g) != N;
	bad |= eht_group_barrier(g) != 0;

	/* A broadcast larger than a socket buffer. */
	size_t len = 3u << 20;
	unsigned char *buf = malloc(len);
	for (size_t i = 0; i < len; i++)
		buf[i] = rank == 0 ? (unsigned char)(i * 7 + 3) : 0;
	bad |= eht_group_broadcast(g, buf, len) != 0;
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (unsigned char)(i * 7 + 3)) {
			bad |= 1;
			break;
		}
	free(buf);

	uint64_t mine[2] = {(uint64_t)rank * 1000 + 1, (uint64_t)getpid()}, all[N][2];
	bad |= eht_group_allgather(g, mine, sizeof(mine), all) != 0;
	for (int r = 0; r < N; r++)
		bad |= all[r][0] != (uint64_t)r * 1000 + 1;
	bad |= all[rank][1] != (uint64_t)getpid();

	/* Descriptors: three memfds with different contents, read back on every rank. */
	int fds[3] = {-1, -1, -1};
	if (rank == 0)
		for (int i = 0; i < 3; i++) {
			char text[64];
			int n = snprintf(text, sizeof(text), "memfd %d from rank 0", i);
			fds[i] = memfd_create("t", MFD_CLOEXEC);
			bad |= fds[i] < 0 || write(fds[i], text, (size_t)n) != n;
		}
	if (eht_group_broadcast_fds(g, fds, 3)) {
		fprintf(stderr, "rank %d: fds: %s\n", rank, eht_last_error());
		bad |= 1;
	}
	for (int i = 0; i < 3; i++) {
		char want[64], got[64] = {0};
		snprintf(want, sizeof(want), "memfd %d from rank 0", i);
		bad |= fds[i] < 0 || pread(fds[i], got, sizeof(got) - 1, 0) != (ssize_t)strlen(want) || strcmp(got, want);
		if (fds[i] >= 0)
			close(fds[i]);
	}
	/* Many descriptors: more than one message's worth (the sender batches them). */
	enum { MANY = 450 };
	int many[MANY];
	for (int i = 0; i < MANY; i++)
		many[i] = rank == 0 ? memfd_create("m", MFD_CLOEXEC) : -1;
	if (rank == 0)
		for (int i = 0; i < MANY; i++)
			bad |= ftruncate(many[i], 4096 + i) != 0;
	bad |= eht_group_broadcast_fds(g, many, MANY) != 0;
	for (int i = 0; i < MANY; i++) {
		off_t sz = many[i] >= 0 ? lseek(many[i], 0, SEEK_END) : -1;
		bad |= sz != 4096 + i;
		if (many[i] >= 0)
			close(many[i]);
	}
	/* Mismatched lengths are a protocol error on the receiving side, never a hang. */
	bad |= eht_group_barrier(g) != 0;
	eht_group_destroy(g);
	if (bad)
		fprintf(stderr, "rank %d: a check failed (%s)\n", rank, eht_last_error());
	return bad;
}

/* ---- descriptors over the user's in-flight limit ---- */

/* Sent and unread descriptors count against the sending user's open-file limit (root is exempt):
 * with the limit at 64, rank 0's 40 descriptors to each of 3 ranks that read only after 300 ms pass
 * it at the third send, which must wait for the first ranks to read instead of failing. Ranks of
 * root become an unprivileged user first. */
enum { INFLIGHT_FDS = 40, INFLIGHT_LIMIT = 64 };

static int limit_inflight(void)
{
	if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
			       setresuid(65534, 65534, 65534) != 0))
		return -1;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	rl.rlim_cur = INFLIGHT_LIMIT;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

/* Whether a forked process can become that user and set that limit. */
static bool can_limit_inflight(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(limit_inflight() ? 1 : 0);
	int st = 0;
	return p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int inflight_rank(int rank)
{
	if (limit_inflight()) {
		fprintf(stderr, "rank %d: cannot limit descriptors in flight\n", rank);
		return 1;
	}
	eht_group *g = NULL;
	struct eht_group_opts o = opts_ms(20000);
	if (eht_group_create(key, rank, N, &o, &g)) {
		fprintf(stderr, "rank %d: create: %s\n", rank, eht_last_error());
		return 1;
	}
	int bad = 0, fds[INFLIGHT_FDS];
	for (int i = 0; i < INFLIGHT_FDS; i++) {
		fds[i] = rank == 0 ? memfd_create("f", MFD_CLOEXEC) : -1;
		if (rank == 0)
			bad |= fds[i] < 0 || ftruncate(fds[i], 4096 + i) != 0;
	}
	if (rank > 0) {
		struct timespec ts = {0, 300 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (eht_group_broadcast_fds(g, fds, INFLIGHT_FDS)) {
		fprintf(stderr, "rank %d: fds over the in-flight limit: %s\n", rank, eht_last_error());
		bad |= 1;
	}
	for (int i = 0; i < INFLIGHT_FDS; i++) {
		bad |= fds[i] < 0 || lseek(fds[i], 0, SEEK_END) != 4096 + i;
		if (fds[i] >= 0)
			close(fds[i]);
	}
	bad |= eht_group_barrier(g) != 0;
	eht_group_destroy(g);
	return bad;
}

/* ---- a rank killed mid-broadcast ---- */

#define KILL_TIMEOUT_MS 8000
static int victim;

static int kill_rank_fn(int rank)
{
	eht_group *g = NULL;
	struct eht_group_opts o = opts_ms(KILL_TIMEOUT_MS);
	if (eht_group_create(key, rank, N, &o, &g)) {
		fprintf(stderr, "rank %d: create: %s\n", rank, eht_last_error());
		return 1;
	}
	formed();
	if (rank == victim) {
		/* Never reads: rank 0 blocks writing to it until the parent kills us. */
		for (;;)
			pause();
	}
	size_t len = 64u << 20;
	char *buf = calloc(1, len);
	double t0 = now_s();
	int rc = eht_group_broadcast(g, buf, len);
	/* Ranks served before the victim may have their bytes; the next collective must fail. */
	if (rc == 0)
		rc = eht_group_barrier(g);
	double dt = now_s() - t0;
	free(buf);
	int ok = (rc == -ECONNRESET || rc == -ETIMEDOUT) && dt < 3.0 * KILL_TIMEOUT_MS / 1000.0;
	if (!ok)
		fprintf(stderr, "rank %d: expected -ECONNRESET/-ETIMEDOUT within the timeout, got %d after %.1f s (%s)\n",
			rank, rc, dt, eht_last_error());
	/* Once broken, every later call fails at once. */
	ok &= eht_group_barrier(g) == -ECONNRESET;
	eht_group_destroy(g);
	return !ok;
}

/* ---- timeouts ---- */

static void test_connect_timeout(void)
{
	new_key("nozero");
	eht_group *g = NULL;
	struct eht_group_opts o = opts_ms(300);
	double t0 = now_s();
	CHECK_RC(eht_group_create(key, 1, 2, &o, &g), -ETIMEDOUT);
	CHECK(now_s() - t0 < 5.0);
	CHECK(g == NULL);
	CHECK(strstr(eht_last_error(), "rank 0 did not appear") != NULL);
	/* Rank 0 whose peers never come. */
	CHECK_RC(eht_group_create(key, 0, 3, &o, &g), -ETIMEDOUT);
	CHECK(strstr(eht_last_error(), "1 of 3 ranks joined") != NULL);
}

static int mismatch_rank(int rank)
{
	eht_group *g = NULL;
	struct eht_group_opts o = opts_ms(5000);
	/* Rank 1 believes the group has 3 ranks. */
	int rc = eht_group_create(key, rank, rank == 0 ? 2 : 3, &o, &g);
	eht_group_destroy(g);
	return rc == -EPROTO ? 0 : 1;
}

/* ---- SO_PEERCRED ---- */

#define TEST_GID 54321
#define TEST_UID 65534

static int cred_rank(int rank, int same_gid)
{
	eht_group *g = NULL;
	struct eht_group_opts o = opts_ms(rank == 0 ? 1500 : 5000);
	o.flags = EHT_GROUP_ALLOW_GID;
	o.allowed_gid = TEST_GID;
	if (same_gid && setgid(TEST_GID) != 0)
		return 2;
	if (rank == 1) {
		if (!same_gid && setgid(TEST_UID) != 0)
			return 2;
		if (setuid(TEST_UID) != 0)
			return 2;
	}
	int rc = eht_group_create(key, rank, 2, &o, &g);
	if (!rc)
		rc = eht_group_barrier(g);
	eht_group_destroy(g);
	if (same_gid)
		return rc == 0 ? 0 : 1;
	/* The stranger is told no; rank 0 keeps waiting for a real peer and times out. */
	return rc == (rank == 0 ? -ETIMEDOUT : -EACCES) ? 0 : 1;
}
static int cred_same(int rank) { return cred_rank(rank, 1); }
static int cred_other(int rank) { return cred_rank(rank, 0); }

/* ---- the adapter: collectives from "a framework" (here: a second built-in group) ---- */

static int ad_bcast(void *u, void *buf, size_t len) { return eht_group_broadcast(u, buf, len); }
static int ad_gather(void *u, const void *in, size_t len, void *out) { return eht_group_allgather(u, in, len, out); }

static int adapter_rank(int rank)
{
	eht_group *fw = NULL, *g = NULL;
	struct eht_group_opts o = opts_ms(10000);
	if (eht_group_create(key, rank, 3, &o, &fw))
		return 1;
	struct eht_group_adapter ad = {.size = sizeof(ad), .user = fw, .rank = rank, .nranks = 3,
				       .broadcast = ad_bcast, .allgather = ad_gather};
	struct eht_group_opts ao = opts_ms(10000);
	ao.adapter = &ad;
	int bad = eht_group_create("adapted", -1, 0, &ao, &g) != 0;
	bad |= !g || eht_group_rank(g) != rank || eht_group_size(g) != 3;
	if (!bad) {
		int v = rank + 10, all[3];
		bad |= eht_group_allgather(g, &v, sizeof(v), all) != 0 || all[2] != 12;
		bad |= eht_group_barrier(g) != 0;
		for (int round = 0; round < 2; round++) {
			int fd = -1;
			if (rank == 0) {
				fd = memfd_create("a", MFD_CLOEXEC);
				bad |= ftruncate(fd, 777 + round) != 0;
			}
			bad |= eht_group_broadcast_fds(g, &fd, 1) != 0;
			bad |= fd < 0 || lseek(fd, 0, SEEK_END) != 777 + round;
			if (fd >= 0)
				close(fd);
		}
	}
	if (bad)
		fprintf(stderr, "adapter rank %d: %s\n", rank, eht_last_error());
	eht_group_destroy(g);
	eht_group_destroy(fw);
	return bad;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* belt and braces: the library uses MSG_NOSIGNAL */

	/* Arguments are checked before anything is touched. */
	eht_group *g = NULL;
	CHECK_RC(eht_group_create("bad/key", 0, 2, NULL, &g), -EINVAL);
	CHECK_RC(eht_group_create("", 0, 2, NULL, &g), -EINVAL);
	CHECK_RC(eht_group_create("k", 2, 2, NULL, &g), -EINVAL);
	struct eht_group_opts bad_flags = {.size = sizeof(bad_flags), .flags = 0x80};
	CHECK_RC(eht_group_create("k", 0, 2, &bad_flags, &g), -EINVAL);

	/* Size 1: every collective is trivial. */
	CHECK_RC(eht_group_create_single(&g), 0);
	int v = 5, out = 0, fd = 3;
	CHECK_RC(eht_group_barrier(g), 0);
	CHECK_RC(eht_group_allgather(g, &v, sizeof(v), &out), 0);
	CHECK(out == 5);
	CHECK_RC(eht_group_broadcast(g, &v, sizeof(v)), 0);
	CHECK_RC(eht_group_broadcast_fds(g, &fd, 1), 0);
	eht_group_destroy(g);
	CHECK_RC(eht_group_create("solo", 0, 1, NULL, &g), 0);
	CHECK(eht_group_size(g) == 1);
	eht_group_destroy(g);

	new_key("basic");
	CHECK(run_ranks(N, basic_rank, NULL, -1, 0) == 0);
	/* The key is free again once the group formed: a second group with it works. */
	CHECK(run_ranks(N, basic_rank, NULL, -1, 0) == 0);

	new_key("kill1");
	victim = 1;
	CHECK(run_ranks(N, kill_rank_fn, NULL, 1, 1500) == 0);
	new_key("kill3");
	victim = 3;
	CHECK(run_ranks(N, kill_rank_fn, NULL, 3, 1500) == 0);
	/* Rank 0 itself dies while the others wait in the broadcast. */
	new_key("kill0");
	victim = 0;
	CHECK(run_ranks(N, kill_rank_fn, NULL, 0, 1500) == 0);

	test_connect_timeout();

	new_key("mismatch");
	CHECK(run_ranks(2, mismatch_rank, NULL, -1, 0) == 0);

	if (geteuid() == 0) {
		new_key("cred");
		CHECK(run_ranks(2, cred_same, NULL, -1, 0) == 0);
		new_key("cred2");
		CHECK(run_ranks(2, cred_other, NULL, -1, 0) == 0);
	} else {
		fprintf(stderr, "note: not root, SO_PEERCRED refusal not exercised\n");
	}

	new_key("adapter");
	CHECK(run_ranks(3, adapter_rank, NULL, -1, 0) == 0);

	if (can_limit_inflight()) {
		new_key("inflight");
		CHECK(run_ranks(N, inflight_rank, NULL, -1, 0) == 0);
	} else {
		fprintf(stderr, "note: cannot become an unprivileged user, descriptors in flight not limited\n");
	}
	return t_done();
}
