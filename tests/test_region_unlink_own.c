/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_unlink_own.c: only the creating process removes a region's name, and only while the
 * name is still its file (eht_region_unlink_if_same); a forked child's close or removal leaves the
 * name (ready or half-built) to its parent; an opener cannot remove it; a memfd has no name. */
#include <string.h>
#include <sys/stat.h>

#include "region_testutil.h"

static const char *dir;

static struct eht_region_opts opts(uint32_t flags)
{
	struct eht_region_opts o = {.size = sizeof(o), .flags = flags, .dir = dir, .timeout_s = 10};
	return o;
}

static int exists(const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/eht.%s", dir, name);
	struct stat st;
	return stat(path, &st) == 0;
}

/* A forked child of the creator: its removal is refused, its close leaves the name. */
static void forked_child(bool ready)
{
	struct eht_region_opts o = opts(EHT_REGION_KEEP);
	eht_region *c = NULL;
	CHECK_RC(eht_region_open("forked", 8192, &o, &c), 0);
	if (!c)
		return;
	if (ready)
		CHECK_RC(eht_region_mark_ready(c), 0);
	pid_t pid = fork();
	if (pid == 0) {
		int bad = 0;
		if (eht_region_unlink_if_same(c) != -EPERM || !strstr(eht_last_error(), "forked child"))
			bad = 1;
		if (eht_region_close(&c) != 0)
			bad = 1;
		_exit(bad);
	}
	CHECK(r_wait(pid) == 0);
	CHECK(exists("forked"));
	if (!ready) {
		/* The parent's own close of its half-built region still removes it. */
		CHECK_RC(eht_region_close(&c), 0);
		CHECK(!exists("forked"));
		return;
	}
	CHECK_RC(eht_region_unlink_if_same(c), 0);
	CHECK(!exists("forked"));
	CHECK_RC(eht_region_unlink_if_same(c), -ESTALE); /* gone already: nothing to do */
	CHECK_RC(eht_region_close(&c), 0);
}

/* The name removed and made again by another creator: the old creator's removal leaves it. */
static void remade(void)
{
	struct eht_region_opts o = opts(EHT_REGION_KEEP);
	eht_region *old = NULL, *now = NULL, *opener = NULL;
	CHECK_RC(eht_region_open("remade", 8192, &o, &old), 0);
	CHECK_RC(eht_region_mark_ready(old), 0);
	CHECK_RC(eht_region_open("remade", 8192, &o, &opener), 0);
	CHECK(opener && !eht_region_is_creator(opener));
	CHECK_RC(eht_region_unlink_if_same(opener), -EPERM);
	CHECK(strstr(eht_last_error(), "opened it") != NULL);
	CHECK_RC(eht_region_close(&opener), 0);
	CHECK_RC(eht_region_unlink("remade", dir), 0);
	CHECK_RC(eht_region_open("remade", 8192, &o, &now), 0);
	CHECK(now && eht_region_is_creator(now));
	CHECK_RC(eht_region_mark_ready(now), 0);
	CHECK_RC(eht_region_unlink_if_same(old), -ESTALE);
	CHECK(strstr(eht_last_error(), "names another file") != NULL);
	CHECK(exists("remade"));
	CHECK_RC(eht_region_unlink_if_same(now), 0);
	CHECK(!exists("remade"));
	CHECK_RC(eht_region_close(&old), 0);
	CHECK_RC(eht_region_close(&now), 0);
	CHECK_RC(eht_region_unlink_if_same(NULL), -EINVAL);
}

int main(void)
{
	dir = r_tmpdir("unlinkown");
	forked_child(true);
	forked_child(false);
	remade();
	CHECK(r_count_files(dir) == 0);
	rmdir(dir);
	return t_done();
}
