/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_prefault.c: a creator's region is allocated and mapped up front both ways: with
 * MADV_POPULATE_WRITE, and where the kernel refuses it (EINVAL before 5.14; played here with
 * EHT_TEST_FAULT=populate-madvise) with fallocate and touched pages, also where a signal interrupts
 * that fallocate (populate-eintr); zeroed either way, and the bytes an opener writes are the creator's. */
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#include "region_testutil.h"

static const char *dir;
static int fallbacks; /* log lines saying the fallback ran */

static void on_log(int level, const char *msg, void *arg)
{
	(void)level;
	(void)arg;
	if (strstr(msg, "MADV_POPULATE_WRITE unsupported"))
		fallbacks++;
}

static void one(const char *name, const char *fault, int want_fallback)
{
	if (fault)
		t_setenv("EHT_TEST_FAULT", fault);
	else
		t_setenv("EHT_TEST_FAULT", NULL);
	const uint64_t bytes = 3u << 20;
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_KEEP, .dir = dir, .timeout_s = 10,
				    .populate_threads = 2};
	eht_region *c = NULL, *p = NULL;
	CHECK_RC(eht_region_open(name, bytes, &o, &c), 0);
	if (!c)
		return;
	char path[512];
	snprintf(path, sizeof(path), "%s/eht.%s", dir, name);
	struct stat st;
	/* Every data page is allocated before the creator sees the region (no fault later). */
	CHECK(stat(path, &st) == 0 && (uint64_t)st.st_blocks * 512 >= bytes);
	const unsigned char *d = eht_region_data(c);
	size_t nonzero = 0;
	for (uint64_t i = 0; i < bytes; i += 4096)
		nonzero += d[i] != 0;
	CHECK(nonzero == 0);
	CHECK_RC(eht_region_mark_ready(c), 0);
	CHECK_RC(eht_region_open(name, bytes, &o, &p), 0);
	if (p) {
		((volatile unsigned char *)eht_region_data(p))[bytes - 1] = 0x5a;
		CHECK(d[bytes - 1] == 0x5a);
	}
	CHECK_RC(eht_region_close(&p), 0);
	CHECK_RC(eht_region_unlink_if_same(c), 0);
	CHECK_RC(eht_region_close(&c), 0);
	CHECK(fallbacks == want_fallback);
}

int main(void)
{
	dir = r_tmpdir("prefault");
	t_setenv("EHT_LOG", NULL); /* the fallback's warnings are counted at the default level */
	eht_log_set_callback(on_log, NULL);
	/* Does this kernel have MADV_POPULATE_WRITE (5.14 on)? Then only the fault takes the fallback. */
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int old = m == MAP_FAILED || madvise(m, 4096, MADV_POPULATE_WRITE) != 0;
	if (m != MAP_FAILED)
		munmap(m, 4096);
	one("madvise", NULL, old);
	one("other-fault", "populate-madvise-not", old);
	one("fallback", "region:rank=9,populate-madvise", 1); /* said once a process */
	/* tmpfs giving a fallocate up at a signal (older kernels, played for any step over 1 MiB): the
	 * space is reserved in smaller steps, not refused. */
	one("fallback-eintr", "populate-madvise,populate-eintr", 1);
	t_setenv("EHT_TEST_FAULT", NULL);
	CHECK(r_count_files(dir) == 0);
	rmdir(dir);
	return t_done();
}
