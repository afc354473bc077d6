/* SPDX-License-Identifier: Apache-2.0 */
/* test_hip_optional.c: the HIP backend over a fake runtime missing one optional entry point of each
 * feature (FAKE_HIP_MINIMAL): the runtime loads, only those features are off, each says so in one
 * log line the first time it is needed and in every error, and a shared table falls back to a region
 * that is not pinned. Built as test_hip_nocore too (FAKE_HIP_NO_CORE): a mandatory entry point
 * missing turns the whole backend off with -ENOSYS naming it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eht.h"
#include "gpu/dev.h"
#include "gpu/pin.h"
#include "testutil.h"

#ifdef FAKE_HIP_NO_CORE
int main(void)
{
	unsetenv("EHT_NO_CUDA"); /* the sanitizer runs set it; these tests are about the GPU layer */
	CHECK_RC(eht_dev_load(), -ENOSYS);
	CHECK(strstr(eht_last_error(), "HIP runtime lacks hipEventCreateWithFlags") != NULL);
	CHECK(eht_dev_count() == 0);
	eht_dptr d = 0;
	CHECK_RC(eht_dev_alloc(&d, 64), -ENOSYS);
	CHECK(!eht_dev_has(EHT_DEV_FEAT_CORE));
	return t_done();
}
#else
int main(void)
{
	unsetenv("EHT_NO_CUDA"); /* the sanitizer runs set it; these tests are about the GPU layer */
	char log[256];
	snprintf(log, sizeof(log), "/tmp/eht-test-hip-optional-%d.log", (int)getpid());
	setenv("EHT_LOG", "info", 1);
	CHECK_RC(t_stderr_to(log), 0);
	CHECK_RC(eht_dev_load(), 0);
	CHECK(eht_dev_has(EHT_DEV_FEAT_CORE));
	for (int f = 1; f < EHT_DEV_FEAT_COUNT; f++)
		CHECK(!eht_dev_has((enum eht_dev_feature)f));
	char name[32];
	CHECK_RC(eht_dev_name(0, name, sizeof(name)), -ENOTSUP);
	CHECK(strstr(eht_last_error(), "hipDeviceGetName") != NULL);
	uint8_t *buf = aligned_alloc(4096, 1 << 16);
	for (int i = 0; i < 2; i++) {
		CHECK_RC(eht_dev_host_register(buf, 1 << 16, EHT_DEV_HOST_MAPPED), -ENOTSUP);
		CHECK(strstr(eht_last_error(), "the HIP runtime lacks hipHostRegister (GPU feature pin off)") != NULL);
	}
	uint64_t dptr = 0;
	CHECK_RC(eht_gpu_pin(buf, 1 << 16, 0, 0, &dptr), -ENOTSUP);
	bool cap = true;
	CHECK_RC(eht_dev_stream_capturing(NULL, &cap), 0);
	CHECK(!cap);
	CHECK_RC(eht_dev_capture_begin(NULL, EHT_CAPTURE_GLOBAL), -ENOTSUP);
	CHECK(strstr(eht_last_error(), "hipGraphLaunch") != NULL);
	CHECK_RC(eht_dev_host_func(NULL, NULL, NULL), -ENOTSUP);
	CHECK(strstr(eht_last_error(), "hipLaunchHostFunc") != NULL);
	CHECK_RC(eht_dev_stream_wait32(NULL, (eht_dptr)(uintptr_t)buf, 1, EHT_WAIT_EQ), -ENOTSUP);
	CHECK(strstr(eht_last_error(), "hipStreamWaitValue32") != NULL);
	/* The rest works. */
	eht_dptr d = 0;
	CHECK_RC(eht_dev_alloc(&d, 64), 0);
	CHECK_RC(eht_dev_h2d(d, buf, 64), 0);
	eht_dev_free(d);
	/* No pinning: the shared table is a plain region, for the CPU gathers. */
	eht_group *g = NULL;
	eht_table *t = NULL;
	CHECK_RC(eht_group_create_single(&g), 0);
	struct eht_share_opts so = {.size = sizeof(so), .device = 0, .row_bytes = 256, .name = "hip-nopin"};
	CHECK_RC(eht_table_share(1u << 20, g, &so, &t), 0);
	struct eht_table_info info = {.size = sizeof(info)};
	CHECK_RC(eht_table_get_info(t, &info), 0);
	CHECK(info.tier == EHT_TIER_REGION && info.device_ptr == 0);
	CHECK_RC(eht_table_close(t), 0);
	eht_group_destroy(g);
	free(buf);
	/* One line per feature, the first time it was needed. */
	CHECK(t_count_lines(log, "GPU feature pin off: the HIP runtime lacks hipHostRegister") == 1);
	CHECK(t_count_lines(log, "GPU feature graphs off") == 1);
	unlink(log);
	return t_done();
}
#endif
