/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_flood.c: a worker that connects and never reads does not stall the others: with 2,000
 * tables the hello is larger than a socket buffer, yet a second worker gets it at once, and the
 * server stops promptly with the stalled one still connected. Also: a weight + scale pair of
 * non-Engram dtypes is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "os/sock_io.h"
#include "serve/serve_proto.h"
#include "testutil.h"
#include "util/clock.h"

#define TABLES 2000
#define ROWS 4

static int raw_connect(const char *key)
{
	struct sockaddr_un a;
	socklen_t alen;
	if (serve_addr(key, &a, &alen) != 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, alen) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	/* The server holds two descriptors a table: a user's default limit (1,024) is too few. */
	const rlim_t want = 2 * TABLES + 256;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want) {
			fprintf(stderr, "SKIP: %d tables need %llu open files; the hard limit is lower\n", TABLES,
				(unsigned long long)want);
			return 77;
		}
	}
	char *tmp = t_tmpdir("serve-flood");
	char file[600];
	snprintf(file, sizeof(file), "%s/many.safetensors", tmp);
	/* 2,000 tiny Engram tables: weight e4m3 [4, 256] + scale e8m0 [4, 8]. */
	static unsigned char w[ROWS * 256], sc[ROWS * 8];
	memset(sc, 127, sizeof(sc));
	static const uint64_t wshape[2] = {ROWS, 256}, sshape[2] = {ROWS, 8};
	struct eht_st_write_tensor *t = calloc(2 * TABLES, sizeof(*t));
	char (*names)[64] = calloc(2 * TABLES, 64);
	CHECK(t && names);
	if (!t || !names) {
		free(t);
		free(names);
		return t_done();
	}
	for (int i = 0; i < TABLES; i++) {
		snprintf(names[2 * i], 64, "model.layers.%d.engram.embedding.weight", i);
		snprintf(names[2 * i + 1], 64, "model.layers.%d.engram.embedding.scale", i);
		t[2 * i] = (struct eht_st_write_tensor){names[2 * i], EHT_DTYPE_F8_E4M3, 2, wshape, w, NULL, NULL};
		t[2 * i + 1] = (struct eht_st_write_tensor){names[2 * i + 1], EHT_DTYPE_F8_E8M0, 2, sshape, sc, NULL, NULL};
	}
	CHECK_RC(eht_st_write(file, t, 2 * TABLES, NULL, 0), 0);
	free(t);
	free(names);

	char key[64];
	snprintf(key, sizeof(key), "flood-%d", (int)getpid());
	struct eht_serve_opts o = {.size = sizeof(o), .key = key, .tier = EHT_TIER_DISK};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(file, &o, &s), 0);
	if (!s)
		return t_done();
	CHECK(eht_serve_table_count(s) == TABLES);

	/* A: connects, never reads. */
	int a = raw_connect(key);
	CHECK(a >= 0);
	struct timespec ts = {0, 300 * 1000 * 1000};
	nanosleep(&ts, NULL);

	/* B: gets the whole hello and table list within 5 s (the server's send deadline is 30 s). */
	int b = raw_connect(key);
	CHECK(b >= 0);
	struct serve_hello h = {0};
	int64_t t0 = eht_now_ms(), deadline = t0 + 5000;
	CHECK_RC(eht_sock_recv_all(b, &h, sizeof(h), NULL, 0, NULL, deadline), 0);
	CHECK(h.magic == SERVE_MAGIC && h.status == 0);
	CHECK(h.json_len > 256 * 1024); /* larger than a socket buffer: A's send really is stuck */
	char *json = malloc((size_t)h.json_len + 1);
	CHECK(json != NULL);
	if (json) {
		CHECK_RC(eht_sock_recv_all(b, json, h.json_len, NULL, 0, NULL, deadline), 0);
		json[h.json_len] = '\0';
		CHECK(strstr(json, "model.layers.1999.engram.embedding") != NULL);
		free(json);
	}
	fprintf(stderr, "second worker got %u bytes of tables in %lld ms while the first never read\n", h.json_len,
		(long long)(eht_now_ms() - t0));

	/* Stopping does not wait for A's 30 s deadline. */
	t0 = eht_now_ms();
	CHECK_RC(eht_serve_stop(s), 0);
	CHECK(eht_now_ms() - t0 < 3000);
	close(a);
	close(b);

	/* A NAME.weight + NAME.scale pair of other dtypes is not served as Engram rows. */
	static unsigned char bf[ROWS * 512];
	static const uint64_t bshape[2] = {ROWS, 256};
	struct eht_st_write_tensor bad[2] = {
		{"model.layers.3.engram.embedding.weight", EHT_DTYPE_BF16, 2, bshape, bf, NULL, NULL},
		{"model.layers.3.engram.embedding.scale", EHT_DTYPE_BF16, 2, bshape, bf, NULL, NULL},
	};
	snprintf(file, sizeof(file), "%s/bf16.safetensors", tmp);
	CHECK_RC(eht_st_write(file, bad, 2, NULL, 0), 0);
	CHECK_RC(eht_serve_start(file, &o, &s), -EINVAL);
	CHECK(strstr(eht_last_error(), "not an Engram table") != NULL && strstr(eht_last_error(), "BF16") != NULL);
	t_rmtree(tmp);
	return t_done();
}
