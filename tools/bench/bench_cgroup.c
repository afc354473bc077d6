/* SPDX-License-Identifier: Apache-2.0 */
/* bench_cgroup.c: a memory limit for `eht bench disk --mem-limit`: a cgroup v2 child or sibling, a
 * cgroup v1 child, or a transient systemd scope (bench_cgroup.h). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_cgroup.h"

#define SCOPE_ENV "EHT_BENCH_CG_SCOPE"

/* Writes s to path (created in a fake hierarchy). 0 or -errno. */
static int put(const struct bench_cg *c, const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | (c->fake ? O_CREAT | O_TRUNC : 0), 0644);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	int e = n < 0 ? -errno : (size_t)n != strlen(s) ? -EIO : 0;
	close(fd);
	return e;
}

static uint64_t get_u64(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long v = 0;
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* True when the whitespace- or comma-separated list in s holds word. */
static int has_word(const char *s, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = s; (p = strstr(p, word)); p += wl)
		if ((p == s || p[-1] == ' ' || p[-1] == ',') && (!p[wl] || strchr(" ,\n", p[wl])))
			return 1;
	return 0;
}

static int file_has_word(const char *path, const char *word)
{
	char buf[1024] = "";
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return has_word(buf, word);
}

/* The folders of this process's cgroups: v2 (own2) and the v1 memory hierarchy (own1), "" where
 * absent, from /proc/self/mountinfo (where each hierarchy is mounted, and which part of it) and
 * /proc/self/cgroup (where the process is in it). */
static void locate(char *own2, char *own1, size_t len)
{
	char line[4096], mnt2[PATH_MAX] = "", root2[PATH_MAX] = "", mnt1[PATH_MAX] = "", root1[PATH_MAX] = "";
	own2[0] = own1[0] = '\0';
	FILE *f = fopen("/proc/self/mountinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char root[PATH_MAX], mp[PATH_MAX], fstype[64], super[1024];
		const char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, mp) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fstype, super) != 2)
			continue;
		if (!strcmp(fstype, "cgroup2") && !mnt2[0]) {
			snprintf(mnt2, sizeof(mnt2), "%s", mp);
			snprintf(root2, sizeof(root2), "%s", root);
		} else if (!strcmp(fstype, "cgroup") && has_word(super, "memory") && !mnt1[0]) {
			snprintf(mnt1, sizeof(mnt1), "%s", mp);
			snprintf(root1, sizeof(root1), "%s", root);
		}
	}
	if (f)
		fclose(f);
	f = fopen("/proc/self/cgroup", "r");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctl = c1 + 1, *path = c2 + 1, *mnt, *root;
		char *dst;
		if (!*ctl && mnt2[0]) {
			mnt = mnt2, root = root2, dst = own2;
		} else if (has_word(ctl, "memory") && mnt1[0]) {
			mnt = mnt1, root = root1, dst = own1;
		} else {
			continue;
		}
		/* The path is relative to the hierarchy; the mount shows the part under root. */
		size_t rl = strcmp(root, "/") ? strlen(root) : 0;
		if (rl && (strncmp(path, root, rl) || (path[rl] && path[rl] != '/')))
			continue; /* our cgroup is outside what is mounted */
		path += rl;
		snprintf(dst, len, "%s%s", mnt, strcmp(path, "/") ? path : "");
	}
	if (f)
		fclose(f);
}

/* Removes cgroups an earlier bench left under parent when it was killed (the OOM killer, inside its
 * own limit): eht-bench-disk-PID where PID is gone. rmdir refuses one that still holds a process. */
static void sweep_stale(const struct bench_cg *c, const char *parent)
{
	if (c->fake)
		return;
	DIR *dir = opendir(parent);
	struct dirent *e;
	while (dir && (e = readdir(dir))) {
		char *end = NULL;
		if (strncmp(e->d_name, "eht-bench-disk-", 15))
			continue;
		long pid = strtol(e->d_name + 15, &end, 10);
		if (*end || pid <= 0 || pid == (long)getpid() || !(kill((pid_t)pid, 0) != 0 && errno == ESRCH))
			continue;
		char p[PATH_MAX + 300];
		snprintf(p, sizeof(p), "%s/%s", parent, e->d_name);
		(void)rmdir(p);
	}
	if (dir)
		closedir(dir);
}

static void pid_str(char *buf, size_t len) { snprintf(buf, len, "%d", (int)getpid()); }

/* The cgroup to come back to, and its cgroup.procs for bench_cg_undo. */
static void set_home(struct bench_cg *c, const char *dir)
{
	snprintf(c->home, sizeof(c->home), "%s", dir);
	snprintf(c->home_procs, sizeof(c->home_procs), "%.1600s/cgroup.procs", dir);
}

/* Joins this process to the cgroup folder dir. */
static int join(const struct bench_cg *c, const char *dir)
{
	char p[1700], pid[32];
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	pid_str(pid, sizeof(pid));
	return put(c, p, pid);
}

/* Makes this run's folder c->dir under parent, after removing stale ones of runs that died there.
 * On failure c->dir is empty and why says "<what>: mkdir <dir>: <reason>". */
static int make_child(struct bench_cg *c, const char *parent, const char *what, char *why, size_t wl)
{
	sweep_stale(c, parent);
	snprintf(c->dir, sizeof(c->dir), "%.1500s/eht-bench-disk-%d", parent, (int)getpid());
	if (mkdir(c->dir, 0755) != 0) {
		int e = errno;
		/* (a long path cut short is still a message; only an encoding error leaves none) */
		if (snprintf(why, wl, "%s: mkdir %s: %s", what, c->dir, strerror(e)) < 0 && wl)
			why[0] = '\0';
		c->dir[0] = '\0';
		return -e;
	}
	return 0;
}

/* Makes c->dir (name under parent), sets the limit file, joins it. On failure undoes and says why. */
static int make_limited(struct bench_cg *c, const char *parent, const char *limit_file, uint64_t limit,
			const char *what, char *why, size_t wl)
{
	char p[1800], val[32];
	int crc = make_child(c, parent, what, why, wl);
	if (crc)
		return crc;
	snprintf(val, sizeof(val), "%" PRIu64, limit);
	snprintf(p, sizeof(p), "%s/%s", c->dir, limit_file);
	int rc = put(c, p, val);
	if (!rc) {
		if (c->v2) { /* no swapping the bench's own memory out to stay under the limit */
			snprintf(p, sizeof(p), "%s/memory.swap.max", c->dir);
			(void)put(c, p, "0");
		}
		if ((rc = join(c, c->dir)))
			snprintf(p, sizeof(p), "%s/cgroup.procs", c->dir);
	}
	if (rc) {
		snprintf(why, wl, "%s: writing %.600s: %s", what, p, strerror(-rc));
		if (!c->fake)
			rmdir(c->dir);
		c->dir[0] = '\0';
	}
	return rc;
}

/* v2, a child of the process's own cgroup: join the child first (own then holds no process of
 * ours), enable the memory controller for own's children, then set the limit. */
static int v2_child(struct bench_cg *c, const char *own, uint64_t limit, char *why, size_t wl)
{
	char p[1800], q[1800], val[32];
	snprintf(p, sizeof(p), "%s/cgroup.controllers", own);
	if (!file_has_word(p, "memory")) {
		snprintf(why, wl, "cgroup v2 child of %s: the memory controller is not available there (%s)", own, p);
		return -EOPNOTSUPP;
	}
	char what[1600];
	snprintf(what, sizeof(what), "cgroup v2 child of %.1500s", own);
	int rc = make_child(c, own, what, why, wl);
	if (rc)
		return rc;
	set_home(c, own);
	rc = join(c, c->dir);
	if (rc) {
		snprintf(why, wl, "cgroup v2 child of %s: joining %s: %s", own, c->dir, strerror(-rc));
		goto undo;
	}
	snprintf(q, sizeof(q), "%s/cgroup.subtree_control", own);
	if (c->fake || !file_has_word(q, "memory")) {
		if ((rc = put(c, q, "+memory"))) {
			snprintf(why, wl, "cgroup v2 child of %s: enabling memory in %s: %s%s", own, q, strerror(-rc),
				 rc == -EBUSY ? " (other processes share that cgroup: the kernel keeps controllers "
						"off cgroups that hold processes)" : "");
			goto undo;
		}
		snprintf(c->enabled, sizeof(c->enabled), "%s", q);
	}
	snprintf(val, sizeof(val), "%" PRIu64, limit);
	snprintf(p, sizeof(p), "%s/memory.max", c->dir);
	if ((rc = put(c, p, val))) {
		snprintf(why, wl, "cgroup v2 child of %s: writing %s: %s", own, p, strerror(-rc));
		goto undo;
	}
	snprintf(p, sizeof(p), "%s/memory.swap.max", c->dir);
	(void)put(c, p, "0");
	return 0;
undo:
	bench_cg_leave(c);
	return rc;
}

int bench_cg_enter(struct bench_cg *c, uint64_t limit, char *why, size_t wl)
{
	char own2[PATH_MAX], own1[PATH_MAX], w2[700] = "", w3[700] = "", p[PATH_MAX + 32];
	memset(c, 0, sizeof(*c));
	c->mech = BENCH_CG_NONE;
	pid_str(c->pid, sizeof(c->pid));
	const char *fake = getenv("EHT_BENCH_CGROUP_ROOT");
	if (fake && *fake) {
		c->fake = 1;
		snprintf(own2, sizeof(own2), "%s", fake);
		own1[0] = '\0';
	} else {
		locate(own2, own1, sizeof(own2));
	}
	if (getenv(SCOPE_ENV) && own2[0]) { /* re-run inside the scope bench_cg_scope_exec made */
		snprintf(p, sizeof(p), "%s/memory.max", own2);
		c->limit = get_u64(p);
		c->mech = BENCH_CG_SCOPE;
		snprintf(why, wl, "transient systemd scope %s, memory.max = %.2f GiB", own2, (double)c->limit / (1 << 30));
		return c->limit ? 0 : -ENOENT;
	}
	int rc = -ENOENT;
	snprintf(why, wl, "no cgroup v2 hierarchy mounted");
	if (own2[0]) {
		c->v2 = 1;
		if ((rc = v2_child(c, own2, limit, why, wl)) == 0)
			goto done;
		/* A sibling under the parent, which delegates memory when own has a memory.max. */
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%s", own2);
		char *slash = strrchr(parent, '/');
		snprintf(p, sizeof(p), "%s/memory.max", own2);
		if (c->fake || !slash || slash == parent || access(p, F_OK) != 0) {
			snprintf(w2, sizeof(w2), "cgroup v2 sibling: %.560s has no memory.max (its parent does not delegate the "
				 "memory controller)", own2);
		} else {
			*slash = '\0';
			set_home(c, own2);
			if ((rc = make_limited(c, parent, "memory.max", limit, "cgroup v2 sibling", w2, sizeof(w2))) == 0)
				goto done;
		}
	}
	c->v2 = 0;
	snprintf(w3, sizeof(w3), "cgroup v1: no memory hierarchy mounted");
	if (own1[0]) {
		set_home(c, own1);
		if ((rc = make_limited(c, own1, "memory.limit_in_bytes", limit, "cgroup v1", w3, sizeof(w3))) == 0)
			goto done;
	}
	c->home[0] = c->home_procs[0] = '\0';
	{
		char first[700];
		snprintf(first, sizeof(first), "%s", why);
		snprintf(why, wl, "%s; %s; %s", first, w2[0] ? w2 : "cgroup v2 sibling: not tried", w3);
	}
	return rc;
done:
	c->limit = limit;
	c->mech = c->v2 ? BENCH_CG_V2 : BENCH_CG_V1;
	snprintf(why, wl, "cgroup %s, %s = %.2f GiB", c->dir, c->v2 ? "memory.max" : "memory.limit_in_bytes",
		 (double)limit / (1 << 30));
	return 0;
}

/* put() with only async-signal-safe calls. */
static void put_raw(const struct bench_cg *c, const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | (c->fake ? O_TRUNC : 0));
	if (fd < 0)
		return;
	ssize_t n = write(fd, s, strlen(s));
	(void)n;
	close(fd);
}

void bench_cg_undo(void *arg)
{
	struct bench_cg *c = arg;
	if (!c->dir[0])
		return;
	if (c->enabled[0])
		put_raw(c, c->enabled, "-memory");
	if (c->home_procs[0])
		put_raw(c, c->home_procs, c->pid);
	if (!c->fake)
		rmdir(c->dir);
	c->dir[0] = '\0';
}

void bench_cg_leave(struct bench_cg *c)
{
	if (!c->dir[0])
		return;
	int rc = 0;
	/* v2: own may hold processes again only once the controller we enabled there is off. */
	if (c->enabled[0] && (rc = put(c, c->enabled, "-memory")))
		fprintf(stderr, "eht bench disk: writing -memory to %s: %s\n", c->enabled, strerror(-rc));
	if (!rc && c->home[0] && (rc = join(c, c->home)))
		fprintf(stderr, "eht bench disk: moving back to %s: %s\n", c->home, strerror(-rc));
	if (!rc && !c->fake && rmdir(c->dir) != 0)
		fprintf(stderr, "eht bench disk: could not remove cgroup %s: %s\n", c->dir, strerror(errno));
	c->dir[0] = c->enabled[0] = '\0';
}

uint64_t bench_cg_usage(const struct bench_cg *c)
{
	char p[1700];
	if (!c->dir[0])
		return 0;
	snprintf(p, sizeof(p), "%s/%s", c->dir, c->v2 ? "memory.current" : "memory.usage_in_bytes");
	return get_u64(p);
}

/* True when an executable name is on PATH. */
static int on_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	for (const char *s = path; s && *s;) {
		size_t n = strcspn(s, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, s, name);
		if (n && access(buf, X_OK) == 0)
			return 1;
		s += n + (s[n] == ':');
	}
	return 0;
}

int bench_cg_scope_exec(uint64_t limit, char *why, size_t wl)
{
	int user = geteuid() != 0;
	char rt[PATH_MAX];
	snprintf(rt, sizeof(rt), "%s/systemd/private", getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "/nonexistent");
	if (getenv(SCOPE_ENV) || getenv("EHT_BENCH_CGROUP_ROOT")) {
		snprintf(why, wl, "transient scope: not tried (%s)", getenv(SCOPE_ENV) ? "already in one" : "test hierarchy");
		return -EALREADY;
	}
	if (access(user ? rt : "/run/systemd/system", F_OK) != 0 || !on_path("systemd-run")) {
		snprintf(why, wl, "transient scope: no systemd %s manager or no systemd-run", user ? "user" : "system");
		return -ENOENT;
	}
	/* The command line again, as given. */
	char exe[PATH_MAX], cmd[16384], mem[64];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t cl = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (el <= 0 || cl <= 0 || (size_t)cl >= sizeof(cmd) - 1) {
		snprintf(why, wl, "transient scope: cannot read this command line");
		return -EIO;
	}
	exe[el] = '\0';
	cmd[cl] = '\0';
	char *argv[256];
	int n = 0;
	argv[n++] = "systemd-run";
	if (user)
		argv[n++] = "--user";
	argv[n++] = "--scope";
	argv[n++] = "--quiet";
	snprintf(mem, sizeof(mem), "MemoryMax=%" PRIu64, limit);
	argv[n++] = "-p";
	argv[n++] = mem;
	argv[n++] = "-p";
	argv[n++] = "MemorySwapMax=0";
	argv[n++] = "--";
	argv[n++] = exe;
	for (char *a = cmd + strlen(cmd) + 1; a < cmd + cl && n < 255; a += strlen(a) + 1)
		argv[n++] = a;
	argv[n] = NULL;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, wl, "transient scope: fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		setenv(SCOPE_ENV, "1", 1);
		execvp("systemd-run", argv);
		_exit(127);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		snprintf(why, wl, "transient scope: systemd-run could not be run");
		return -ENOEXEC;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
