/* SPDX-License-Identifier: Apache-2.0 */
/* test_hip_share.c: the library's GPU paths over the HIP backend and the fake HIP runtime. Table
 * sharing: host-NUMA refuses (no host-NUMA VMM on HIP) and eht_table_share falls back to a region
 * pinned with hipHostRegister, the GPU's address of it given, everything unregistered at close. A
 * HOST lookup into GPU memory: the CPU gathers into pinned staging, copies on the caller's stream; the
 * fake runs those copies only when the stream is synchronized, so staging reused before its copy ran
 * (an event missing or waited for in the wrong place) gives wrong rows here. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eht.h"
#include "fake_hip.h"
#include "gpu/dev.h"
#include "testutil.h"

#define BYTES (4u << 20)

static void check_share(void)
{
	eht_group *g = NULL;
	eht_table *t = NULL;
	CHECK_RC(eht_group_create_single(&g), 0);
	struct eht_share_opts so = {.size = sizeof(so), .device = 0, .row_bytes = 256, .name = "hip-share"};
	CHECK_RC(eht_host_table_share(BYTES, g, &so, &t), -EOPNOTSUPP);
	CHECK(t == NULL && strstr(eht_last_error(), "host-NUMA virtual memory") != NULL);
	CHECK_RC(eht_table_share(BYTES, g, &so, &t), 0);
	struct eht_table_info info = {.size = sizeof(info)};
	CHECK_RC(eht_table_get_info(t, &info), 0);
	CHECK(info.tier == EHT_TIER_REGION_PINNED && info.host != NULL);
	CHECK(info.device_ptr == (uint64_t)(uintptr_t)info.host); /* the fake maps host memory 1:1 */
	CHECK(fake_hip_live("registered") > 0);
	CHECK_RC(eht_table_close(t), 0);
	CHECK(fake_hip_live("registered") == 0);
	eht_group_destroy(g);
}

enum { ROWS = 4096, RB = 64, N = 1000, CALLS = 6 };

static void check_lookup(void)
{
	uint8_t *rows = malloc((size_t)ROWS * RB);
	uint64_t rs = 7;
	for (size_t i = 0; i < (size_t)ROWS * RB; i++)
		rows[i] = (uint8_t)t_rand(&rs);
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(rows, ROWS, RB, 0, "hip-rows", &t), 0);
	/* staging for one call's rows: consecutive calls must wait for the previous copy */
	struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_HOST, .device = 0, .threads = 2,
				    .max_batch = N, .numa_node = -1};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	eht_stream s = NULL;
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), 0);
	eht_dptr out = 0;
	CHECK_RC(eht_dev_alloc(&out, (size_t)CALLS * N * RB), 0);
	static int64_t ids[CALLS][N];
	for (int c = 0; c < CALLS; c++) {
		for (int i = 0; i < N; i++)
			ids[c][i] = (int64_t)(t_rand(&rs) % ROWS);
		if (lk)
			CHECK_RC(eht_lookup_run(lk, ids[c], EHT_ID_INT64, 0, N, (void *)(uintptr_t)(out + (size_t)c * N * RB), s,
						EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_DEVICE, NULL),
				 0);
	}
	CHECK_RC(eht_dev_stream_sync(s), 0);
	const uint8_t *got = (const uint8_t *)(uintptr_t)out; /* device memory is host memory here */
	int bad = 0;
	for (int c = 0; c < CALLS; c++)
		for (int i = 0; i < N; i++)
			bad += memcmp(got + ((size_t)c * N + i) * RB, rows + (size_t)ids[c][i] * RB, RB) != 0;
	if (bad)
		fprintf(stderr, "%d of %d rows wrong\n", bad, CALLS * N);
	CHECK(bad == 0);
	eht_dev_free(out);
	eht_dev_stream_destroy(s);
	eht_lookup_destroy(lk);
	CHECK_RC(eht_table_close(t), 0);
	free(rows);
	CHECK(fake_hip_pending() == 0);
	CHECK(fake_hip_live("registered") == 0 && fake_hip_live("host") == 0 && fake_hip_live("device") == 0);
}

int main(void)
{
	unsetenv("EHT_NO_CUDA"); /* the sanitizer runs set it; these tests are about the GPU layer */
	check_share();
	check_lookup();
	CHECK(fake_hip_misuses() == 0);
	return t_done();
}
