/* SPDX-License-Identifier: Apache-2.0 */
/* test_hip_dev.c: the HIP backend's device layer (src/gpu/hip) over the fake HIP runtime: the runtime
 * loads with every feature but VMM, memory and copies land where asked, streams and events run work in
 * their order (the fake runs queued work only when it is waited for), graphs and host functions, and
 * the runtime's errors come back as -errno with the call's and the error's names. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_hip.h"
#include "gpu/dev.h"
#include "gpu/vmm.h"
#include "testutil.h"

static int host_fn_calls;
static void host_fn(void *arg) { host_fn_calls += *(int *)arg; }

static void check_load(void)
{
	CHECK_RC(eht_dev_load(), 0);
	CHECK(eht_dev_count() == 1);
	CHECK_RC(eht_dev_use(0), 0);
	CHECK_RC(eht_dev_use(1), -ENODEV);
	void *ctx = NULL;
	int dev = -1;
	CHECK_RC(eht_dev_current(&ctx, &dev), 0);
	CHECK(ctx != NULL && dev == 0);
	for (int f = 0; f < EHT_DEV_FEAT_COUNT; f++)
		CHECK(eht_dev_has((enum eht_dev_feature)f) == (f != EHT_DEV_FEAT_VMM && f != EHT_DEV_FEAT_PRIORITY));
	int v = 0;
	CHECK_RC(eht_dev_attr(0, EHT_DEV_ATTR_SM_COUNT, &v), 0);
	CHECK(v == 104);
	CHECK_RC(eht_dev_attr(0, EHT_DEV_ATTR_CC_MAJOR, &v), 0);
	CHECK(v == 9);
	CHECK_RC(eht_dev_attr(0, EHT_DEV_ATTR_PCI_BUS, &v), 0);
	CHECK(v == 0x80);
	CHECK_RC(eht_dev_attr(0, EHT_DEV_ATTR_HOST_NUMA_ID, &v), 0);
	CHECK(v == -1); /* no such PCI device in sysfs */
	CHECK_RC(eht_dev_attr(0, EHT_DEV_ATTR_HOST_NUMA_VMM, &v), 0);
	CHECK(v == 0);
	CHECK_RC(eht_dev_attr(3, EHT_DEV_ATTR_SM_COUNT, &v), -ENODEV);
	char name[64] = "";
	CHECK_RC(eht_dev_name(0, name, sizeof(name)), 0);
	CHECK(strcmp(name, "Fake HIP device 0") == 0);
	size_t mem = 0;
	CHECK_RC(eht_dev_total_mem(0, &mem), 0);
	CHECK(mem == 64ull << 30);
	CHECK_RC(eht_dev_driver_version(&v), 0);
	CHECK(v == 50221153);
	/* VMM: off, saying why, every call alike. */
	eht_vmm_mem h = 0;
	CHECK_RC(eht_vmm_create(&h, 1 << 21, 0, EHT_VMM_FD), -ENOTSUP);
	CHECK(strstr(eht_last_error(), "host-NUMA") && strstr(eht_last_error(), "hipHostRegister"));
	size_t gran = 0;
	CHECK_RC(eht_vmm_granularity(0, EHT_VMM_FD, &gran), -ENOTSUP);
}

static void check_memory(void)
{
	eht_dptr d = 0;
	CHECK_RC(eht_dev_alloc(&d, 4096), 0);
	CHECK(d != 0 && eht_dev_is_device_ptr((void *)(uintptr_t)d));
	uint8_t src[4096], back[4096];
	for (int i = 0; i < 4096; i++)
		src[i] = (uint8_t)(i * 7);
	CHECK_RC(eht_dev_h2d(d, src, sizeof(src)), 0);
	CHECK_RC(eht_dev_d2h(back, d, sizeof(back)), 0);
	CHECK(memcmp(src, back, sizeof(src)) == 0);
	CHECK_RC(eht_dev_memset8(d, 0xab, 16), 0);
	CHECK_RC(eht_dev_d2h(back, d, 16), 0);
	CHECK(back[0] == 0xab && back[15] == 0xab);
	/* Host memory: allocated pinned, registered in place, mapped for the GPU. */
	void *hp = NULL;
	CHECK_RC(eht_dev_host_alloc(&hp, 8192, EHT_DEV_HOST_PORTABLE | EHT_DEV_HOST_MAPPED), 0);
	CHECK(!eht_dev_is_device_ptr(hp));
	eht_dptr hd = 0;
	CHECK_RC(eht_dev_host_dptr(&hd, hp), 0);
	CHECK(hd == (eht_dptr)(uintptr_t)hp);
	eht_dev_host_free(hp);
	uint8_t *reg = aligned_alloc(4096, 1 << 16);
	CHECK(!eht_dev_is_device_ptr(reg));
	CHECK_RC(eht_dev_host_register(reg, 1 << 16, EHT_DEV_HOST_MAPPED | EHT_DEV_HOST_READ_ONLY), 0);
	CHECK_RC(eht_dev_host_register(reg, 1 << 16, EHT_DEV_HOST_MAPPED), -EEXIST);
	CHECK(strstr(eht_last_error(), "hipHostRegister failed: hipErrorHostMemoryAlreadyRegistered") != NULL);
	CHECK_RC(eht_dev_host_dptr(&hd, reg + 100), 0);
	CHECK(hd == (eht_dptr)(uintptr_t)(reg + 100));
	CHECK_RC(eht_dev_host_unregister(reg), 0);
	CHECK_RC(eht_dev_host_unregister(reg), -EINVAL);
	CHECK(strstr(eht_last_error(), "hipErrorHostMemoryNotRegistered") != NULL);
	free(reg);
	eht_dev_free(d);
	CHECK(fake_hip_live("device") == 0 && fake_hip_live("host") == 0 && fake_hip_live("registered") == 0);
}

/* Work on a stream runs in order, after what it waits for on another stream, and only once waited for. */
static void check_streams(void)
{
	eht_stream a = NULL, b = NULL;
	eht_event e = NULL, t0 = NULL, t1 = NULL;
	CHECK_RC(eht_dev_stream_create(&a, EHT_STREAM_NONBLOCKING), 0);
	CHECK_RC(eht_dev_stream_create(&b, 0), 0);
	CHECK_RC(eht_dev_event_create(&e, 0), 0);
	CHECK_RC(eht_dev_event_create(&t0, EHT_EVENT_TIMING), 0);
	CHECK_RC(eht_dev_event_create(&t1, EHT_EVENT_TIMING), 0);
	eht_dptr d = 0;
	CHECK_RC(eht_dev_alloc(&d, 64), 0);
	void *pin = NULL;
	CHECK_RC(eht_dev_host_alloc(&pin, 64, EHT_DEV_HOST_MAPPED), 0);
	memset(pin, 1, 64);
	CHECK_RC(eht_dev_memset8(d, 0, 64), 0);
	fake_hip_trace_clear();
	CHECK_RC(eht_dev_event_record(t0, a), 0);
	CHECK_RC(eht_dev_h2d_async(d, pin, 64, a), 0);
	CHECK_RC(eht_dev_event_record(e, a), 0);
	CHECK_RC(eht_dev_event_record(t1, a), 0);
	CHECK_RC(eht_dev_stream_wait_event(b, e), 0);
	CHECK_RC(eht_dev_d2h_async(pin, d, 32, b), 0); /* into the same pinned buffer: after a's copy */
	CHECK(fake_hip_pending() == 6);
	CHECK(eht_dev_event_done(e) == 0); /* queued, not run */
	CHECK(eht_dev_event_done(e) == 1);
	CHECK_RC(eht_dev_event_sync(t1), 0);
	float ms = -1;
	CHECK_RC(eht_dev_event_ms(&ms, t0, t1), 0);
	CHECK(ms > 0);
	CHECK_RC(eht_dev_stream_sync(b), 0);
	CHECK(fake_hip_pending() == 0);
	CHECK(((uint8_t *)pin)[0] == 1);
	CHECK(strstr(fake_hip_trace(), "hipStreamWaitEvent s2 e1\nhipMemcpyDtoHAsync s2") != NULL);
	/* Fills, then a host function after them; memory ops. */
	int add = 3;
	host_fn_calls = 0;
	CHECK_RC(eht_dev_memset32_async(d, 0x01020304u, 4, a), 0);
	CHECK_RC(eht_dev_host_func(a, host_fn, &add), 0);
	CHECK(host_fn_calls == 0);
	CHECK_RC(eht_dev_stream_write32(a, (eht_dptr)(uintptr_t)pin, 7), 0);
	CHECK_RC(eht_dev_stream_wait32(a, (eht_dptr)(uintptr_t)pin, 7, EHT_WAIT_EQ), 0);
	CHECK_RC(eht_dev_stream_wait32(a, (eht_dptr)(uintptr_t)pin, 7, (enum eht_wait_cond)9), -EINVAL);
	CHECK_RC(eht_dev_sync(), 0);
	CHECK(host_fn_calls == 3);
	uint32_t w = 0;
	CHECK_RC(eht_dev_d2h(&w, d + 12, 4), 0);
	CHECK(w == 0x01020304u && *(uint32_t *)pin == 7);
	/* Graphs: capture, instantiate, launch. */
	bool cap = true;
	CHECK_RC(eht_dev_stream_capturing(a, &cap), 0);
	CHECK(!cap);
	CHECK_RC(eht_dev_capture_begin(a, EHT_CAPTURE_RELAXED), 0);
	CHECK_RC(eht_dev_stream_capturing(a, &cap), 0);
	CHECK(cap);
	CHECK_RC(eht_dev_memset8_async(d, 0, 8, a), 0);
	eht_graph g = NULL;
	eht_graph_exec x = NULL;
	CHECK_RC(eht_dev_capture_end(a, &g), 0);
	CHECK_RC(eht_dev_graph_instantiate(&x, g), 0);
	CHECK_RC(eht_dev_graph_launch(x, a), 0);
	CHECK_RC(eht_dev_stream_sync(a), 0);
	CHECK(strstr(fake_hip_trace(), "hipGraphLaunch s1 (1 operations)") != NULL);
	eht_dev_graph_exec_destroy(x);
	eht_dev_graph_destroy(g);
	/* Modules: an image this build does not have. */
	eht_module m = NULL;
	CHECK_RC(eht_dev_module_load(&m, "no-such-image"), -ENOTSUP);
	CHECK(m == NULL && strstr(eht_last_error(), "hipcc"));
	eht_dev_free(d);
	eht_dev_host_free(pin);
	eht_dev_event_destroy(e);
	eht_dev_event_destroy(t0);
	eht_dev_event_destroy(t1);
	eht_dev_stream_destroy(a);
	eht_dev_stream_destroy(b);
	CHECK(fake_hip_misuses() == 0);
	CHECK(fake_hip_live("stream") == 0 && fake_hip_live("event") == 0 && fake_hip_live("graph") == 0 &&
	      fake_hip_live("exec") == 0 && fake_hip_live("device") == 0 && fake_hip_live("host") == 0);
	/* The fake catches a wait on an event never recorded (what a missing record would be). */
	CHECK_RC(eht_dev_stream_create(&a, 0), 0);
	CHECK_RC(eht_dev_event_create(&e, 0), 0);
	CHECK_RC(eht_dev_stream_wait_event(a, e), 0);
	CHECK(fake_hip_misuses() == 1);
	eht_dev_event_destroy(e);
	eht_dev_stream_destroy(a);
}

/* Runtime errors as -errno, naming the call and the error. */
static void check_errors(void)
{
	eht_dptr d = 0;
	fake_hip_fail("hipMalloc", 2 /* hipErrorOutOfMemory */, 1);
	CHECK_RC(eht_dev_alloc(&d, 64), -ENOMEM);
	CHECK(d == 0 && strstr(eht_last_error(), "hipMalloc failed: hipErrorOutOfMemory") != NULL);
	fake_hip_fail("hipStreamSynchronize", 719 /* hipErrorLaunchFailure */, 1);
	CHECK_RC(eht_dev_stream_sync(NULL), -EIO);
	CHECK(strstr(eht_last_error(), "hipStreamSynchronize") != NULL);
	fake_hip_fail("hipEventQuery", 600 /* hipErrorNotReady */, 1);
	eht_event e = NULL;
	CHECK_RC(eht_dev_event_create(&e, 0), 0);
	CHECK(eht_dev_event_done(e) == 0); /* not ready is an answer, not an error */
	CHECK(eht_dev_event_done(e) == 1);
	eht_dev_event_destroy(e);
	fake_hip_fail("hipSetDevice", 101 /* hipErrorInvalidDevice */, 1);
	CHECK_RC(eht_dev_use(0), -ENODEV);
	fake_hip_fail("hipHostGetDevicePointer", 1 /* hipErrorInvalidValue */, 1);
	eht_dptr hd = 0;
	int x = 0;
	CHECK_RC(eht_dev_host_dptr(&hd, &x), -EINVAL);
	CHECK(strstr(eht_last_error(), "hipErrorInvalidValue") != NULL);
}

/* ROCm 6 numbers hipMemoryType as CUDA does (device 2, not 1): the backend reads the version at load. */
static void check_rocm6(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		fake_hip_set_version(60200000);
		eht_dptr d = 0;
		int x = 0;
		if (eht_dev_alloc(&d, 64))
			_exit(2);
		_exit(eht_dev_is_device_ptr((void *)(uintptr_t)d) && !eht_dev_is_device_ptr(&x) ? 0 : 1);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	unsetenv("EHT_NO_CUDA"); /* the sanitizer runs set it; these tests are about the GPU layer */
	check_rocm6(); /* first: before this process loads the runtime */
	fake_hip_set_devices(1);
	check_load();
	check_memory();
	check_streams();
	check_errors();
	return t_done();
}
