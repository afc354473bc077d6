/* SPDX-License-Identifier: Apache-2.0 */
/* test_st_fifo.c: a FIFO where a checkpoint file, a folder member, the index or an indexed shard
 * belongs is refused at once (-EINVAL naming it), never a blocking open; `eht serve` on one exits
 * with an error. An alarm turns a hang into a failure. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "test_st_fifo: an open blocked on a FIFO (alarm)\n";
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(1);
	_exit(1);
}

static void expect_refused(const char *ckpt, const char *fifo)
{
	eht_ckpt *ck = NULL;
	CHECK_RC(eht_ckpt_open(ckpt, 0, &ck), -EINVAL);
	CHECK(strstr(eht_last_error(), fifo) != NULL || strstr(eht_last_error(), "regular") != NULL);
	eht_ckpt_close(ck);
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(30);
	char *tmp = t_tmpdir("st-fifo");
	char dir[600], p[700], q[700];
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 2, .rows = 64, .shards = 2, .seed = 1};

	/* The checkpoint path itself. */
	snprintf(p, sizeof(p), "%s/fifo.safetensors", tmp);
	CHECK(mkfifo(p, 0600) == 0);
	expect_refused(p, "fifo.safetensors");

	/* An indexed shard. */
	snprintf(dir, sizeof(dir), "%s/indexed", tmp);
	CHECK_RC(eht_synth_checkpoint(dir, &so), 0);
	snprintf(p, sizeof(p), "%s/model-00002-of-00002.safetensors", dir);
	CHECK(unlink(p) == 0 && mkfifo(p, 0600) == 0);
	expect_refused(dir, "model-00002-of-00002");

	/* A folder member (no index). */
	snprintf(q, sizeof(q), "%s/model.safetensors.index.json", dir);
	CHECK(unlink(q) == 0);
	expect_refused(dir, "model-00002-of-00002");

	/* The index itself. */
	snprintf(dir, sizeof(dir), "%s/index", tmp);
	CHECK_RC(eht_synth_checkpoint(dir, &so), 0);
	snprintf(q, sizeof(q), "%s/model.safetensors.index.json", dir);
	CHECK(unlink(q) == 0 && mkfifo(q, 0600) == 0);
	expect_refused(dir, "index.json");

	/* A served disk tier whose file became a FIFO: the worker's attach fails, it does not hang. */
	snprintf(dir, sizeof(dir), "%s/disk", tmp);
	so.shards = 1;
	CHECK_RC(eht_synth_checkpoint(dir, &so), 0);
	char key[64];
	snprintf(key, sizeof(key), "fifo-disk-%d", (int)getpid());
	struct eht_serve_opts o = {.size = sizeof(o), .key = key, .tier = EHT_TIER_DISK};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(dir, &o, &s), 0);
	snprintf(p, sizeof(p), "%s/model.safetensors", dir);
	CHECK(unlink(p) == 0 && mkfifo(p, 0600) == 0);
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 2000};
	eht_client *c = NULL;
	CHECK(eht_attach(key, &ao, &c) != 0);
	CHECK(strstr(eht_last_error(), "model.safetensors") != NULL);
	eht_detach(c);
	eht_serve_stop(s);

	/* `eht serve` on a FIFO fails (and so returns) instead of hanging. */
	if (getenv("EHT_CLI")) {
		char cmd[2000];
		snprintf(cmd, sizeof(cmd), "EHT_SHM_DIR='%s' '%s' serve '%s/fifo.safetensors' --key fifo-%d >/dev/null 2>&1",
			 tmp, getenv("EHT_CLI"), tmp, (int)getpid());
		CHECK(system(cmd) != 0);
	}
	t_rmtree(tmp);
	return t_done();
}
