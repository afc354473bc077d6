/* SPDX-License-Identifier: Apache-2.0 */
/* test_disk_split.c: the disk tier's default read splits rows into page-cache resident and uncached:
 * bit-exact against the in-memory reference with every row uncached (page cache dropped), with a
 * mix (some pages read back in with pread), and warm; under io_uring, with io_uring failing to start
 * (EHT_DISK_URING_FAIL: falls back to pread), with EHT_DISK_URING=0, and with a residency budget of
 * one page (EHT_DISK_HINT_PAGES=1: hints cleared on every read). */
#include <fcntl.h>
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

/* Reads every 4th weight page and all the scale pages back into the page cache with pread. */
static void warm_some(void)
{
	char wn[128], sn[128];
	eht_ckpt *ck = NULL;
	struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
	CHECK_RC(eht_ckpt_open(path, 0, &ck), 0);
	if (!ck)
		return;
	CHECK_RC(eht_ckpt_find(ck, W_NAME(LAYER, wn), &w), 0);
	CHECK_RC(eht_ckpt_find(ck, S_NAME(LAYER, sn), &s), 0);
	int fd = open(w.path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	uint8_t buf[256];
	for (uint64_t r = 0; fd >= 0 && r < rows; r += 64) /* 16 rows a page: every 4th page */
		CHECK(pread(fd, buf, 256, (off_t)(w.file_offset + r * 256)) == 256);
	for (uint64_t o = 0; fd >= 0 && o < s.nbytes; o += 256) /* and every scale page */
		CHECK(pread(fd, buf, 1, (off_t)(s.file_offset + o)) == 1);
	if (fd >= 0)
		close(fd);
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
	for (int pass = 0; lk && out && pass < 4; pass++) {
		struct eht_disk_stats s0 = {.size = sizeof(s0)}, s1 = {.size = sizeof(s1)};
		if (pass < 2)
			CHECK_RC(eht_disk_drop_cache(t), 0);
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
		CHECK(s1.split_mode == (uint32_t)want_mode);
		fprintf(stderr, "%s pass %d: %llu resident, %llu uncached rows, %llu uncached bytes so far\n", what, pass,
			(unsigned long long)res[pass], (unsigned long long)unc[pass],
			(unsigned long long)s1.uncached_bytes);
	}
	/* Where the drop works (not on tmpfs), a dropped file reads rows from the drive (16 rows share a
	 * page, so later rows of the same page find it resident), the mix has both kinds and the warm
	 * passes are all resident. */
	if (unc[0]) {
		CHECK(res[1] > 0 && unc[1] > 0);
	} else {
		fprintf(stderr, "%s: the page cache did not drop here (tmpfs?): split tested on resident rows only\n", what);
	}
	CHECK(unc[2] == 0 && unc[3] == 0 && res[3] > 0);
	free(out);
	eht_lookup_destroy(lk);
	CHECK_RC(eht_table_close(t), 0);
}

int main(void)
{
	char single[1024];
	snprintf(single, sizeof(single), "%s/safetensors/engram_single.safetensors", t_fixtures());
	path = single;
	ref = ref_table(path, LAYER, &rows, &rb);
	if (!ref)
		return t_done();
	uint64_t rs = 18;
	ref_ids(ids, N_IDS, rows, &rs);
	unsetenv("EHT_DISK_URING");
	unsetenv("EHT_DISK_SPLIT");
	run_case("default", t_uring_works() ? 2 : 1);
	setenv("EHT_DISK_URING_FAIL", "1", 1); /* io_uring_queue_init fails: pread */
	run_case("io_uring failing", 1);
	unsetenv("EHT_DISK_URING_FAIL");
	setenv("EHT_DISK_URING", "0", 1);
	run_case("EHT_DISK_URING=0", 1);
	unsetenv("EHT_DISK_URING");
	setenv("EHT_DISK_HINT_PAGES", "1", 1); /* the tiniest budget: hints forgotten at once */
	run_case("one-page budget", t_uring_works() ? 2 : 1);
	unsetenv("EHT_DISK_HINT_PAGES");
	free(ref);
	return t_done();
}
