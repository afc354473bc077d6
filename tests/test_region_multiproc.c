/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_multiproc.c: many processes create-or-open one name at once: exactly one creates, all
 * read identical bytes, and with unlink-when-mapped nothing is left in the directory. */
#include <stdint.h>
#include <string.h>

#include "region_testutil.h"

enum { NPROC = 8 };
#define BYTES ((uint64_t)(24u << 20) + 1234)

struct result {
	int rc;
	int creator;
	uint64_t hash;
};

static void child(const char *dir, int go_fd, int out_fd, int round)
{
	char c;
	/* Everyone starts together: the parent closes the write end of the pipe. */
	if (read(go_fd, &c, 1) < 0)
		_exit(3);
	struct eht_region_opts o = {.size = sizeof(o), .dir = dir, .timeout_s = 30, .expected_peers = NPROC,
				    .populate_threads = 2, .rows = BYTES, .row_bytes = 1};
	o.flags = round == 0 ? EHT_REGION_UNLINK_WHEN_MAPPED : EHT_REGION_KEEP;
	struct result res = {0};
	eht_region *r = NULL;
	res.rc = eht_region_open("shared-table", BYTES, &o, &r);
	if (res.rc == 0) {
		res.creator = eht_region_is_creator(r);
		if (res.creator) {
			/* A slow fill: openers must wait for ready, not read half-written bytes. */
			usleep(100 * 1000);
			r_fill(eht_region_data(r), BYTES, 0xabcdef);
			res.rc = eht_region_mark_ready(r);
		}
		res.hash = r_hash(eht_region_data(r), BYTES);
		int rc = eht_region_close(&r);
		if (!res.rc)
			res.rc = rc;
	} else {
		fprintf(stderr, "child %d: %s\n", (int)getpid(), eht_last_error());
	}
	if (write(out_fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(4);
	_exit(0);
}

int main(void)
{
	const char *dir = r_tmpdir("region-mp");
	char *expect = malloc(BYTES);
	if (!expect)
		return 1;
	r_fill(expect, BYTES, 0xabcdef);
	uint64_t want = r_hash(expect, BYTES);
	free(expect);
	for (int round = 0; round < 2; round++) {
		int go[2], out[2];
		if (pipe(go) || pipe(out))
			return 1;
		pid_t pids[NPROC];
		for (int i = 0; i < NPROC; i++) {
			pids[i] = fork();
			if (pids[i] == 0) {
				close(go[1]);
				close(out[0]);
				child(dir, go[0], out[1], round);
			}
		}
		close(go[0]);
		close(out[1]);
		close(go[1]); /* go */
		int creators = 0, ok = 0;
		struct result res;
		while (read(out[0], &res, sizeof(res)) == (ssize_t)sizeof(res)) {
			CHECK_RC(res.rc, 0);
			creators += res.creator;
			ok += res.rc == 0 && res.hash == want;
		}
		close(out[0]);
		for (int i = 0; i < NPROC; i++)
			CHECK(r_wait(pids[i]) == 0);
		CHECK(creators == 1);
		CHECK(ok == NPROC);
		if (round == 0) {
			/* Every expected peer mapped it: the last one unlinked it. */
			CHECK(r_count_files(dir) == 0);
		} else {
			/* Kept: still there, ready and idle; reopening in this process sees the same bytes. */
			CHECK(r_count_files(dir) == 1);
			struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_OPEN_ONLY, .dir = dir};
			eht_region *r = NULL;
			CHECK_RC(eht_region_open("shared-table", BYTES, &o, &r), 0);
			CHECK(r && r_hash(eht_region_data(r), BYTES) == want);
			CHECK_RC(eht_region_close(&r), 0);
			CHECK_RC(eht_region_unlink("shared-table", dir), 0);
			CHECK(r_count_files(dir) == 0);
		}
	}
	t_rmtree(dir);
	return t_done();
}
