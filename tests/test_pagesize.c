/* SPDX-License-Identifier: Apache-2.0 */
/* test_pagesize.c: the CPU page size smaps reports for a range (os/pagesize.c, behind
 * eht_table_page_size): 4 KiB for touched memory without huge pages, the mapping's own size for a
 * fresh one, THP counted once faulted in, hugetlb where a pool exists, -ENOENT outside any mapping. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os/pagesize.h"
#include "testutil.h"

#define MB (1ull << 20)

int main(void)
{
	struct eht_page_stat st;
	/* Anonymous memory without THP, touched: base pages. */
	size_t len = 8 * MB;
	char *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(a != MAP_FAILED);
	madvise(a, len, MADV_NOHUGEPAGE);
	memset(a, 1, len);
	CHECK_RC(eht_page_stat(a, len, &st), 0);
	CHECK(st.mapped == len && st.resident == len && st.huge == 0 && !st.hugetlb);
	CHECK(eht_page_stat_size(&st) == (uint64_t)sysconf(_SC_PAGESIZE));
	/* Half the range: half the bytes. */
	CHECK_RC(eht_page_stat(a + len / 2, len / 2, &st), 0);
	CHECK(st.mapped == len / 2);
	munmap(a, len);
	/* Outside every mapping. */
	CHECK_RC(eht_page_stat(a, len, &st), -ENOENT);

	/* A fresh shared mapping not touched yet: the mapping's page size (0 only if THP may apply). */
	int fd = (int)syscall(SYS_memfd_create, "pagesize", 0);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)len) == 0);
	char *s = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(s != MAP_FAILED);
	CHECK_RC(eht_page_stat(s, len, &st), 0);
	CHECK(st.resident == 0);
	CHECK(eht_page_stat_size(&st) == (st.thp_eligible ? 0 : (uint64_t)sysconf(_SC_PAGESIZE)));
	munmap(s, len);
	close(fd);

	/* THP advised and faulted in: 2 MiB when the kernel gave huge pages for most of it. */
	char *r = mmap(NULL, len + 2 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(r != MAP_FAILED);
	if (r == MAP_FAILED)
		return t_done();
	char *h = (char *)(((uintptr_t)r + 2 * MB - 1) & ~(uintptr_t)(2 * MB - 1));
	madvise(h, len, MADV_HUGEPAGE);
	memset(h, 1, len);
	CHECK_RC(eht_page_stat(h, len, &st), 0);
	uint64_t ps = eht_page_stat_size(&st);
	CHECK(ps == (st.huge * 2 >= st.resident ? 2 * MB : (uint64_t)sysconf(_SC_PAGESIZE)));
	char txt[64];
	fprintf(stderr, "THP advised: %s\n", eht_page_stat_text(&st, txt, sizeof(txt)));
	munmap(r, len + 2 * MB);

	/* hugetlb, where the pool has two free pages. */
	char *g = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (g != MAP_FAILED) {
		CHECK_RC(eht_page_stat(g, 4 * MB, &st), 0);
		CHECK(st.hugetlb && eht_page_stat_size(&st) == 2 * MB); /* before the first touch too */
		memset(g, 1, 4 * MB);
		CHECK_RC(eht_page_stat(g, 4 * MB, &st), 0);
		CHECK(st.hugetlb && st.huge == 4 * MB && eht_page_stat_size(&st) == 2 * MB);
		munmap(g, 4 * MB);
	} else {
		fprintf(stderr, "no hugetlb pages free: that part not checked\n");
	}
	return t_done();
}
