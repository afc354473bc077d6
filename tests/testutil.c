/* SPDX-License-Identifier: Apache-2.0 */
/* testutil.c: helpers shared by the test programs. */
#include "testutil.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "os/fsinfo.h"
#if EHT_HAVE_URING_BUILD
#include <liburing.h>
#endif

int t_failures;

int t_done(void)
{
	if (t_failures)
		fprintf(stderr, "FAIL: %d check(s) failed\n", t_failures);
	else
		fprintf(stderr, "PASS\n");
	return t_failures ? 1 : 0;
}

_Noreturn void t_skip(const char *why)
{
	fprintf(stderr, "SKIP: %s\n", why);
	exit(T_SKIP);
}

const char *t_fixtures(void)
{
	const char *f = getenv("EHT_FIXTURES");
	struct stat st;
	/* The fixtures are in the repository: a test that cannot find them fails, never skips. */
	if (!f || stat(f, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "FAIL: fixtures folder '%s' not found (EHT_FIXTURES; tests/fixtures of the repository)\n",
			f ? f : "(EHT_FIXTURES unset)");
		exit(1);
	}
	return f;
}

char *t_tmpdir(const char *tag)
{
	static _Thread_local char path[256];
	const char *base = getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/eht-%s-XXXXXX", base && *base ? base : "/tmp", tag);
	if (!mkdtemp(path)) {
		perror("mkdtemp");
		exit(1);
	}
	return path;
}

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
}

/* $EHT_CLI, or NULL where it is unset or empty. */
static const char *cli_path(void)
{
	const char *cli = getenv("EHT_CLI");
	return cli && *cli ? cli : NULL;
}

const char *t_cli(void)
{
	const char *cli = cli_path();
	if (!cli)
		t_skip("EHT_CLI not set (run under ctest)");
	return cli;
}

int t_cli_run(const char *args, int timeout_s, char *out, size_t out_len, char *err, size_t err_len)
{
	/* A failure, not a skip: a test may call this after checks that already failed. */
	const char *cli = cli_path();
	if (!cli) {
		fprintf(stderr, "t_cli_run: EHT_CLI not set (run under ctest)\n");
		return 127;
	}
	static unsigned seq;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char op[600], ep[600], redir[620], cmd[8192];
	unsigned k = seq++;
	snprintf(op, sizeof(op), "%s/eht-cli-%d-%u.out", tmp, (int)getpid(), k);
	snprintf(ep, sizeof(ep), "%s/eht-cli-%d-%u.err", tmp, (int)getpid(), k);
	const bool merged = out && err == out;
	snprintf(redir, sizeof(redir), merged ? "&1" : "'%s'", ep);
	snprintf(cmd, sizeof(cmd), "timeout %d '%s' %s >'%s' 2>%s", timeout_s, cli, args, op, redir);
	int st = system(cmd);
	if (out)
		slurp(op, out, out_len);
	if (err && !merged)
		slurp(ep, err, err_len);
	remove(op);
	remove(ep);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int t_dir_entries(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

size_t t_glob_count(const char *dir, const char *name)
{
	char pat[1200];
	glob_t g;
	snprintf(pat, sizeof(pat), "%s/%s", dir, name);
	size_t n = glob(pat, 0, NULL, &g) == 0 ? g.gl_pathc : 0;
	globfree(&g);
	return n;
}

void t_rmtree(const char *path)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", path);
}

int t_child_ready(int pid, int ready_fd)
{
	char b = 0;
	int ok = pid > 0 && read(ready_fd, &b, 1) == 1 && b == 'R';
	close(ready_fd);
	if (!ok) {
		t_kill_child(pid);
		return -1;
	}
	return pid;
}

void t_kill_child(int pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

int t_stderr_to(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	int rc = dup2(fd, 2) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int t_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		p += n;
		len -= (size_t)n;
	}
	return close(fd) == 0 ? 0 : -errno;
}

uint64_t t_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint8_t *t_rand_rows(uint64_t nrows, size_t rb, uint64_t *rs)
{
	uint8_t *p = malloc(nrows * rb);
	if (!p) {
		fprintf(stderr, "t_rand_rows: out of memory for %llu rows\n", (unsigned long long)nrows);
		exit(1);
	}
	for (size_t i = 0; i < nrows * rb; i++)
		p[i] = (uint8_t)t_rand(rs);
	return p;
}

size_t t_rows_compare(const uint8_t *table, uint64_t nrows, size_t rb, const int64_t *ids, size_t n,
		      const uint8_t *out, uint64_t *dead)
{
	size_t bad = 0;
	*dead = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t r = ids[i];
		if (r < 0 || (uint64_t)r >= nrows) {
			(*dead)++;
			for (size_t k = 0; k < rb; k++)
				if (out[i * rb + k]) {
					bad++;
					break;
				}
		} else {
			bad += memcmp(out + i * rb, table + (size_t)r * rb, rb) != 0;
		}
	}
	return bad;
}

int t_uring_works(void)
{
#if EHT_HAVE_URING_BUILD
	struct io_uring r;
	if (io_uring_queue_init(8, &r, 0) < 0)
		return 0; /* e.g. kernel.io_uring_disabled, or a seccomp filter */
	io_uring_queue_exit(&r);
	return 1;
#else
	return 0;
#endif
}

void t_setenv(const char *name, const char *value)
{
	if ((value ? setenv(name, value, 1) : unsetenv(name)) != 0 || eht_settings_reload() != 0) {
		fprintf(stderr, "t_setenv %s: %s\n", name, strerror(errno));
		exit(1);
	}
}

int t_have_gpu(void) { return eht_dev_count() > 0; }

int t_have_gpu_forked(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(t_have_gpu() ? 0 : 1);
	int st = 0;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int t_count_lines(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"

long t_nr_hugepages(void)
{
	FILE *f = fopen(NR_HUGEPAGES, "r");
	long v = -1;
	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

int t_set_nr_hugepages(long n)
{
	FILE *f = fopen(NR_HUGEPAGES, "w");
	if (!f)
		return -1;
	int ok = fprintf(f, "%ld\n", n) > 0;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

long t_hugepages_resizable_or_skip(struct eht_hugetlb_pool *pool)
{
	if (eht_hugetlb_pool(2ull << 20, pool) != 0)
		t_skip("no 2 MiB huge pages in this kernel");
	long nr0 = t_nr_hugepages();
	if (geteuid() != 0 || nr0 < 0 || t_set_nr_hugepages(nr0) != 0)
		t_skip("needs root to resize the huge page pool (/proc/sys/vm/nr_hugepages)");
	return nr0;
}

uint64_t t_hugepages_available(void)
{
	struct eht_hugetlb_pool pool;
	return eht_hugetlb_pool(2ull << 20, &pool) == 0 ? pool.available : 0;
}

void t_sha256_hex(const void *data, size_t len, char out[65])
{
	/* coreutils' sha256sum: no crypto library needed for tests. */
	char tmpl[] = "/tmp/eht-sha-XXXXXX";
	int fd = mkstemp(tmpl);
	out[0] = '\0';
	if (fd < 0)
		return;
	close(fd);
	if (t_write_file(tmpl, data, len) == 0) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "sha256sum '%s'", tmpl);
		FILE *p = popen(cmd, "r");
		if (p) {
			if (fscanf(p, "%64s", out) != 1)
				out[0] = '\0';
			pclose(p);
		}
	}
	unlink(tmpl);
}

struct json_t *t_serve_status(const char *key)
{
	char *text = NULL;
	if (eht_serve_status(key, &text) != 0)
		return NULL;
	json_t *j = json_loads(text, 0, NULL);
	free(text);
	return j;
}
