/* SPDX-License-Identifier: Apache-2.0 */
/* test_file_rules.c: every file eht reads follows the checkpoint rule (a FIFO in its place is a
 * clear error, never a hang: hot sets of `eht serve --hotset`, `eht hash --config / --token-map /
 * --steps`, `eht hotset build --workload` and its starts file, the library's readers), and the
 * ready file cannot be redirected by a symlink that another user (uid 65534) planted under the
 * temporary name it used to write (PATH.tmp.PID). */
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "table/hotset.h"
#include "util/file.h"

static const char *cli;

/* Runs the CLI with args; a hang is killed (SIGKILL: the old hang ignored SIGTERM) and returns 124 or
 * 137. stderr goes into err. */
static int run(const char *args, char *err, size_t len)
{
	char ep[700], cmd[4096];
	snprintf(ep, sizeof(ep), "%s/eht-file-rules-%d.err", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 (int)getpid());
	snprintf(cmd, sizeof(cmd), "timeout -s KILL 20 '%s' %s >/dev/null 2>'%s' </dev/null", cli, args, ep);
	int st = system(cmd);
	err[0] = '\0';
	FILE *f = fopen(ep, "r");
	if (f) {
		size_t n = fread(err, 1, len - 1, f);
		err[n] = '\0';
		fclose(f);
	}
	unlink(ep);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void cli_refuses(const char *what, const char *args)
{
	char err[4096];
	int rc = run(args, err, sizeof(err));
	if (rc == 0 || rc == 124 || rc == 137 || rc == 128 || !strstr(err, "FIFO")) {
		fprintf(stderr, "%s: `eht %s` exited %d%s; stderr: %s\n", what, args, rc,
			rc == 137 || rc == 124 ? " (hung: killed after 20 s)" : "", err);
		t_failures++;
	}
}

static void library_readers(const char *fifo)
{
	int fd = eht_file_open_read(fifo, "test file", NULL);
	CHECK(fd == -EINVAL && strstr(eht_last_error(), "FIFO") && strstr(eht_last_error(), fifo));
	fd = eht_file_open_read("/dev/null", "test file", NULL);
	CHECK(fd == -EINVAL && strstr(eht_last_error(), "character device"));
	int64_t *rows = NULL;
	uint64_t n = 0;
	CHECK_RC(eht_hotset_read(fifo, &rows, &n), -EINVAL);
	CHECK(rows == NULL && strstr(eht_last_error(), "FIFO"));
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_from_file(fifo, &l), -EINVAL);
	CHECK(strstr(eht_last_error(), "FIFO"));
	if (eht_engram_layout_preset("v41", &l) == 0) {
		CHECK_RC(eht_engram_layout_load_token_map(l, fifo), -EINVAL);
		CHECK(strstr(eht_last_error(), "FIFO"));
		eht_engram_layout_free(l);
	}
	eht_ckpt *ck = NULL;
	CHECK(eht_ckpt_open(fifo, 0, &ck) < 0 && ck == NULL);
}

/* Forks a child that drops to uid/gid 65534 and runs fn(arg); returns its exit status. */
static int as_nobody(void (*fn)(const char *, const char *), const char *a, const char *b)
{
	pid_t p = fork();
	if (p == 0) {
		if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
			_exit(77);
		fn(a, b);
		_exit(0);
	}
	int ws = 0;
	return waitpid(p, &ws, 0) == p && WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
}

static void plant(const char *link, const char *target)
{
	if (symlink(target, link) != 0)
		_exit(1);
}

/* `eht serve --ready-file DIR/ready.json` where another user planted DIR/ready.json.tmp.PID (PID: the
 * server's, known ahead here as an attacker guesses it) as a symlink to a file of root's. */
static void ready_file_link(const char *dir, const char *ckpt)
{
	if (geteuid() != 0) {
		fprintf(stderr, "not root: the planted-link case needs a second uid; skipped\n");
		return;
	}
	char shared[600], victim[600], ready[700], link[800];
	snprintf(shared, sizeof(shared), "%s/shared", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(ready, sizeof(ready), "%s/ready.json", shared);
	CHECK(mkdir(shared, 0777) == 0 && chmod(shared, 0777) == 0); /* shared, not sticky */
	CHECK(chmod(dir, 0755) == 0);
	CHECK(t_write_file(victim, "precious\n", 9) == 0);
	int go[2];
	CHECK(pipe(go) == 0);
	char key[64];
	snprintf(key, sizeof(key), "eht-test-ready-link-%d", (int)getpid());
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execl(cli, "eht", "serve", ckpt, "--key", key, "--tier", "region", "--ready-file", ready, (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	snprintf(link, sizeof(link), "%s.tmp.%d", ready, (int)pid);
	int prc = as_nobody(plant, link, victim);
	if (prc == 77)
		fprintf(stderr, "cannot become uid 65534: planted-link case skipped\n");
	CHECK(prc == 0 || prc == 77);
	CHECK(write(go[1], "g", 1) == 1);
	close(go[1]);
	struct stat st;
	int waited = 0;
	while (stat(ready, &st) != 0 && waited++ < 600)
		usleep(50 * 1000);
	CHECK(waited < 600);
	char buf[64] = "";
	FILE *f = fopen(victim, "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	if (strcmp(buf, "precious\n") != 0) {
		fprintf(stderr, "the ready file was written through the planted link into %s: '%.40s'\n", victim, buf);
		t_failures++;
	}
	CHECK(lstat(ready, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0644);
	kill(pid, SIGTERM);
	int ws = 0;
	CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	unlink(link);
	/* Only the planted link is left: no temporary of the server's. */
	CHECK(t_dir_entries(shared) == 0);
}

static void write_atomic(const char *dir)
{
	char p[600], link[700], victim[700];
	snprintf(p, sizeof(p), "%s/out.json", dir);
	snprintf(victim, sizeof(victim), "%s/victim2", dir);
	CHECK(t_write_file(victim, "keep", 4) == 0);
	/* A link at the target itself is replaced, not followed. */
	CHECK(symlink(victim, p) == 0);
	CHECK_RC(eht_file_write_atomic(p, "{}", 2, 0640), 0);
	struct stat st;
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0640 && st.st_size == 2);
	CHECK(stat(victim, &st) == 0 && st.st_size == 4);
	/* The old predictable temporary, planted: ignored. */
	snprintf(link, sizeof(link), "%s.tmp.%d", p, (int)getpid());
	CHECK(symlink(victim, link) == 0);
	CHECK_RC(eht_file_write_atomic(p, "{\"a\": 1}", 8, 0644), 0);
	CHECK(stat(victim, &st) == 0 && st.st_size == 4);
	unlink(link);
	unlink(p);
	snprintf(p, sizeof(p), "%s/no/such/dir/x", dir);
	CHECK(eht_file_write_atomic(p, "x", 1, 0644) == -ENOENT && strstr(eht_last_error(), p));
}

int main(void)
{
	cli = getenv("EHT_CLI");
	char *dir = t_tmpdir("filerules");
	char fifo[600], ckpt[600], args[4096], steps[600];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(ckpt, sizeof(ckpt), "%s/ck", dir);
	snprintf(steps, sizeof(steps), "%s/steps.json", dir);
	CHECK(mkfifo(fifo, 0600) == 0);
	CHECK(t_write_file(steps, "[]", 2) == 0);
	/* No writer ever opens the FIFO: a reader that opens it blocking hangs; SIGALRM ends that. */
	pid_t lp = fork();
	if (lp == 0) {
		alarm(20);
		library_readers(fifo);
		_exit(t_done());
	}
	int lws = 0;
	CHECK(waitpid(lp, &lws, 0) == lp);
	if (!WIFEXITED(lws) || WEXITSTATUS(lws) != 0) {
		fprintf(stderr, "the library's readers %s on a FIFO\n", WIFSIGNALED(lws) ? "hung (killed after 20 s)" : "failed");
		t_failures++;
	}
	write_atomic(dir);
	if (!cli) {
		fprintf(stderr, "EHT_CLI not set\n");
		return 1;
	}
	snprintf(args, sizeof(args), "synth '%s' --rows 2000", ckpt);
	char err[4096];
	CHECK(run(args, err, sizeof(err)) == 0);
	t_setenv("EHT_SHM_DIR", dir);
	snprintf(args, sizeof(args), "serve '%s' --key eht-test-fifo-%d --tier region --hotset layers.1.engram.embed='%s'",
		 ckpt, (int)getpid(), fifo);
	cli_refuses("serve --hotset", args);
	snprintf(args, sizeof(args), "hash --config '%s' --steps '%s'", fifo, steps);
	cli_refuses("hash --config", args);
	snprintf(args, sizeof(args), "hash --preset v41 --token-map '%s' --steps '%s'", fifo, steps);
	cli_refuses("hash --token-map", args);
	snprintf(args, sizeof(args), "hash --preset v41 --steps '%s'", fifo);
	cli_refuses("hash --steps", args);
	snprintf(args, sizeof(args), "hotset build --workload text:'%s' --rows 10 -o '%s/h.hot'", fifo, dir);
	cli_refuses("hotset build --workload", args);
	/* The workload's optional starts file: a FIFO there too. */
	char wl[600], starts[700];
	snprintf(wl, sizeof(wl), "%s/wl.bin", dir);
	snprintf(starts, sizeof(starts), "%s.starts.json", wl);
	uint32_t toks[64] = {0};
	CHECK(t_write_file(wl, toks, sizeof(toks)) == 0 && mkfifo(starts, 0600) == 0);
	snprintf(args, sizeof(args), "hotset build --workload text:'%s' --rows 10 -o '%s/h.hot'", wl, dir);
	cli_refuses("hotset build (starts file)", args);
	ready_file_link(dir, ckpt);
	t_rmtree(dir);
	return t_done();
}
