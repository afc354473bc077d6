/* SPDX-License-Identifier: Apache-2.0 */
/* test_disk_split.c: the disk tier's default read splits rows into page-cache resident and uncached:
 * bit-exact against the in-memory reference with every row uncached (page cache dropped), with a
 * mix (some pages read back in with pread), and warm; under io_uring, with io_uring failing to start
 * (EHT_TEST_DISK_URING_FAIL: falls back to pread), with EHT_DISK_URING=0, and with a residency budget of
 * one page (EHT_DISK_HINT_PAGES=1: hints cleared on every read). */
#include <fcntl.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "disk_ref.h"
#include "testutil.h"

#define N_IDS 3001
#define LAYER 1

static const char *path;
static uint8_t *ref;
static uint64_t rows, rb;
static int64_t ids[N_IDS];

static uint64_t w_off, s_off, s_bytes; /* where the tensors lie in the file */

/* Reads every 4th weight page and all the scale pages back into the page cache with pread (not
 * through eht_ckpt_open, which would read the whole file). */
static void warm_some(void)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0); /* those pages only */
	uint8_t buf[256];
	for (uint64_t r = 0; fd >= 0 && r < rows; r += 64) /* 16 rows a page: every 4th page */
		CHECK(pread(fd, buf, 256, (off_t)(w_off + r * 256)) == 256);
	for (uint64_t o = 0; fd >= 0 && o < s_bytes; o += 256)
		CHECK(pread(fd, buf, 1, (off_t)(s_off + o)) == 1);
	if (fd >= 0)
		close(fd);
}

static void find_offsets(void)
{
	char wn[128], sn[128];
	eht_ckpt *ck = NULL;
	struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
	CHECK_RC(eht_ckpt_open(path, 0, &ck), 0);
	if (!ck)
		return;
	CHECK_RC(eht_ckpt_find(ck, W_NAME(LAYER, wn), &w), 0);
	CHECK_RC(eht_ckpt_find(ck, S_NAME(LAYER, sn), &s), 0);
	w_off = w.file_offset;
	s_off = s.file_offset;
	s_bytes = s.nbytes;
	eht_ckpt_close(ck);
}

static void run_case(const char *what, int want_mode)
{
	char wn[128], sn[128];
	struct eht_disk_opts o = {.size = sizeof(o), .weight = W_NAME(LAYER, wn), .scale = S_NAME(LAYER, sn),
				  .cache_bytes = EHT_DISK_NO_CACHE};
	eht_table *t = NULL;
	CHECK_RC(eht_disk_open(path, &o, &t), 0);
	if (!t)
		return;
	struct eht_lookup_opts lo = {.size = sizeof(lo), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				     .device = -1, .threads = 2, .max_batch = 500, .numa_node = -1};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &lo, &lk), 0);
	uint8_t *out = malloc(N_IDS * rb);
	/* pass 0: all uncached; 1: a mix; 2: warm (hints); 3: warm again */
	uint64_t res[4] = {0}, unc[4] = {0};
	uint32_t mode = 0;
	for (int pass = 0; lk && out && pass < 4; pass++) {
		struct eht_disk_stats s0 = {.size = sizeof(s0)}, s1 = {.size = sizeof(s1)};
		if (pass < 2) {
			CHECK_RC(eht_disk_drop_cache(t), 0);
			/* The whole file as well: a freshly written file sits in large folios, which the kernel
			 * drops only when the range covers them whole (the header's page is outside the rows). */
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			CHECK(fd >= 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
			if (fd >= 0)
				close(fd);
		}
		if (pass == 1)
			warm_some();
		CHECK_RC(eht_disk_stats(t, &s0), 0);
		memset(out, 0xab, N_IDS * rb);
		CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, N_IDS, out, NULL, EHT_LOOKUP_RUN_OUT_HOST, NULL), 0);
		CHECK_RC(eht_disk_stats(t, &s1), 0);
		int bad = 0;
		for (size_t i = 0; i < N_IDS; i++) {
			bool live = ids[i] >= 0 && (uint64_t)ids[i] < rows;
			if (live && memcmp(out + i * rb, ref + (uint64_t)ids[i] * rb, rb) != 0)
				bad++;
		}
		if (bad)
			fprintf(stderr, "%s pass %d: %d rows differ\n", what, pass, bad);
		CHECK(bad == 0);
		res[pass] = s1.resident_rows - s0.resident_rows;
		unc[pass] = s1.uncached_rows - s0.uncached_rows;
		mode = s1.split_mode;
		fprintf(stderr, "%s pass %d: %llu resident, %llu uncached rows, %llu uncached bytes so far\n", what, pass,
			(unsigned long long)res[pass], (unsigned long long)unc[pass],
			(unsigned long long)s1.uncached_bytes);
	}
	/* Where the drop works (not on tmpfs), a dropped file reads rows from the drive (16 rows share a
	 * page, so later rows of the same page find it resident), the mix has both kinds and the warm
	 * passes are all resident. */
	if (unc[0]) {
		CHECK(res[1] > 0 && unc[1] > 0);
		CHECK(mode == (uint32_t)want_mode); /* pread once io_uring failed to start */
	} else {
		fprintf(stderr, "%s: the page cache did not drop here (tmpfs?): split tested on resident rows only\n", what);
	}
	CHECK(unc[2] == 0 && unc[3] == 0 && res[3] > 0);
	/* A caller built before the split's counters: its shorter struct is filled, nothing past it. */
	struct {
		struct eht_disk_stats s;
		uint8_t pad[64];
	} old;
	memset(&old, 0xcd, sizeof(old));
	old.s.size = offsetof(struct eht_disk_stats, resident_rows);
	CHECK_RC(eht_disk_stats(t, &old.s), 0);
	CHECK(old.s.rows_read > 0 && old.s.resident_rows == 0xcdcdcdcdcdcdcdcdull);
	free(out);
	eht_lookup_destroy(lk);
	CHECK_RC(eht_table_close(t), 0);
}

int main(void)
{
	/* A private copy: other tests read the fixture at the same time and would refill its pages. */
	char single[1024], copy[1200];
	snprintf(single, sizeof(single), "%s/safetensors/engram_single.safetensors", t_fixtures());
	char *dir = t_tmpdir("disk_split");
	snprintf(copy, sizeof(copy), "%s/engram_single.safetensors", dir);
	FILE *f = fopen(single, "rb");
	CHECK(f != NULL);
	static uint8_t bytes[4 << 20];
	size_t len = f ? fread(bytes, 1, sizeof(bytes), f) : 0;
	if (f)
		fclose(f);
	CHECK(len > 0 && len < sizeof(bytes));
	CHECK_RC(t_write_file(copy, bytes, len), 0);
	int fd = open(copy, O_RDONLY | O_CLOEXEC); /* written back, so that its pages can be dropped */
	CHECK(fd >= 0 && fsync(fd) == 0);
	if (fd >= 0)
		close(fd);
	path = copy;
	find_offsets();
	ref = ref_table(path, LAYER, &rows, &rb);
	if (!ref)
		return t_done();
	uint64_t rs = 18;
	ref_ids(ids, N_IDS, rows, &rs);
	t_setenv("EHT_DISK_URING", NULL);
	t_setenv("EHT_DISK_SPLIT", NULL);
	run_case("default", t_uring_works() ? 2 : 1);
	t_setenv("EHT_TEST_DISK_URING_FAIL", "1"); /* io_uring_queue_init fails: pread */
	run_case("io_uring failing", 1);
	t_setenv("EHT_TEST_DISK_URING_FAIL", NULL);
	t_setenv("EHT_DISK_URING", "0");
	run_case("EHT_DISK_URING=0", 1);
	t_setenv("EHT_DISK_URING", NULL);
	t_setenv("EHT_DISK_HINT_PAGES", "1"); /* the tiniest budget: hints forgotten at once */
	run_case("one-page budget", t_uring_works() ? 2 : 1);
	t_setenv("EHT_DISK_HINT_PAGES", NULL);
	free(ref);
	t_rmtree(dir);
	return t_done();
}
