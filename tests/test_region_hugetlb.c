/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_hugetlb.c: a region directory on hugetlbfs (mounted in a private mount namespace; root
 * only, else skip): with free 2 MiB pages the data is huge-page aligned and sizes round up; without
 * them creation is -ENOSPC naming the huge page pool. */
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "os/fsinfo.h"
#include "region_testutil.h"

int main(void)
{
	if (geteuid() != 0)
		t_skip("needs root to mount hugetlbfs");
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		t_skip("no private mount namespace");
	char dir[] = "/tmp/eht-test-hugetlb-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	if (mount("none", dir, "hugetlbfs", 0, "pagesize=2M,mode=0700") != 0) {
		rmdir(dir);
		t_skip("cannot mount hugetlbfs");
	}
	struct eht_fs_info fi;
	CHECK_RC(eht_fs_info(dir, &fi), 0);
	CHECK(fi.hugetlbfs && !fi.tmpfs && fi.page_size == (2u << 20));
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_UNLINK_WHEN_MAPPED, .dir = dir,
				    .expected_peers = 2};
	eht_region *c = NULL, *p = NULL;
	const uint64_t bytes = (3u << 20) + 5;
	uint64_t free_pages = eht_hugetlb_free(2u << 20, -1) / (2u << 20);
	if (free_pages < 4) {
		CHECK_RC(eht_region_open("huge", bytes, &o, &c), -ENOSPC);
		CHECK(strstr(eht_last_error(), "huge pages") != NULL);
		fprintf(stderr, "only %llu free 2 MiB pages: checked the -ENOSPC path\n", (unsigned long long)free_pages);
	} else {
		CHECK_RC(eht_region_open("huge", bytes, &o, &c), 0);
		if (c) {
			CHECK(eht_region_page_size(c) == (2u << 20));
			CHECK(((uintptr_t)eht_region_data(c) % (2u << 20)) == 0);
			r_fill(eht_region_data(c), bytes, 3);
			CHECK_RC(eht_region_mark_ready(c), 0);
			struct stat st;
			char path[256];
			snprintf(path, sizeof(path), "%s/eht.huge", dir);
			CHECK(stat(path, &st) == 0 && st.st_size == (6 << 20)); /* header page + 2 data pages */
			CHECK_RC(eht_region_open("huge", bytes, &o, &p), 0);
			CHECK(p && r_hash(eht_region_data(p), bytes) == r_hash(eht_region_data(c), bytes));
		}
		CHECK_RC(eht_region_close(&p), 0);
		CHECK_RC(eht_region_close(&c), 0);
	}
	CHECK(r_count_files(dir) == 0);
	if (umount(dir) != 0)
		perror("umount");
	rmdir(dir);
	return t_done();
}
