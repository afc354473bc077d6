/* SPDX-License-Identifier: Apache-2.0 */
/* test_eintr.c: eht's calls where signals interrupt them. CPython installs every Python-level signal
 * handler (vLLM's SIGTERM and SIGINT among them) without SA_RESTART, and the kernel gives a process's
 * signal to its main thread first: there, in an engine's calls into eht, any blocking system call can
 * return EINTR. Here a thread sends SIGURG (handled, without SA_RESTART) every 200 us to the main
 * thread and to each of eht's own threads (the lookup pool, the server's and status threads) while
 * the main thread synthesizes a checkpoint, serves it in process, attaches, looks rows up, asks the
 * server's status, makes a region through fallocate (the kernels before 5.14), reads the checkpoint
 * through the disk tier with prefetch tickets, and shares a region with a second rank (a forked
 * process under its own storm). Every call must succeed and every
 * row must match the checkpoint's bytes; the main thread must have taken the signals. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define ROWS 3000
#define SHARE_BYTES (4u << 20)

static atomic_ulong handled; /* signals the main thread took */
static pid_t main_tid;

static void on_signal(int sig)
{
	(void)sig;
	if ((pid_t)syscall(SYS_gettid) == main_tid)
		atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
}

/* Whether thread tid of this process is eht's (util/thread.h names them "eht-..."). No malloc here:
 * the storm runs beside fork-free code only, but a storm thread should not hold libc's locks. */
static int is_eht_thread(int task_dir, pid_t tid)
{
	char path[32], comm[32] = "";
	snprintf(path, sizeof(path), "%d/comm", (int)tid);
	int fd = openat(task_dir, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	return n > 4 && !strncmp(comm, "eht-", 4);
}

static void *storm(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	const pid_t pid = getpid();
	int task_dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[8192];
	const struct timespec nap = {0, 200 * 1000};
	for (;;) {
		nanosleep(&nap, NULL);
		syscall(SYS_tgkill, pid, main_tid, SIGURG);
		if (task_dir < 0 || lseek(task_dir, 0, SEEK_SET) != 0)
			continue;
		long n;
		while ((n = syscall(SYS_getdents64, task_dir, buf, sizeof(buf))) > 0)
			for (long off = 0; off < n;) {
				struct dirent64 *e = (struct dirent64 *)(buf + off);
				off += e->d_reclen;
				pid_t tid = (pid_t)atoi(e->d_name);
				if (tid > 0 && tid != main_tid && is_eht_thread(task_dir, tid))
					syscall(SYS_tgkill, pid, tid, SIGURG);
			}
	}
	return NULL;
}

/* Each part must have run under the storm: the main thread took signals during it. */
static void phase(const char *what, unsigned long *mark)
{
	unsigned long now = atomic_load(&handled);
	if (now == *mark)
		fprintf(stderr, "%s: the main thread took no signal: the storm did not reach the calls\n", what);
	CHECK(now > *mark);
	*mark = now;
}

static int storm_start(void)
{
	main_tid = (pid_t)syscall(SYS_gettid);
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART, as CPython's handlers */
	sigemptyset(&sa.sa_mask);
	pthread_t t;
	if (sigaction(SIGURG, &sa, NULL) != 0 || pthread_create(&t, NULL, storm, NULL) != 0)
		return -1;
	return pthread_detach(t);
}

/* The packed rows (weight row, then scale row) of table `layer` of a synthetic checkpoint, from the
 * st layer's views. malloc'd ROWS x 264 bytes, or NULL. */
static uint8_t *reference(const char *ckpt, unsigned layer)
{
	char wn[96], sn[96];
	snprintf(wn, sizeof(wn), "layers.%u.engram.embed.weight", layer);
	snprintf(sn, sizeof(sn), "layers.%u.engram.embed.scale", layer);
	eht_ckpt *ck = NULL;
	struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
	uint8_t *t = NULL;
	CHECK_RC(eht_ckpt_open(ckpt, 0, &ck), 0);
	if (ck && eht_ckpt_find(ck, wn, &w) == 0 && eht_ckpt_find(ck, sn, &s) == 0 && w.shape[0] == ROWS &&
	    (t = malloc((size_t)ROWS * EHT_ENGRAM_ROW_BYTES)))
		for (uint64_t r = 0; r < ROWS; r++) {
			memcpy(t + r * EHT_ENGRAM_ROW_BYTES, (const uint8_t *)w.data + r * 256, 256);
			memcpy(t + r * EHT_ENGRAM_ROW_BYTES + 256, (const uint8_t *)s.data + r * 8, 8);
		}
	CHECK(t != NULL);
	eht_ckpt_close(ck);
	return t;
}

/* n ids over [0, ROWS) with repeats. */
static void some_ids(int64_t *ids, size_t n, uint64_t *rs)
{
	for (size_t i = 0; i < n; i++)
		ids[i] = (int64_t)(t_rand(rs) % ROWS);
}

/* A HOST lookup of n ids from table t on the CPU, against ref. */
static void lookup_matches(eht_table *t, const uint8_t *ref, uint64_t *rs, const char *what)
{
	enum { N = 2000 };
	static int64_t ids[N];
	static uint8_t out[N * EHT_ENGRAM_ROW_BYTES];
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				    .device = -1, .threads = 2, .max_batch = N, .numa_node = -1};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	for (int round = 0; lk && round < 20; round++) {
		some_ids(ids, N, rs);
		CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, N, out, NULL, EHT_LOOKUP_RUN_OUT_HOST, NULL), 0);
		uint64_t dead = 0;
		size_t bad = t_rows_compare(ref, ROWS, EHT_ENGRAM_ROW_BYTES, ids, N, out, &dead);
		if (bad)
			fprintf(stderr, "%s: round %d: %zu rows differ\n", what, round, bad);
		CHECK(bad == 0 && dead == 0);
	}
	eht_lookup_destroy(lk);
}

/* Rank `rank` of a two-rank group sharing a region: rank 0 writes it, both read it back. 0 or 1. */
static int share_rank(const char *key, int rank)
{
	eht_group *g = NULL;
	struct eht_group_opts go = {.size = sizeof(go), .timeout_ms = 60000};
	if (eht_group_create(key, rank, 2, &go, &g) != 0) {
		fprintf(stderr, "rank %d: eht_group_create: %s\n", rank, eht_last_error());
		return 1;
	}
	struct eht_share_opts so = {.size = sizeof(so), .device = -1, .row_bytes = 256, .name = "eintr-share",
				    .tier = EHT_TIER_REGION};
	eht_table *t = NULL;
	int bad = 0;
	if (eht_table_share(SHARE_BYTES, g, &so, &t) != 0) {
		fprintf(stderr, "rank %d: eht_table_share: %s\n", rank, eht_last_error());
		eht_group_destroy(g);
		return 1;
	}
	struct eht_table_info info = {.size = sizeof(info)};
	bad |= eht_table_get_info(t, &info) != 0 || !info.host;
	uint64_t *p = info.host;
	if (!bad && rank == 0)
		for (size_t i = 0; i < SHARE_BYTES / 8; i++)
			p[i] = i * 0x9e3779b97f4a7c15ull;
	for (int k = 0; k < 50; k++) /* many round trips while the signals come */
		bad |= eht_group_barrier(g) != 0;
	for (size_t i = 0; !bad && i < SHARE_BYTES / 8; i++)
		bad |= p[i] != i * 0x9e3779b97f4a7c15ull;
	uint64_t mine = (uint64_t)rank + 1, both[2] = {0, 0};
	bad |= eht_group_allgather(g, &mine, sizeof(mine), both) != 0 || both[0] != 1 || both[1] != 2;
	if (bad)
		fprintf(stderr, "rank %d: %s\n", rank, eht_last_error());
	bad |= eht_table_close(t) != 0;
	eht_group_destroy(g);
	return bad;
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	char dir[512], ckpt[600], key[64];
	snprintf(dir, sizeof(dir), "%s", t_tmpdir("eintr"));
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", dir);
	snprintf(key, sizeof(key), "eht-test-eintr-%d", (int)getpid());
	uint64_t rs = 0x5eed;

	/* The second rank first, before any thread: each process runs its own storm. */
	pid_t peer = fork();
	if (peer == 0)
		_exit(storm_start() != 0 ? 2 : share_rank(key, 1));
	CHECK(peer > 0);
	CHECK(storm_start() == 0);

	/* A group region's share and barriers. */
	unsigned long mark = 0;
	CHECK(share_rank(key, 0) == 0);
	int st = 0;
	pid_t w;
	while ((w = waitpid(peer, &st, 0)) < 0 && errno == EINTR) /* the test's own wait: interrupted too */
		;
	CHECK(peer > 0 && w == peer && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	phase("the group's share", &mark);

	/* A checkpoint written, read back. */
	struct eht_synth_opts syo = {.size = sizeof(syo), .rows = ROWS, .shards = 3};
	CHECK_RC(eht_synth_checkpoint(ckpt, &syo), 0);
	uint8_t *ref = reference(ckpt, eht_synth_layer(0));
	phase("the checkpoint's write", &mark);

	/* Served in this process (its threads under the storm too), attached, looked up, asked. */
	struct eht_serve_opts so = {.size = sizeof(so), .key = key, .tier = EHT_TIER_REGION};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &so, &s), 0);
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 30000};
	eht_client *c = NULL;
	for (int i = 0; s && i < 3; i++) { /* attach and detach again: each a connection and descriptors */
		CHECK_RC(eht_attach(key, &ao, &c), 0);
		char name[64];
		snprintf(name, sizeof(name), "layers.%u.engram.embed", eht_synth_layer(0));
		eht_table *t = NULL;
		CHECK_RC(eht_client_find(c, name, &t), 0);
		if (t && ref)
			lookup_matches(t, ref, &rs, "served table");
		char *status = NULL;
		CHECK_RC(eht_serve_status(key, &status), 0);
		CHECK(status && strstr(status, key));
		free(status);
		eht_detach(c);
	}
	CHECK_RC(eht_serve_stop(s), 0);
	phase("serving", &mark);

	/* A region made where the kernel has no MADV_POPULATE_WRITE (before 5.14, played): its space is
	 * reserved by fallocate, which tmpfs of such kernels gives up at any signal (6.18 does not, so
	 * here test_region_prefault plays that part). */
	t_setenv("EHT_TEST_FAULT", "populate-madvise");
	char shm[512];
	snprintf(shm, sizeof(shm), "%s", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : dir);
	struct eht_region_opts ro = {.size = sizeof(ro), .flags = EHT_REGION_KEEP, .dir = shm, .populate_threads = 2};
	char rname[64];
	snprintf(rname, sizeof(rname), "eht-test-eintr-%d", (int)getpid());
	eht_region *rg = NULL;
	CHECK_RC(eht_region_open(rname, 256u << 20, &ro, &rg), 0);
	if (rg) {
		const volatile unsigned char *d = eht_region_data(rg);
		CHECK(d[0] == 0 && d[(256u << 20) - 1] == 0);
		CHECK_RC(eht_region_unlink_if_same(rg), 0);
		CHECK_RC(eht_region_close(&rg), 0);
	}
	t_setenv("EHT_TEST_FAULT", NULL);
	phase("a region's fallocate", &mark);

	/* The disk tier: its reads and a prefetch ticket's. */
	char wn[96], sn[96];
	snprintf(wn, sizeof(wn), "layers.%u.engram.embed.weight", eht_synth_layer(0));
	snprintf(sn, sizeof(sn), "layers.%u.engram.embed.scale", eht_synth_layer(0));
	struct eht_disk_opts dop = {.size = sizeof(dop), .weight = wn, .scale = sn, .cache_bytes = 64 * 264,
				    .io_threads = 2, .prefetch_rows = 1000};
	eht_table *dt = NULL;
	CHECK_RC(eht_disk_open(ckpt, &dop, &dt), 0);
	/* Rounds until the main thread has taken a few signals in them (the rows come from the page cache
	 * and a round can fit between two of the storm's): at most 2,000. */
	for (int round = 0; dt && ref && round < 2000 && atomic_load(&handled) < mark + 3; round++) {
		static int64_t prefetched[500];
		some_ids(prefetched, 500, &rs);
		lookup_matches(dt, ref, &rs, "disk table");
		for (int k = 0; k < 10; k++) { /* a ticket's reads (its dispatcher and readers), then a lookup */
			eht_disk_ticket *tk = NULL;
			CHECK_RC(eht_disk_prefetch(dt, prefetched, EHT_ID_INT64, 0, 500, 0, &tk), 0);
			CHECK_RC(eht_disk_wait(tk), 0);
			CHECK(eht_disk_ticket_rows(tk) > 0);
			CHECK_RC(eht_disk_release(tk), 0);
		}
	}
	CHECK_RC(eht_table_close(dt), 0);
	phase("the disk tier", &mark);
	free(ref);
	t_rmtree(dir);
	return t_done();
}
