/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_trust.c: workers trust only their own user's server (an impostor of another uid, when
 * run as root), never map past a received descriptor's end, and get read-only tables they cannot
 * write or mprotect; `eht serve` names the uid holding a taken key; EHT_SERVE_ALLOW_GID's group is
 * never trusted as a server. */
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/sock_io.h"
#include "serve/serve_proto.h"
#include "testutil.h"
#include "util/clock.h"

/* A fake server under key: as uid/gid when uid != 0; its one region table of 8 KiB describes
 * file_bytes (a lie when larger). Returns its pid once it listens. */
static pid_t fake_server(const char *key, uid_t uid, gid_t gid, uint64_t file_bytes)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid != 0) {
		char b = 0;
		close(p[1]);
		if (pid < 0 || read(p[0], &b, 1) != 1 || b != 'R') {
			close(p[0]);
			return -1;
		}
		close(p[0]);
		return pid;
	}
	signal(SIGPIPE, SIG_IGN);
	struct sockaddr_un a;
	socklen_t alen;
	if (serve_addr(key, &a, &alen) != 0) /* the name of the uid running the test */
		_exit(2);
	int mfd = memfd_create("fake", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, 8192) != 0)
		_exit(2);
	if (uid != 0 && (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0))
		_exit(3);
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, alen) != 0 || listen(lfd, 8) != 0)
		_exit(4);
	if (write(p[1], "R", 1) != 1)
		_exit(5);
	char json[512];
	int n = snprintf(json, sizeof(json),
			 "{\"key\":\"%s\",\"tables\":[{\"name\":\"fake\",\"tier\":\"region\",\"rows\":%llu,"
			 "\"row_bytes\":8,\"fds\":[0,1],\"data_offset\":4096,\"file_bytes\":%llu,\"numa\":-1,"
			 "\"page_size\":4096}]}",
			 key, (unsigned long long)((file_bytes - 4096) / 8), (unsigned long long)file_bytes);
	for (;;) {
		int c = accept(lfd, NULL, NULL);
		if (c < 0)
			continue;
		struct serve_hello h = {.magic = SERVE_MAGIC, .version = SERVE_VERSION, .json_len = (uint32_t)n, .nfds = 1};
		int64_t dl = eht_now_ms() + 5000;
		char byte = 'F';
		if (eht_sock_send_all(c, &h, sizeof(h), NULL, 0, dl) == 0 && eht_sock_send_all(c, json, (size_t)n, NULL, 0, dl) == 0)
			eht_sock_send_all(c, &byte, 1, &mfd, 1, dl);
		/* keep c open: the worker reads its end's closing as the server's death */
	}
}

/* Attaches to a real server (region tier) and tries to write its rows: a forked child's store must
 * die with SIGSEGV, an mprotect to writable must fail. */
static void read_only_rows(const char *tmp)
{
	char ckpt[600];
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 1, .rows = 2000, .shards = 1, .seed = 3};
	CHECK_RC(eht_synth_checkpoint(ckpt, &so), 0);
	char key[64];
	snprintf(key, sizeof(key), "trust-ro-%d", (int)getpid());
	struct eht_serve_opts o = {.size = sizeof(o), .key = key, .tier = EHT_TIER_REGION, .threads = 1};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &o, &s), 0);
	if (!s)
		return;
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 5000};
	eht_client *c = NULL;
	CHECK_RC(eht_attach(key, &ao, &c), 0);
	eht_table *t = NULL;
	struct eht_table_info info = {.size = sizeof(info)};
	if (c && eht_client_table(c, 0, &t) == 0 && eht_table_get_info(t, &info) == 0 && info.host) {
		volatile unsigned char *row = (unsigned char *)info.host;
		unsigned char before = row[0];
		long pg = sysconf(_SC_PAGESIZE);
		void *page = (void *)((uintptr_t)info.host & ~(uintptr_t)(pg - 1));
		CHECK(mprotect(page, (size_t)pg, PROT_READ | PROT_WRITE) != 0);
		pid_t pid = fork();
		if (pid == 0) {
			signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn the fault into exit(1) */
			signal(SIGBUS, SIG_DFL);
			row[0] = (unsigned char)(before + 1); /* must fault */
			_exit(0);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
		CHECK(row[0] == before);
	} else {
		CHECK(!"no host rows to test");
	}
	CHECK_RC(eht_detach(c), 0);
	CHECK_RC(eht_serve_stop(s), 0);
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	char *tmp = t_tmpdir("serve-trust");
	char shm[600];
	snprintf(shm, sizeof(shm), "%s/shm", tmp);
	mkdir(shm, 0700);
	t_setenv("EHT_SHM_DIR", shm);
	char key[64];
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 3000};
	eht_client *c = NULL;

	/* A server of our own uid that lies about file_bytes: refused, no SIGBUS. */
	snprintf(key, sizeof(key), "trust-lie-%d", (int)getpid());
	pid_t f = fake_server(key, 0, 0, 1 << 20);
	CHECK(f > 0);
	CHECK_RC(eht_attach(key, &ao, &c), -EPROTO);
	CHECK(strstr(eht_last_error(), "fake") != NULL);
	t_kill_child(f);
	/* The same fake telling the truth attaches (the test's fake server is sound). */
	f = fake_server(key, 0, 0, 8192);
	CHECK_RC(eht_attach(key, &ao, &c), 0);
	CHECK_RC(eht_detach(c), 0);
	c = NULL;
	t_kill_child(f);

	read_only_rows(tmp);

	if (geteuid() == 0) {
		/* Another user squats root's name: workers refuse it, `eht serve` names its uid. */
		snprintf(key, sizeof(key), "trust-imp-%d", (int)getpid());
		f = fake_server(key, 65534, 65534, 8192);
		CHECK(f > 0);
		CHECK_RC(eht_attach(key, &ao, &c), -EPERM);
		CHECK(strstr(eht_last_error(), "uid 65534") != NULL && strstr(eht_last_error(), key) != NULL);
		char ckpt[600];
		snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
		struct eht_serve_opts o = {.size = sizeof(o), .key = key, .tier = EHT_TIER_DISK};
		eht_server *s = NULL;
		CHECK_RC(eht_serve_start(ckpt, &o, &s), -EADDRINUSE);
		CHECK(strstr(eht_last_error(), "uid 65534") != NULL);
		t_kill_child(f);
		/* ... even of the group EHT_SERVE_ALLOW_GID names: that lets the group's workers reach a
		 * server (test_serve_net), never makes a worker trust whoever of the group binds first. */
		f = fake_server(key, 65534, 4242, 8192);
		t_setenv("EHT_SERVE_ALLOW_GID", "4242");
		CHECK_RC(eht_attach(key, &ao, &c), -EPERM);
		CHECK(strstr(eht_last_error(), "uid 65534") != NULL);
		t_setenv("EHT_SERVE_ALLOW_GID", NULL);
		t_kill_child(f);
	} else {
		fprintf(stderr, "test_serve_trust: not root; the impostor-of-another-uid part is skipped\n");
	}
	t_rmtree(tmp);
	return t_done();
}
