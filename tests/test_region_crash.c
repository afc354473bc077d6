/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_crash.c: a creator SIGKILLed before and after ready: list shows it, gc removes what is
 * stale or orphaned (never a region in use), a new creator succeeds, and nothing is leaked. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "region_testutil.h"

#define BYTES (3u << 20)
static const char *dir;

/* Forks a creator of `name` that marks it ready when `ready`, reports on a pipe, then sleeps until
 * killed. Returns its pid once it reached that point. */
static pid_t spawn_creator(const char *name, uint32_t flags, unsigned peers, bool ready)
{
	int p[2];
	if (pipe(p))
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		struct eht_region_opts o = {.size = sizeof(o), .flags = flags, .dir = dir, .expected_peers = peers};
		eht_region *r = NULL;
		char c = 'x';
		if (eht_region_open(name, BYTES, &o, &r) != 0 || !eht_region_is_creator(r))
			_exit(2);
		r_fill(eht_region_data(r), BYTES, 99);
		if (ready && eht_region_mark_ready(r) != 0)
			_exit(3);
		if (write(p[1], &c, 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	char c;
	CHECK(read(p[0], &c, 1) == 1);
	close(p[0]);
	return pid;
}

static void kill_wait(pid_t pid)
{
	kill(pid, SIGKILL);
	CHECK(r_wait(pid) == 128 + SIGKILL);
}

/* The state list reports for name, -1 when absent. */
static int state_of(const char *name, bool *alive)
{
	struct eht_region_entry *v = NULL;
	int n = eht_region_list(dir, &v), st = -1;
	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].name, name)) {
			st = v[i].state;
			if (alive)
				*alive = v[i].creator_alive;
		}
	eht_region_list_free(v);
	return st;
}

/* Runs `eht regions ARGS --dir dir` and returns its output (static buffer); NULL without EHT_CLI. */
static const char *cli(const char *args)
{
	static char out[8192];
	const char *exe = getenv("EHT_CLI");
	if (!exe || access(exe, X_OK) != 0)
		return NULL;
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s' regions %s --dir '%s'", exe, args, dir);
	FILE *f = popen(cmd, "r");
	if (!f)
		return NULL;
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	CHECK(pclose(f) == 0);
	return out;
}

static void new_creator_succeeds(const char *name, uint32_t flags)
{
	struct eht_region_opts o = {.size = sizeof(o), .flags = flags, .dir = dir, .expected_peers = 1};
	eht_region *r = NULL;
	CHECK_RC(eht_region_open(name, BYTES, &o, &r), 0);
	CHECK(r && eht_region_is_creator(r));
	CHECK_RC(eht_region_mark_ready(r), 0);
	CHECK_RC(eht_region_close(&r), 0);
	if (flags & EHT_REGION_KEEP)
		CHECK_RC(eht_region_unlink(name, dir), 0);
}

static void before_ready(void)
{
	pid_t pid = spawn_creator("a", EHT_REGION_KEEP, 0, false);
	bool alive = false;
	CHECK(state_of("a", &alive) == EHT_REGION_STATE_BUILDING && alive);
	CHECK_RC(eht_region_gc(dir, 0, NULL, NULL), 0); /* being built: never removed */
	kill_wait(pid);
	alive = true;
	CHECK(state_of("a", &alive) == EHT_REGION_STATE_STALE && !alive);
	const char *out = cli("list --json");
	if (out)
		CHECK(strstr(out, "\"stale\"") != NULL);

	/* An opener that must not reclaim gets a clear error. */
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_KEEP | EHT_REGION_NO_RECLAIM, .dir = dir};
	eht_region *r = NULL;
	CHECK_RC(eht_region_open("a", BYTES, &o, &r), -EOWNERDEAD);
	CHECK(strstr(eht_last_error(), "died") != NULL);

	CHECK_RC(eht_region_gc(dir, EHT_REGION_GC_DRY_RUN, NULL, NULL), 1);
	CHECK(state_of("a", NULL) == EHT_REGION_STATE_STALE);
	out = cli("gc");
	if (out)
		CHECK(strstr(out, "removed 1 region") != NULL);
	else
		CHECK_RC(eht_region_gc(dir, 0, NULL, NULL), 1);
	CHECK(state_of("a", NULL) == -1);
	new_creator_succeeds("a", EHT_REGION_KEEP);

	/* Without gc, the next create-or-open reclaims it and becomes the creator. */
	pid = spawn_creator("b", EHT_REGION_KEEP, 0, false);
	kill_wait(pid);
	new_creator_succeeds("b", EHT_REGION_KEEP);
	CHECK(r_count_files(dir) == 0);
}

static void after_ready(void)
{
	/* Unlink-when-mapped, one of two peers: in use while the creator lives, orphaned after. */
	pid_t pid = spawn_creator("c", EHT_REGION_UNLINK_WHEN_MAPPED, 2, true);
	CHECK(state_of("c", NULL) == EHT_REGION_STATE_READY);
	CHECK_RC(eht_region_gc(dir, 0, NULL, NULL), 0);
	kill_wait(pid);
	CHECK(state_of("c", NULL) == EHT_REGION_STATE_ORPHANED);
	CHECK_RC(eht_region_gc(dir, 0, NULL, NULL), 1);
	CHECK(r_count_files(dir) == 0);
	new_creator_succeeds("c", EHT_REGION_UNLINK_WHEN_MAPPED);

	/* Kept: the data outlives its creator for later attach; gc leaves it. */
	pid = spawn_creator("d", EHT_REGION_KEEP, 0, true);
	kill_wait(pid);
	CHECK(state_of("d", NULL) == EHT_REGION_STATE_IDLE);
	CHECK_RC(eht_region_gc(dir, 0, NULL, NULL), 0);
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_KEEP, .dir = dir};
	eht_region *r = NULL;
	CHECK_RC(eht_region_open("d", BYTES, &o, &r), 0);
	CHECK(r && !eht_region_is_creator(r));
	if (r) {
		void *want = malloc(BYTES);
		r_fill(want, BYTES, 99);
		CHECK(memcmp(want, eht_region_data(r), BYTES) == 0);
		free(want);
	}
	CHECK_RC(eht_region_close(&r), 0);
	CHECK_RC(eht_region_unlink("d", dir), 0);
}

static void leftovers(void)
{
	/* A creator that died between creating its temporary file and linking it; and a foreign file. */
	char path[512];
	snprintf(path, sizeof(path), "%s/.eht-tmp.e.1.0", dir);
	CHECK(t_write_file(path, "x", 1) == 0);
	snprintf(path, sizeof(path), "%s/eht.junk", dir);
	CHECK(t_write_file(path, "not a region", 12) == 0);
	snprintf(path, sizeof(path), "%s/someone-elses-file", dir);
	CHECK(t_write_file(path, "keep me", 7) == 0);
	CHECK(state_of("junk", NULL) == EHT_REGION_STATE_INVALID);
	t_setenv("EHT_REGION_GC_GRACE_S", "0");
	CHECK_RC(eht_region_gc(dir, 0, NULL, NULL), 2);
	t_setenv("EHT_REGION_GC_GRACE_S", NULL);
	CHECK(r_count_files(dir) == 1); /* only the foreign file */
	/* A partial file named with a creator pid that is gone goes at once, without the grace; one
	 * named with a running pid (this process's) waits for it. */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	char gone[512], young[512];
	snprintf(gone, sizeof(gone), "%s/.eht-tmp.g.%d.0.00000000deadbeef", dir, (int)dead);
	snprintf(young, sizeof(young), "%s/.eht-tmp.y.%d.0.00000000deadbeef", dir, (int)getpid());
	CHECK(t_write_file(gone, "x", 1) == 0);
	CHECK(t_write_file(young, "x", 1) == 0);
	t_setenv("EHT_REGION_GC_GRACE_S", "3600");
	CHECK_RC(eht_region_gc(dir, 0, NULL, NULL), 1);
	CHECK(access(gone, F_OK) != 0 && access(young, F_OK) == 0);
	t_setenv("EHT_REGION_GC_GRACE_S", NULL);
	unlink(young);
	unlink(path);
}

int main(void)
{
	dir = r_tmpdir("region-crash");
	before_ready();
	after_ready();
	leftovers();
	CHECK(r_count_files(dir) == 0);
	t_rmtree(dir);
	return t_done();
}
