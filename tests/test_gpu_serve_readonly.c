/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_serve_readonly.c: a worker's served tables are read-only for its CPU: a store into an
 * attached host-NUMA table (and a pinned region) faults instead of changing every worker's rows.
 * Skips without a GPU; where the driver keeps an imported host-NUMA mapping writable, says so and
 * skips that part (measured, not assumed). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* 1: a forked child's store into p faulted; 0: it landed (and p changed); -1: error. */
static int store_faults(volatile unsigned char *p)
{
	unsigned char before = p[0];
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn the fault into exit(1) */
		signal(SIGBUS, SIG_DFL);
		p[0] = (unsigned char)(before + 1);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGBUS))
		return p[0] == before ? 1 : -1;
	return 0;
}

static int try_tier(const char *ckpt, int tier, const char *key)
{
	struct eht_serve_opts o = {.size = sizeof(o), .key = key, .tier = tier, .device = 0, .threads = 2};
	eht_server *s = NULL;
	if (eht_serve_start(ckpt, &o, &s) != 0) {
		fprintf(stderr, "tier %s not available here: %s\n", eht_tier_name(tier), eht_last_error());
		return 77;
	}
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = 0, .timeout_ms = 10000};
	eht_client *c = NULL;
	int res = 1;
	if (eht_attach(key, &ao, &c) == 0) {
		eht_table *t = NULL;
		struct eht_table_info info = {.size = sizeof(info)};
		if (eht_client_table(c, 0, &t) == 0 && eht_table_get_info(t, &info) == 0 && info.host) {
			int f = store_faults((volatile unsigned char *)info.host);
			fprintf(stderr, "tier %s: a worker's CPU store %s\n", eht_tier_name(info.tier),
				f == 1 ? "faults (read-only)" : f == 0 ? "LANDS (writable)" : "errored");
			res = f == 1 ? 0 : (f == 0 && info.tier == EHT_TIER_HOST_NUMA ? 77 : 1);
		}
		eht_detach(c);
	}
	eht_serve_stop(s);
	return res;
}

int main(void)
{
	if (!t_have_gpu())
		t_skip("no GPU");
	char *tmp = t_tmpdir("gpu-serve-ro");
	char ckpt[600], shm[600], key[64];
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
	snprintf(shm, sizeof(shm), "%s/shm", tmp);
	mkdir(shm, 0700);
	t_setenv("EHT_SHM_DIR", shm);
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 1, .rows = 4096, .shards = 1, .seed = 5};
	CHECK_RC(eht_synth_checkpoint(ckpt, &so), 0);
	snprintf(key, sizeof(key), "gpu-ro-%d", (int)getpid());
	int pinned = try_tier(ckpt, EHT_TIER_REGION_PINNED, key);
	CHECK(pinned == 0 || pinned == 77);
	int hn = try_tier(ckpt, EHT_TIER_HOST_NUMA, key);
	CHECK(hn != 1);
	t_rmtree(tmp);
	if (!t_failures && hn == 77 && pinned == 77)
		t_skip("neither tier gave a read-only mapping to test");
	return t_done();
}
