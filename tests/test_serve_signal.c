/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_signal.c: SIGTERM (and SIGINT) during `eht serve`'s load stop it within a second,
 * before it serves, leaving nothing in its shm directory. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

/* Within a second; sanitizers slow every step (and TSan's shadow memory the teardown) several-fold. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define STOP_LIMIT_S 3.0
#else
#define STOP_LIMIT_S 1.0
#endif

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int dir_entries(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* Starts the server, signals it after delay_s, and checks how it ended. */
static void stop_during_load(const char *tmp, const char *ckpt, const char *shm, int sig, double delay_s)
{
	char out[700];
	snprintf(out, sizeof(out), "%s/serve-%d.out", tmp, sig);
	pid_t pid = fork();
	if (pid == 0) {
		FILE *f = freopen(out, "w", stdout);
		(void)f;
		char key[64];
		snprintf(key, sizeof(key), "sig-%d", (int)getpid());
		execl(getenv("EHT_CLI"), "eht", "serve", ckpt, "--key", key, "--tier", "region", "--threads", "1",
		      (char *)NULL);
		_exit(127);
	}
	struct timespec ts = {0, (long)(delay_s * 1e9)};
	nanosleep(&ts, NULL);
	double t0 = now();
	kill(pid, sig);
	int st = 0;
	pid_t w = 0;
	while ((w = waitpid(pid, &st, WNOHANG)) == 0 && now() - t0 < 20) {
		struct timespec tick = {0, 10 * 1000 * 1000};
		nanosleep(&tick, NULL);
	}
	double took = now() - t0;
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	fprintf(stderr, "signal %d during the load: exit after %.3f s\n", sig, took);
	CHECK(took < STOP_LIMIT_S);
	/* It stopped during the load: it never announced serving. */
	char line[2048] = "";
	FILE *f = fopen(out, "r");
	int served = 0;
	while (f && fgets(line, sizeof(line), f))
		served |= strstr(line, "serving under key") != NULL;
	if (f)
		fclose(f);
	CHECK(!served);
	CHECK(WIFEXITED(st));
	CHECK(dir_entries(shm) == 0);
}

int main(void)
{
	if (!getenv("EHT_CLI"))
		t_skip("EHT_CLI not set");
	setenv("EHT_NO_CUDA", "1", 1);
	char *tmp = t_tmpdir("serve-signal");
	char ckpt[600], shm[600];
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
	/* A private directory on tmpfs: the regions are real shared memory, and only ours. */
	snprintf(shm, sizeof(shm), "/dev/shm/eht-test-signal-%d", (int)getpid());
	if (mkdir(shm, 0700) != 0)
		snprintf(shm, sizeof(shm), "%s/shm", tmp), mkdir(shm, 0700);
	setenv("EHT_SHM_DIR", shm, 1);
	/* 6 tables x 1M rows x 264 bytes = 1.5 GiB: seconds of loading on one thread. */
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 6, .rows = 1000000, .shards = 1, .seed = 2};
	CHECK_RC(eht_synth_checkpoint(ckpt, &so), 0);
	stop_during_load(tmp, ckpt, shm, SIGTERM, 0.2);
	stop_during_load(tmp, ckpt, shm, SIGINT, 0.5);
	rmdir(shm);
	t_rmtree(tmp);
	return t_done();
}
