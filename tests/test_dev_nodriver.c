/* SPDX-License-Identifier: Apache-2.0 */
/* test_dev_nodriver.c: the device layer without a driver (EHT_NO_CUDA=1): every call is an error
 * (-ENODEV), never a jump through a missing entry point; queries answer "nothing". */
#include <stdlib.h>
#include <string.h>

#include "gpu/dev.h"
#include "gpu/pin.h"
#include "gpu/probe.h"
#include "gpu/vmm.h"
#include "testutil.h"

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	CHECK_RC(eht_dev_load(), -ENODEV);
	CHECK(strstr(eht_last_error(), "EHT_NO_CUDA") != NULL);
	CHECK_RC(eht_dev_count(), 0);
	for (int f = 0; f < EHT_DEV_FEAT_COUNT; f++)
		CHECK(!eht_dev_has(f));
	CHECK(strcmp(eht_dev_feature_name(EHT_DEV_FEAT_GRAPHS), "graphs") == 0);
	CHECK(strcmp(eht_dev_feature_name(EHT_DEV_FEAT_MEM_OPS), "mem-ops") == 0);

	eht_dptr d = 1;
	void *p = NULL;
	eht_stream s = NULL;
	eht_event e = NULL;
	eht_graph g = NULL;
	int v = 0, x = 0;
	CHECK_RC(eht_dev_use(0), -ENODEV);
	CHECK_RC(eht_dev_current(NULL, &v), -ENODEV);
	CHECK_RC(eht_dev_alloc(&d, 64), -ENODEV);
	CHECK_RC(eht_dev_host_alloc(&p, 64, EHT_DEV_HOST_PORTABLE), -ENODEV);
	CHECK_RC(eht_dev_h2d(d, &x, sizeof(x)), -ENODEV);
	CHECK_RC(eht_dev_memset32_async(d, 0, 1, NULL), -ENODEV);
	CHECK_RC(eht_dev_sync(), -ENODEV);
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), -ENODEV);
	CHECK_RC(eht_dev_event_create(&e, EHT_EVENT_TIMING), -ENODEV);
	CHECK_RC(eht_dev_capture_begin(NULL, EHT_CAPTURE_GLOBAL), -ENODEV);
	CHECK_RC(eht_dev_capture_end(NULL, &g), -ENODEV);
	CHECK_RC(eht_dev_stream_write32(NULL, d, 1), -ENODEV);
	CHECK_RC(eht_dev_stream_wait32(NULL, d, 1, EHT_WAIT_GEQ), -ENODEV);
	CHECK_RC(eht_dev_host_register(&x, sizeof(x), 0), -ENODEV);
	CHECK_RC(eht_dev_attr(0, EHT_DEV_ATTR_SM_COUNT, &v), -ENODEV);
	CHECK_RC(eht_vmm_reserve(&d, 1 << 21, 1 << 21), -ENODEV);
	CHECK_RC(eht_vmm_export_supported(0, EHT_VMM_FD, NULL, 0), -ENODEV);
	uint64_t pinned = 0;
	CHECK_RC(eht_gpu_pin(&x, sizeof(x), 0, 0, &pinned), -ENODEV);
	CHECK(!eht_dev_is_device_ptr(&x));
	/* Teardown of nothing is a no-op. */
	eht_dev_free(0);
	eht_dev_host_free(NULL);
	eht_dev_stream_destroy(NULL);
	eht_dev_event_destroy(NULL);
	eht_dev_graph_destroy(NULL);
	eht_dev_module_unload(NULL);
	/* Images are a property of the build, not of the driver. */
	eht_module m = NULL;
	CHECK(eht_dev_module_load(&m, "no-such-image") == -ENOTSUP && m == NULL);
	return t_done();
}
