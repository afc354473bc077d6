/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve.c: `eht serve` + eht_attach + lookups (CPU), a duplicate key, an absent key, SIGTERM and
 * SIGKILL of the server while a worker is attached (its next call fails, nothing hangs), and nothing
 * left in the shm directory after `eht regions gc`. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static char ckpt[512], shm[512], key[64];

/* Starts `eht serve ckpt --key key`; returns its pid once it serves (its stdout said so). */
static pid_t start_server(const char *k, const char *tier, int *status_fd)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(t_cli(), "eht", "serve", ckpt, "--key", k, "--tier", tier, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	char line[1024];
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "serving under key")) {
			*status_fd = dup(p[0]);
			fclose(f);
			return pid;
		}
	fclose(f);
	int st;
	waitpid(pid, &st, 0);
	return -1;
}


/* Looks 1000 ids up through the client's first table (CPU) and compares with the checkpoint. */
static int lookup_and_check(eht_client *c, eht_ckpt *ck)
{
	eht_table *t = NULL;
	if (eht_client_table(c, 0, &t) != 0)
		return -1;
	struct eht_table_info info = {.size = sizeof(info)};
	if (eht_table_get_info(t, &info) != 0)
		return -1;
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = EHT_LOOKUP_HOST, .flags = EHT_LOOKUP_CPU_ONLY, .device = -1};
	eht_lookup *lk = NULL;
	int rc = eht_lookup_create(t, &lo, &lk);
	if (rc)
		return rc;
	enum { N = 1000 };
	int64_t ids[N];
	static unsigned char out[N * 264];
	uint64_t s = 7, dead = 0;
	for (int i = 0; i < N; i++)
		ids[i] = i % 50 == 0 ? -3 : (int64_t)(t_rand(&s) % info.rows);
	rc = eht_lookup_run(lk, ids, EHT_ID_INT64, 0, N, out, NULL, EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_HOST, &dead);
	if (!rc) {
		char wname[300], sname[300];
		snprintf(wname, sizeof(wname), "%s.weight", info.name);
		snprintf(sname, sizeof(sname), "%s.scale", info.name);
		struct eht_st_tensor_info w = {.size = sizeof(w)}, sc = {.size = sizeof(sc)};
		CHECK_RC(eht_ckpt_find(ck, wname, &w), 0);
		CHECK_RC(eht_ckpt_find(ck, sname, &sc), 0);
		CHECK(dead == N / 50);
		CHECK(info.row_bytes == 264);
		int bad = 0;
		for (int i = 0; w.data && sc.data && i < N; i++) {
			unsigned char want[264] = {0};
			if (ids[i] >= 0) {
				memcpy(want, (const unsigned char *)w.data + ids[i] * 256, 256);
				memcpy(want + 256, (const unsigned char *)sc.data + ids[i] * 8, 8);
			}
			bad += memcmp(want, out + i * 264, 264) != 0;
		}
		CHECK(bad == 0);
	}
	eht_lookup_destroy(lk);
	return rc;
}

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	t_setenv("EHT_NO_CUDA", "1"); /* the CPU path; test_gpu_* cover the GPU */
	char *tmp = t_tmpdir("serve");
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
	snprintf(shm, sizeof(shm), "%s/shm", tmp);
	mkdir(shm, 0700);
	t_setenv("EHT_SHM_DIR", shm);
	snprintf(key, sizeof(key), "test-%d", (int)getpid());
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 2, .rows = 3000, .shards = 2, .seed = 9};
	CHECK_RC(eht_synth_checkpoint(ckpt, &so), 0);
	eht_ckpt *ck = NULL;
	CHECK_RC(eht_ckpt_open(ckpt, 0, &ck), 0);

	/* No server: -ENOENT at once by default (as Python's attach), naming the key; with
	 * EHT_ATTACH_WAIT a short timeout, then -ETIMEDOUT naming it. */
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 300};
	eht_client *c = NULL;
	CHECK_RC(eht_attach("nobody-serves-this", &ao, &c), -ENOENT);
	CHECK(strstr(eht_last_error(), "nobody-serves-this") != NULL);
	ao.flags = EHT_ATTACH_WAIT;
	CHECK_RC(eht_attach("nobody-serves-this", &ao, &c), -ETIMEDOUT);
	CHECK(strstr(eht_last_error(), "nobody-serves-this") != NULL);
	ao.flags = 0x80;
	CHECK_RC(eht_attach("nobody-serves-this", &ao, &c), -EINVAL);
	ao.flags = 0;
	CHECK_RC(eht_attach("bad key!", &ao, &c), -EINVAL);

	/* Serve; two workers attach at once and read the checkpoint's bytes. */
	int sfd = -1, st = 0;
	pid_t srv = start_server(key, "auto", &sfd);
	CHECK(srv > 0);
	if (srv <= 0)
		return t_done();
	ao.timeout_ms = 10000;
	eht_client *c2 = NULL;
	CHECK_RC(eht_attach(key, &ao, &c), 0);
	CHECK_RC(eht_attach(key, &ao, &c2), 0);
	CHECK(eht_client_table_count(c) == 2);
	eht_table *t = NULL;
	CHECK_RC(eht_client_find(c, "layers.14.engram.embed", &t), 0);
	CHECK_RC(eht_client_find(c, "nope", &t), -ENOENT);
	CHECK_RC(lookup_and_check(c, ck), 0);
	CHECK_RC(lookup_and_check(c2, ck), 0);
	CHECK_RC(eht_client_check(c), 0);
	/* The region files are unlinked once ready: nothing to leak while serving. */
	CHECK(t_dir_entries(shm) == 0);

	/* A worker whose descriptors ran out (its open-file limit) gets -EMFILE naming the limit, not
	 * "connection lost" or a protocol error: every slot but the attach socket's is taken. */
	pid_t wk = fork();
	if (wk == 0) {
		struct rlimit rl;
		int bad = getrlimit(RLIMIT_NOFILE, &rl) != 0;
		rl.rlim_cur = 64;
		bad |= setrlimit(RLIMIT_NOFILE, &rl) != 0;
		int last = -1;
		for (int d; (d = dup(0)) >= 0;)
			last = d;
		bad |= last < 0 || close(last) != 0;
		eht_client *w = NULL;
		int rc = eht_attach(key, &ao, &w);
		bad |= rc != -EMFILE || w != NULL || !strstr(eht_last_error(), "ulimit -n");
		if (bad)
			fprintf(stderr, "worker without descriptors: rc %d: %s\n", rc, eht_last_error());
		_exit(bad);
	}
	CHECK(wk > 0 && waitpid(wk, &st, 0) == wk && WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* A second server of the same key refuses to start. */
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "'%s' serve '%s' --key %s >/dev/null 2>&1", getenv("EHT_CLI"), ckpt, key);
	CHECK(system(cmd) != 0);

	/* SIGKILL: the worker's next call fails with -ECONNRESET; no hang, no crash. */
	kill(srv, SIGKILL);
	waitpid(srv, &st, 0);
	struct timespec ts = {0, 50 * 1000 * 1000};
	nanosleep(&ts, NULL);
	CHECK_RC(eht_client_check(c), -ECONNRESET);
	CHECK_RC(lookup_and_check(c2, ck), -ECONNRESET);
	CHECK(strstr(eht_last_error(), "gone") != NULL);
	CHECK_RC(eht_detach(c), 0);
	CHECK_RC(eht_detach(c2), 0);
	close(sfd);
	snprintf(cmd, sizeof(cmd), "'%s' regions gc --dir '%s' >/dev/null", getenv("EHT_CLI"), shm);
	CHECK(system(cmd) == 0);
	CHECK(t_dir_entries(shm) == 0);

	/* SIGTERM: a clean stop (exit 0); an attached worker learns it on its next call. */
	srv = start_server(key, "auto", &sfd);
	CHECK(srv > 0);
	if (srv > 0) {
		CHECK_RC(eht_attach(key, &ao, &c), 0);
		kill(srv, SIGTERM);
		waitpid(srv, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		nanosleep(&ts, NULL);
		CHECK_RC(eht_client_check(c), -ECONNRESET);
		CHECK_RC(eht_detach(c), 0);
		close(sfd);
	}
	CHECK(t_dir_entries(shm) == 0);

	/* The disk tier: the server only opens the files (no rows copied, no cache); each worker reads its
	 * rank's rows from the files. */
	srv = start_server(key, "disk", &sfd);
	CHECK(srv > 0);
	if (srv > 0) {
		CHECK_RC(eht_attach(key, &ao, &c), 0);
		eht_table *dt = NULL;
		struct eht_table_info di = {.size = sizeof(di)};
		CHECK_RC(eht_client_table(c, 0, &dt), 0);
		CHECK_RC(eht_table_get_info(dt, &di), 0);
		CHECK(di.tier == EHT_TIER_DISK && di.host == NULL);
		CHECK_RC(lookup_and_check(c, ck), 0);
		kill(srv, SIGTERM);
		waitpid(srv, &st, 0);
		CHECK_RC(eht_detach(c), 0);
		close(sfd);
	}
	eht_ckpt_close(ck);
	t_rmtree(tmp);
	return t_done();
}
