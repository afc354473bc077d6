/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_enospc.c: on a small tmpfs (mounted in a private mount namespace; root only, else skip)
 * a region that cannot fit is -ENOSPC with a useful message, both from the capacity check and, with
 * the check skipped, from allocation at creation (never a SIGBUS later); nothing is left behind.
 * A creator SIGKILLed before ready leaves a region of more than half the directory: the restart (a
 * fresh process) reclaims it before its capacity check, so the same size fits again. */
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "region_testutil.h"

int main(void)
{
	if (geteuid() != 0)
		t_skip("needs root to mount a small tmpfs");
	if (unshare(CLONE_NEWNS) != 0)
		t_skip("unshare(CLONE_NEWNS) not permitted");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		t_skip("cannot make mounts private");
	char dir[] = "/tmp/eht-test-enospc-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	if (mount("tmpfs", dir, "tmpfs", 0, "size=8m,mode=0700") != 0) {
		rmdir(dir);
		t_skip("cannot mount tmpfs");
	}
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_KEEP, .dir = dir};
	eht_region *r = NULL;

	/* Killed while populating (before ready): 5 of the 8 MiB stay in the directory. First, while
	 * this process has made no region there (forks inherit its once-per-directory reclaim). */
	pid_t p = fork();
	if (p == 0) {
		eht_region *k = NULL;
		struct eht_region_opts ko = o;
		ko.flags = EHT_REGION_UNLINK_WHEN_MAPPED;
		ko.expected_peers = 1;
		if (eht_region_open("killed", 5u << 20, &ko, &k) == 0)
			raise(SIGKILL);
		_exit(3);
	}
	int ws = 0;
	CHECK(waitpid(p, &ws, 0) == p && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	CHECK(r_count_files(dir) == 1);
	/* The restart: a fresh process asks for the same size under a new name. */
	p = fork();
	if (p == 0) {
		eht_region *k = NULL;
		int rc = eht_region_open("restarted", 5u << 20, &o, &k);
		if (rc)
			fprintf(stderr, "restart: %s\n", eht_last_error());
		_exit(rc == 0 && eht_region_mark_ready(k) == 0 && eht_region_close(&k) == 0 ? 0 : 1);
	}
	CHECK(waitpid(p, &ws, 0) == p && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	CHECK(r_count_files(dir) == 1); /* the restarted one; the leftover is gone */
	CHECK_RC(eht_region_unlink("restarted", dir), 0);
	CHECK(r_count_files(dir) == 0);

	/* Capacity first: 16 MiB cannot fit 8 MiB. */
	CHECK_RC(eht_region_open("big", 16u << 20, &o, &r), -ENOSPC);
	const char *msg = eht_last_error();
	CHECK(strstr(msg, "16.0 MiB") != NULL);  /* the size */
	CHECK(strstr(msg, "8.0 MiB") != NULL);   /* the space free */
	CHECK(strstr(msg, "--shm-size") != NULL && strstr(msg, "--ipc=host") != NULL); /* the fix */
	CHECK(strstr(msg, "`eht regions gc`") != NULL);
	size_t ml = strlen(msg);
	CHECK(ml > 20 && !strcmp(msg + ml - strlen("(EHT_SHM_DIR)"), "(EHT_SHM_DIR)")); /* whole, not cut */
	CHECK(r == NULL && r_count_files(dir) == 0);


	/* A region that fits, then one that the free-space check is told to let through: allocation
	 * fails at creation with -ENOSPC, and the half-made file is removed. */
	eht_region *a = NULL;
	CHECK_RC(eht_region_open("fits", 5u << 20, &o, &a), 0);
	CHECK_RC(eht_region_mark_ready(a), 0);
	CHECK_RC(eht_region_open("second", 5u << 20, &o, &r), -ENOSPC);
	t_setenv("EHT_TEST_REGION_SKIP_CAPACITY_CHECK", "1");
	CHECK_RC(eht_region_open("second", 5u << 20, &o, &r), -ENOSPC);
	CHECK(strstr(eht_last_error(), "second") != NULL);
	t_setenv("EHT_TEST_REGION_SKIP_CAPACITY_CHECK", NULL);
	CHECK(r == NULL);
	CHECK(r_count_files(dir) == 1);
	/* The existing region is intact and readable to the last byte. */
	if (a) {
		volatile char *p = eht_region_data(a);
		p[(5u << 20) - 1] = 1;
		CHECK(p[(5u << 20) - 1] == 1);
	}
	CHECK_RC(eht_region_close(&a), 0);
	CHECK_RC(eht_region_unlink("fits", dir), 0);
	CHECK(r_count_files(dir) == 0);
	/* With the space back, the second one fits. */
	CHECK_RC(eht_region_open("second", 5u << 20, &o, &r), 0);
	CHECK_RC(eht_region_close(&r), 0); /* creator closing before ready removes it */
	CHECK(r_count_files(dir) == 0);

	if (umount(dir) != 0)
		perror("umount");
	rmdir(dir);
	return t_done();
}
