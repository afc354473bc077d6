/* SPDX-License-Identifier: Apache-2.0 */
/* dev_hip.c: the device layer (gpu/dev.h) on the HIP runtime: each call is one runtime call with its
 * result turned into -errno and a message; optional features answer -ENOTSUP when missing. HIP has no
 * contexts to hand around: a thread's current device is the runtime's (hipSetDevice). */
#include "gpu/dev.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/fatbin.h"
#include "gpu/hip/hip_rt.h"
#include "util/err.h"

/* Why a runtime call cannot be made: no runtime (the load's error), or a missing optional entry point. */
static int absent(const char *name)
{
	int rc = eht_hip_load();
	return rc ? rc : eht_err(ENOTSUP, "the HIP runtime lacks %s", name);
}
/* One runtime call: loads the runtime on first use (its pointer is NULL before), so calling the layer
 * without a runtime is an error, never a jump through NULL; the result as 0 or -errno. */
#define CK(name, ...)                                                                                \
	((eht_hip.name || (eht_hip_load() == 0 && eht_hip.name)) ? eht_hip_result(eht_hip.name(__VA_ARGS__), #name) \
								 : absent(#name))
/* Best-effort teardown calls: nothing to do without the entry point. */
#define QUIET(name, ...)                                                                             \
	do {                                                                                         \
		if (eht_hip.name)                                                                    \
			eht_hip.name(__VA_ARGS__);                                                   \
	} while (0)

#define HS(s) ((hipStream_t)(s))
#define HE(e) ((hipEvent_t)(e))
#define DP(d) ((hipDeviceptr_t)(uintptr_t)(d))

int eht_dev_load(void) { return eht_hip_load(); }
int eht_dev_count(void) { return eht_hip_device_count(); }

int eht_dev_use(int device)
{
	int rc = eht_hip_load();
	if (rc)
		return rc;
	int n = eht_hip_device_count();
	if (device < 0 || device >= n)
		return eht_err(ENODEV, "HIP device %d does not exist (%d found)", device, n);
	return CK(hipSetDevice, device);
}

/* The "context" of a device: one token per device, so that callers that key GPU state by context
 * (engram hash tables, a thread's current device) work as on CUDA. */
#define EHT_HIP_MAX_DEVICES 64
static char device_token[EHT_HIP_MAX_DEVICES];

int eht_dev_current(void **ctx, int *device)
{
	int rc = eht_hip_load();
	if (rc)
		return rc;
	int d = -1;
	if ((rc = CK(hipGetDevice, &d)))
		return rc;
	if (ctx)
		*ctx = d >= 0 && d < EHT_HIP_MAX_DEVICES ? &device_token[d] : NULL;
	if (device)
		*device = d;
	return 0;
}

bool eht_dev_has(enum eht_dev_feature f) { return eht_hip_has(f); }

/* The host NUMA node of a PCI device, from sysfs (HIP has no attribute for it); -1 where unknown
 * (an APU's GPU, a kernel without NUMA). */
static int pci_numa_node(int device)
{
	int dom = 0, bus = 0, dev = 0;
	if (CK(hipDeviceGetAttribute, &dom, hipDeviceAttributePciDomainID, device) ||
	    CK(hipDeviceGetAttribute, &bus, hipDeviceAttributePciBusId, device) ||
	    CK(hipDeviceGetAttribute, &dev, hipDeviceAttributePciDeviceId, device)) {
		eht_err_clear();
		return -1;
	}
	char path[96];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.0/numa_node", (unsigned)dom,
		 (unsigned)bus, (unsigned)dev);
	FILE *f = fopen(path, "re");
	int node = -1;
	if (f) {
		if (fscanf(f, "%d", &node) != 1)
			node = -1;
		fclose(f);
	}
	return node;
}

int eht_dev_attr(int device, enum eht_dev_attr a, int *value)
{
	static const int map[] = {
		[EHT_DEV_ATTR_SM_COUNT] = hipDeviceAttributeMultiprocessorCount,
		[EHT_DEV_ATTR_CC_MAJOR] = hipDeviceAttributeComputeCapabilityMajor,
		[EHT_DEV_ATTR_CC_MINOR] = hipDeviceAttributeComputeCapabilityMinor,
		[EHT_DEV_ATTR_PCI_DOMAIN] = hipDeviceAttributePciDomainID,
		[EHT_DEV_ATTR_PCI_BUS] = hipDeviceAttributePciBusId,
		[EHT_DEV_ATTR_PCI_DEVICE] = hipDeviceAttributePciDeviceId,
	};
	int rc = eht_hip_load();
	if (rc)
		return rc;
	if (device < 0 || device >= eht_hip_device_count())
		return eht_err(ENODEV, "HIP device %d does not exist (%d found)", device, eht_hip_device_count());
	switch (a) {
	case EHT_DEV_ATTR_HOST_NUMA_ID:
		*value = pci_numa_node(device);
		return 0;
	case EHT_DEV_ATTR_HOST_NUMA_VMM: /* see vmm_hip.c */
	case EHT_DEV_ATTR_FABRIC_HANDLES:
	case EHT_DEV_ATTR_FD_HANDLES:
		*value = 0;
		return 0;
	default:
		break;
	}
	if ((unsigned)a >= sizeof(map) / sizeof(map[0]))
		return eht_err(EINVAL, "device attribute %d", (int)a);
	return CK(hipDeviceGetAttribute, value, map[a], device);
}

/* hipDevice_t is the ordinal on ROCm; asked for all the same where the runtime has the call. */
static int get_dev(int device, hipDevice_t *d)
{
	*d = device;
	int rc = eht_hip_need(EHT_DEV_FEAT_INFO, "device facts");
	return rc ? rc : CK(hipDeviceGet, d, device);
}

int eht_dev_name(int device, char *name, size_t len)
{
	hipDevice_t d;
	int rc = get_dev(device, &d);
	return rc ? rc : CK(hipDeviceGetName, name, (int)len, d);
}

int eht_dev_total_mem(int device, size_t *bytes)
{
	hipDevice_t d;
	int rc = get_dev(device, &d);
	return rc ? rc : CK(hipDeviceTotalMem, bytes, d);
}

/* HIP's version (50221153 for ROCm 5.2); works without a device. */
int eht_dev_driver_version(int *version) { return CK(hipDriverGetVersion, version); }

/* ---- memory */
int eht_dev_alloc(eht_dptr *d, size_t bytes)
{
	void *p = NULL;
	int rc = CK(hipMalloc, &p, bytes);
	*d = rc ? 0 : (eht_dptr)(uintptr_t)p;
	return rc;
}

void eht_dev_free(eht_dptr d)
{
	if (d)
		QUIET(hipFree, DP(d));
}

/* READ_ONLY is a hint HIP cannot take safely: its bit (0x8) means coarse-grained before ROCm 6. */
static unsigned host_flags(unsigned f, bool reg)
{
	unsigned h = 0;
	if (f & EHT_DEV_HOST_PORTABLE)
		h |= reg ? hipHostRegisterPortable : hipHostMallocPortable;
	if (f & EHT_DEV_HOST_MAPPED)
		h |= reg ? hipHostRegisterMapped : hipHostMallocMapped;
	return h;
}

int eht_dev_host_alloc(void **p, size_t bytes, unsigned flags)
{
	return CK(hipHostMalloc, p, bytes, host_flags(flags, false));
}

void eht_dev_host_free(void *p)
{
	if (p)
		QUIET(hipHostFree, p);
}

int eht_dev_host_register(void *p, size_t bytes, unsigned flags)
{
	int rc = eht_hip_need(EHT_DEV_FEAT_PIN, "pinning host memory");
	return rc ? rc : CK(hipHostRegister, p, bytes, host_flags(flags, true));
}

int eht_dev_host_unregister(void *p)
{
	int rc = eht_hip_need(EHT_DEV_FEAT_PIN, "unpinning host memory");
	return rc ? rc : CK(hipHostUnregister, p);
}

int eht_dev_host_dptr(eht_dptr *d, void *p)
{
	void *dp = NULL;
	int rc = CK(hipHostGetDevicePointer, &dp, p, 0);
	*d = rc ? 0 : (eht_dptr)(uintptr_t)dp;
	return rc;
}

int eht_dev_host_mapped(const void *p, size_t bytes, eht_dptr *d)
{
	if (!p || !bytes || eht_hip_load() != 0) {
		eht_err_clear();
		return !p || !bytes ? -ENOENT : -ENODEV;
	}
	/* Pinned memory only: this backend has no virtual-memory mappings (vmm_hip.c). */
	void *first = (void *)(uintptr_t)p, *last = (char *)first + bytes - 1, *a = NULL, *b = NULL;
	if (eht_hip.hipHostGetDevicePointer(&a, first, 0) == hipSuccess &&
	    eht_hip.hipHostGetDevicePointer(&b, last, 0) == hipSuccess && (char *)b - (char *)a == (ptrdiff_t)(bytes - 1)) {
		*d = (eht_dptr)(uintptr_t)a;
		return 0;
	}
	return -ENOENT;
}

bool eht_dev_is_device_ptr(const void *p)
{
	int type = -1;
	if (!p || eht_hip_load() != 0) {
		eht_err_clear(); /* a query: no runtime means host memory */
		return false;
	}
	if (eht_hip.hipPointerGetAttribute(&type, HIP_POINTER_ATTRIBUTE_MEMORY_TYPE, (hipDeviceptr_t)p) != hipSuccess)
		return false;
	/* ROCm 6 renumbered hipMemoryType (to CUDA's numbers). */
	if (eht_hip_runtime_version() >= EHT_HIP6_VERSION)
		return type == EHT_HIP6_MEMORY_DEVICE || type == EHT_HIP6_MEMORY_MANAGED || type == EHT_HIP6_MEMORY_UNIFIED;
	return type == EHT_HIP5_MEMORY_DEVICE || type == EHT_HIP5_MEMORY_UNIFIED;
}

/* ---- copies and fills */
int eht_dev_h2d(eht_dptr dst, const void *src, size_t n) { return CK(hipMemcpyHtoD, DP(dst), (void *)src, n); }
int eht_dev_d2h(void *dst, eht_dptr src, size_t n) { return CK(hipMemcpyDtoH, dst, DP(src), n); }

int eht_dev_h2d_async(eht_dptr dst, const void *src, size_t n, eht_stream s)
{
	return CK(hipMemcpyHtoDAsync, DP(dst), (void *)src, n, HS(s));
}

int eht_dev_d2h_async(void *dst, eht_dptr src, size_t n, eht_stream s)
{
	return CK(hipMemcpyDtoHAsync, dst, DP(src), n, HS(s));
}

int eht_dev_d2d_async(eht_dptr dst, eht_dptr src, size_t n, eht_stream s)
{
	return CK(hipMemcpyDtoDAsync, DP(dst), DP(src), n, HS(s));
}

int eht_dev_memset8(eht_dptr d, unsigned char v, size_t n) { return CK(hipMemsetD8, DP(d), v, n); }

int eht_dev_memset8_async(eht_dptr d, unsigned char v, size_t n, eht_stream s)
{
	return CK(hipMemsetD8Async, DP(d), v, n, HS(s));
}

int eht_dev_memset32_async(eht_dptr d, uint32_t v, size_t count, eht_stream s)
{
	return CK(hipMemsetD32Async, DP(d), (int)v, count, HS(s));
}

int eht_dev_sync(void) { return CK(hipDeviceSynchronize, ); }

/* ---- streams and events */
int eht_dev_stream_create(eht_stream *s, unsigned flags)
{
	hipStream_t h = NULL;
	int rc = CK(hipStreamCreateWithFlags, &h, (flags & EHT_STREAM_NONBLOCKING) ? hipStreamNonBlocking : hipStreamDefault);
	*s = rc ? NULL : (eht_stream)h;
	return rc;
}

void eht_dev_stream_destroy(eht_stream s)
{
	if (s)
		QUIET(hipStreamDestroy, HS(s));
}

int eht_dev_stream_sync(eht_stream s) { return CK(hipStreamSynchronize, HS(s)); }

int eht_dev_stream_wait_event(eht_stream s, eht_event e) { return CK(hipStreamWaitEvent, HS(s), HE(e), 0); }

int eht_dev_stream_capturing(eht_stream s, bool *capturing)
{
	*capturing = false;
	int rc = eht_hip_load();
	if (rc || !eht_hip_has(EHT_DEV_FEAT_GRAPHS))
		return rc; /* without graphs nothing is ever captured */
	int status = hipStreamCaptureStatusNone;
	rc = CK(hipStreamIsCapturing, HS(s), &status);
	*capturing = !rc && status != hipStreamCaptureStatusNone;
	return rc;
}

int eht_dev_event_create(eht_event *e, unsigned flags)
{
	hipEvent_t h = NULL;
	int rc = CK(hipEventCreateWithFlags, &h, (flags & EHT_EVENT_TIMING) ? hipEventDefault : hipEventDisableTiming);
	*e = rc ? NULL : (eht_event)h;
	return rc;
}

void eht_dev_event_destroy(eht_event e)
{
	if (e)
		QUIET(hipEventDestroy, HE(e));
}

int eht_dev_event_record(eht_event e, eht_stream s) { return CK(hipEventRecord, HE(e), HS(s)); }
int eht_dev_event_sync(eht_event e) { return CK(hipEventSynchronize, HE(e)); }

int eht_dev_event_done(eht_event e)
{
	if (!eht_hip.hipEventQuery)
		return absent("hipEventQuery");
	hipError_t r = eht_hip.hipEventQuery(HE(e));
	if (r == hipErrorNotReady)
		return 0;
	return r == hipSuccess ? 1 : eht_hip_result(r, "hipEventQuery");
}

int eht_dev_event_ms(float *ms, eht_event start, eht_event end)
{
	return CK(hipEventElapsedTime, ms, HE(start), HE(end));
}

/* ---- graphs and host functions */
int eht_dev_capture_begin(eht_stream s, enum eht_capture_mode mode)
{
	int rc = eht_hip_need(EHT_DEV_FEAT_GRAPHS, "stream capture");
	return rc ? rc : CK(hipStreamBeginCapture, HS(s), (int)mode);
}

int eht_dev_capture_end(eht_stream s, eht_graph *g)
{
	hipGraph_t h = NULL;
	int rc = eht_hip_need(EHT_DEV_FEAT_GRAPHS, "stream capture");
	if (!rc)
		rc = CK(hipStreamEndCapture, HS(s), &h);
	*g = (eht_graph)h; /* a failed capture may still hand back a graph to destroy */
	return rc;
}

int eht_dev_graph_instantiate(eht_graph_exec *x, eht_graph g)
{
	hipGraphExec_t h = NULL;
	int rc = eht_hip_need(EHT_DEV_FEAT_GRAPHS, "graph instantiation");
	if (!rc)
		rc = CK(hipGraphInstantiateWithFlags, &h, (hipGraph_t)g, 0);
	*x = rc ? NULL : (eht_graph_exec)h;
	return rc;
}

int eht_dev_graph_launch(eht_graph_exec x, eht_stream s)
{
	int rc = eht_hip_need(EHT_DEV_FEAT_GRAPHS, "graph launch");
	return rc ? rc : CK(hipGraphLaunch, (hipGraphExec_t)x, HS(s));
}

void eht_dev_graph_exec_destroy(eht_graph_exec x)
{
	if (x)
		QUIET(hipGraphExecDestroy, (hipGraphExec_t)x);
}

void eht_dev_graph_destroy(eht_graph g)
{
	if (g)
		QUIET(hipGraphDestroy, (hipGraph_t)g);
}

int eht_dev_host_func(eht_stream s, eht_host_fn fn, void *arg)
{
	int rc = eht_hip_need(EHT_DEV_FEAT_HOST_FUNC, "host function on a stream");
	return rc ? rc : CK(hipLaunchHostFunc, HS(s), fn, arg);
}

/* ---- stream memory ops. HIP's GEQ compares plainly (CUDA's wraps around); eht's words only grow
 * from zero between launches, so both agree. */
int eht_dev_stream_write32(eht_stream s, eht_dptr addr, uint32_t v)
{
	int rc = eht_hip_need(EHT_DEV_FEAT_MEM_OPS, "stream write");
	return rc ? rc : CK(hipStreamWriteValue32, HS(s), DP(addr), v, 0);
}

int eht_dev_stream_wait32(eht_stream s, eht_dptr addr, uint32_t v, enum eht_wait_cond cond)
{
	static const unsigned flags[] = {[EHT_WAIT_GEQ] = hipStreamWaitValueGte, [EHT_WAIT_EQ] = hipStreamWaitValueEq,
					 [EHT_WAIT_AND] = hipStreamWaitValueAnd, [EHT_WAIT_NOR] = hipStreamWaitValueNor};
	int rc = eht_hip_need(EHT_DEV_FEAT_MEM_OPS, "stream wait");
	if (!rc && (cond < EHT_WAIT_GEQ || cond > EHT_WAIT_NOR))
		rc = eht_err(EINVAL, "stream wait: condition %d", (int)cond);
	return rc ? rc : CK(hipStreamWaitValue32, HS(s), DP(addr), v, flags[cond], 0xffffffffu);
}

/* ---- modules and launches: the images are code-object bundles built by hipcc (one per .cu file,
 * every architecture of EHT_HIP_ARCHS); the runtime picks this GPU's. */
int eht_dev_module_load(eht_module *m, const char *image)
{
	*m = NULL;
	const struct eht_fatbin *fb = eht_fatbin_find(image);
	if (!fb)
		return eht_err(ENOTSUP, "%s: this build of libeht has no GPU kernels (hipcc was not found)", image);
	hipModule_t h = NULL;
	int rc = CK(hipModuleLoadData, &h, fb->begin);
	if (rc == -ENOEXEC)
		eht_err_prefix(rc, "kernel image %s has no code for this GPU (rebuild with its gfx name in EHT_HIP_ARCHS)",
			       image);
	if (!rc)
		*m = (eht_module)h;
	return rc;
}

void eht_dev_module_unload(eht_module m)
{
	if (m)
		QUIET(hipModuleUnload, (hipModule_t)m);
}

int eht_dev_kernel(eht_kernel *k, eht_module m, const char *name)
{
	hipFunction_t f = NULL;
	int rc = CK(hipModuleGetFunction, &f, (hipModule_t)m, name);
	*k = rc ? NULL : (eht_kernel)f;
	return rc;
}

int eht_dev_launch(eht_kernel k, unsigned grid, unsigned block, unsigned shmem, eht_stream s, void **args,
		   unsigned flags)
{
	(void)flags; /* (feature PRIORITY is off: hip_rt.c) */
	return CK(hipModuleLaunchKernel, (hipFunction_t)k, grid, 1, 1, block, 1, 1, shmem, HS(s), args, NULL);
}
