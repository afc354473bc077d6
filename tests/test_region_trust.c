/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_trust.c: what a named region's open trusts. This user's junk under the name, or its
 * ready region write-locked by another process, fails at once or after a bounded wait with the
 * owner and mode named; a mode beyond the one asked is refused; then, as root, another uid (65534
 * through setpriv, this program again in --helper mode) plants a ready 0666 region, a junk file
 * whose lock it holds, and a 0660 region of a shared group: only the group one, asked with
 * EHT_REGION_GROUP, is ever mapped. Exit 77 for the other-uid half when not root. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "region_testutil.h"

#define OTHER "65534"
#define GROUP_ID 4242

static const char *dir;

static struct eht_region_opts opts(uint32_t flags)
{
	struct eht_region_opts o = {.size = sizeof(o), .flags = flags, .dir = dir, .timeout_s = 60};
	return o;
}

static void path_of(const char *name, char *out, size_t len) { snprintf(out, len, "%s/eht.%s", dir, name); }

/* Holds an OFD write lock on path (opened read-write) until killed: an open file of its own. */
static int hold_lock(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	return fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0 ? fd : -1;
}

/* A child of this process that holds path's write lock; its pid once it holds it, or -1. */
static pid_t lock_holder(const char *path)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		char ok = hold_lock(path) >= 0 ? 'R' : 'F';
		if (write(p[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	return t_child_ready(pid, p[0]);
}

/* Makes a ready kept region NAME of 8192 bytes filled with byte v, then sets its mode. 0 or 1. */
static int plant_region(const char *name, unsigned char v, mode_t mode, uint32_t flags, gid_t gid)
{
	struct eht_region_opts o = opts(EHT_REGION_KEEP | flags);
	o.gid = gid;
	eht_region *r = NULL;
	if (eht_region_open(name, 8192, &o, &r) != 0 || !eht_region_is_creator(r))
		return 1;
	memset(eht_region_data(r), v, 8192);
	char path[512];
	path_of(name, path, sizeof(path));
	int rc = eht_region_mark_ready(r) != 0 || eht_region_close(&r) != 0 || chmod(path, mode) != 0;
	return rc;
}

static int plant_junk(const char *name, mode_t mode)
{
	char path[512];
	path_of(name, path, sizeof(path));
	static const char junk[] = "this is not a region, only bytes under its name";
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	int rc = fd < 0 || write(fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk) || fchmod(fd, mode) != 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* --helper MODE DIR FD: what the other uid does, then 'R' on FD (and, for "junk-locked", waits). */
static int helper(char **argv)
{
	const char *mode = argv[2];
	dir = argv[3];
	int fd = atoi(argv[4]);
	int rc = 1;
	char path[512];
	if (!strcmp(mode, "region-0666"))
		rc = plant_region("planted", 0xAB, 0666, 0, 0);
	else if (!strcmp(mode, "region-0600"))
		rc = plant_region("mine", 0xCD, 0600, 0, 0);
	else if (!strcmp(mode, "region-group"))
		rc = plant_region("shared", 0xEF, 0660, EHT_REGION_GROUP, GROUP_ID);
	else if (!strcmp(mode, "junk-locked")) {
		path_of("locked", path, sizeof(path));
		rc = plant_junk("locked", 0644) || hold_lock(path) < 0;
	}
	char b = rc ? 'F' : 'R';
	if (write(fd, &b, 1) != 1 || rc)
		return 1;
	if (!strcmp(mode, "junk-locked"))
		for (;;)
			pause();
	return 0;
}

/* Runs this program as uid 65534 (setpriv, groups as given) in helper mode; its pid once it is
 * done (or, for a lock holder, holds the lock), -1 on failure. */
static pid_t other_user(const char *groups, const char *mode)
{
	char self[1024];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int p[2];
	if (k <= 0 || pipe(p) != 0)
		return -1;
	self[k] = '\0';
	char fdarg[16];
	snprintf(fdarg, sizeof(fdarg), "%d", p[1]);
	const char *argv[] = {"setpriv", "--reuid=" OTHER, "--regid=" OTHER, groups, self, "--helper", mode, dir,
			      fdarg, NULL};
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		execvp("setpriv", (char **)argv);
		_exit(127);
	}
	close(p[1]);
	char b = 0;
	int ok = pid > 0 && read(p[0], &b, 1) == 1 && b == 'R';
	close(p[0]);
	if (!ok && pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return ok ? pid : -1;
}

/* This user's own files under the name. */
static void own_files(void)
{
	eht_region *r = NULL;
	struct eht_region_opts o = opts(EHT_REGION_KEEP);
	char path[512];

	/* Junk under the name, its lock held by another process: refused at once, naming owner and mode. */
	CHECK(plant_junk("junk", 0600) == 0);
	path_of("junk", path, sizeof(path));
	pid_t h = lock_holder(path);
	CHECK(h > 0);
	CHECK_RC(eht_region_open("junk", 8192, &o, &r), -EINVAL);
	char uid[32];
	snprintf(uid, sizeof(uid), "uid %u", (unsigned)geteuid());
	CHECK(strstr(eht_last_error(), path) && strstr(eht_last_error(), uid) && strstr(eht_last_error(), "0600") &&
	      strstr(eht_last_error(), "not an eht region"));
	CHECK(r == NULL);
	t_kill_child(h);
	CHECK(unlink(path) == 0);

	/* A ready region write-locked by a process that is not its creator: a bounded wait (5 s, not
	 * the 60 s timeout), then -ETIMEDOUT saying so. */
	CHECK(plant_region("held", 1, 0600, 0, 0) == 0);
	path_of("held", path, sizeof(path));
	h = lock_holder(path);
	CHECK(h > 0);
	CHECK_RC(eht_region_open("held", 8192, &o, &r), -ETIMEDOUT);
	CHECK(strstr(eht_last_error(), "is ready but another process held its write lock") != NULL);
	t_kill_child(h);
	CHECK_RC(eht_region_open("held", 8192, &o, &r), 0);
	CHECK(r && ((unsigned char *)eht_region_data(r))[100] == 1);
	CHECK_RC(eht_region_close(&r), 0);

	/* Our own region with a mode beyond the one asked: refused (0660 only with EHT_REGION_GROUP). */
	CHECK(chmod(path, 0666) == 0);
	CHECK_RC(eht_region_open("held", 8192, &o, &r), -EPERM);
	CHECK(strstr(eht_last_error(), "0666") && strstr(eht_last_error(), "every user"));
	CHECK(chmod(path, 0660) == 0);
	CHECK_RC(eht_region_open("held", 8192, &o, &r), -EPERM);
	CHECK(strstr(eht_last_error(), "its group"));
	struct eht_region_opts g = opts(EHT_REGION_KEEP | EHT_REGION_GROUP);
	g.gid = getegid();
	CHECK_RC(eht_region_open("held", 8192, &g, &r), 0);
	CHECK_RC(eht_region_close(&r), 0);
	CHECK(chmod(path, 0640) == 0); /* readable, not writable, by the group: nobody else writes it */
	CHECK_RC(eht_region_open("held", 8192, &o, &r), 0);
	CHECK_RC(eht_region_close(&r), 0);
	CHECK_RC(eht_region_unlink("held", dir), 0);

	/* A FIFO under the name: no hang, a clear error. */
	path_of("fifo", path, sizeof(path));
	CHECK(mkfifo(path, 0600) == 0);
	CHECK_RC(eht_region_open("fifo", 8192, &o, &r), -EINVAL);
	CHECK(strstr(eht_last_error(), "not a regular file") && strstr(eht_last_error(), uid));
	CHECK(unlink(path) == 0);
}

/* Another uid's files under the name (root only). */
static void other_uid(void)
{
	eht_region *r = NULL;
	struct eht_region_opts o = opts(EHT_REGION_KEEP);
	char path[512];

	/* A ready 0666 region of the right geometry: never mapped, the owner named. */
	CHECK(other_user("--clear-groups", "region-0666") > 0);
	CHECK_RC(eht_region_open("planted", 8192, &o, &r), -EPERM);
	path_of("planted", path, sizeof(path));
	CHECK(strstr(eht_last_error(), path) && strstr(eht_last_error(), "uid " OTHER) &&
	      strstr(eht_last_error(), "0666"));
	CHECK(r == NULL);
	/* ... nor by open-only. */
	struct eht_region_opts oo = opts(EHT_REGION_OPEN_ONLY);
	CHECK_RC(eht_region_open("planted", 0, &oo, &r), -EPERM);
	CHECK(r == NULL);

	/* A 0600 region of that uid: still not ours. */
	CHECK(other_user("--clear-groups", "region-0600") > 0);
	CHECK_RC(eht_region_open("mine", 8192, &o, &r), -EPERM);
	CHECK(strstr(eht_last_error(), "uid " OTHER) && strstr(eht_last_error(), "0600"));

	/* Junk whose lock the other uid holds: refused at once, not after the 60 s timeout. */
	pid_t h = other_user("--clear-groups", "junk-locked");
	CHECK(h > 0);
	CHECK_RC(eht_region_open("locked", 8192, &o, &r), -EPERM);
	CHECK(strstr(eht_last_error(), "uid " OTHER) && strstr(eht_last_error(), "0644"));
	t_kill_child(h);

	/* A group region (0660, group 4242) made by a member: trusted when asked with that group only. */
	CHECK(other_user("--groups=4242", "region-group") > 0);
	CHECK_RC(eht_region_open("shared", 8192, &o, &r), -EPERM);
	struct eht_region_opts g = opts(EHT_REGION_KEEP | EHT_REGION_GROUP);
	g.gid = GROUP_ID + 1;
	CHECK_RC(eht_region_open("shared", 8192, &g, &r), -EPERM);
	g.gid = GROUP_ID;
	CHECK_RC(eht_region_open("shared", 8192, &g, &r), 0);
	CHECK(r && ((unsigned char *)eht_region_data(r))[4000] == 0xEF);
	CHECK_RC(eht_region_close(&r), 0);
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "--helper"))
		return helper(argv);
	dir = r_tmpdir("trust");
	own_files();
	int skip = geteuid() != 0;
	if (!skip) {
		/* Like /dev/shm: every user may create names here (sticky). */
		CHECK(chmod(dir, 01777) == 0);
		other_uid();
	}
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	if (skip && !t_failures) {
		fprintf(stderr, "test_region_trust: another uid's files need root (setpriv): skipped that half\n");
		return T_SKIP;
	}
	return t_done();
}
