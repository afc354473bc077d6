/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_region_fork.c: a pinned region's handle in a forked child. The child's close unmaps its
 * copy only (never unpins: the pin is the parent's, and the driver does not survive a fork; never
 * unlinks) and its eht_region_unlink_if_same is refused; the parent's pin still serves GPU reads that
 * match the CPU bytes, and its own close unpins cleanly. Skips (77) without a GPU. CUDA is only ever
 * initialized in a forked child of the test, never in the parent. */
#include <string.h>
#include <sys/stat.h>

#include "gpu/dev.h"
#include "region_testutil.h"

#define BYTES ((8u << 20) + 100)

static const char *dir;

static int gpu_matches(eht_region *r)
{
	unsigned char *buf = malloc(BYTES);
	int ok = buf && eht_dev_d2h(buf, eht_region_device_ptr(r), BYTES) == 0 &&
		 memcmp(buf, eht_region_data(r), BYTES) == 0;
	free(buf);
	return ok;
}

/* The process that creates, pins, forks. Exit status: its checks. */
static void pinner(void)
{
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_KEEP, .dir = dir};
	eht_region *r = NULL;
	CHECK_RC(eht_region_open("forkpin", BYTES, &o, &r), 0);
	if (!r)
		_exit(t_done());
	r_fill(eht_region_data(r), BYTES, 0xf0f0);
	CHECK_RC(eht_region_mark_ready(r), 0);
	CHECK_RC(eht_region_pin(r, 0), 0);
	CHECK(eht_region_is_pinned(r) && gpu_matches(r));
	pid_t c = fork();
	if (c == 0) {
		int bad = eht_region_unlink_if_same(r) != -EPERM;
		bad |= eht_region_close(&r) != 0; /* no driver call here: it would fail after the fork */
		_exit(bad);
	}
	CHECK(r_wait(c) == 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/eht.forkpin", dir);
	struct stat st;
	CHECK(stat(path, &st) == 0);
	CHECK(eht_region_is_pinned(r) && gpu_matches(r)); /* the parent's pin is whole */
	CHECK_RC(eht_region_unlink_if_same(r), 0);
	CHECK_RC(eht_region_close(&r), 0); /* unpins: the pin was never dropped by the child */
	_exit(t_done());
}

int main(void)
{
	if (!t_have_gpu_forked())
		t_skip("no CUDA GPU");
	dir = r_tmpdir("gpu-region-fork");
	pid_t p = fork();
	if (p == 0)
		pinner();
	CHECK(r_wait(p) == 0);
	CHECK(r_count_files(dir) == 0);
	t_rmtree(dir);
	return t_done();
}
