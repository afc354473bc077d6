/* SPDX-License-Identifier: Apache-2.0 */
/* dev_cuda.c: the device layer (gpu/dev.h) on the CUDA driver API: each call is one driver call with
 * its result turned into -errno and a message; optional features answer -ENOTSUP when missing. */
#include "gpu/dev.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cuda/cu_driver.h"
#include "gpu/fatbin.h"
#include "util/err.h"

/* Why a driver call cannot be made: no driver (the load's error), or a missing optional entry point. */
static int absent(const char *name)
{
	int rc = eht_cu_load();
	return rc ? rc : eht_err(ENOTSUP, "the CUDA driver lacks %s", name);
}
/* One driver call: loads the driver on first use (its pointer is NULL before), so calling the layer
 * without a driver is an error, never a jump through NULL; the result as 0 or -errno. */
#define CK(name, ...)                                                                                \
	((eht_cu.name || (eht_cu_load() == 0 && eht_cu.name)) ? eht_cu_result(eht_cu.name(__VA_ARGS__), #name) \
							       : absent(#name))
/* Best-effort teardown calls: nothing to do without the entry point. */
#define QUIET(name, ...)                                                                             \
	do {                                                                                         \
		if (eht_cu.name)                                                                     \
			eht_cu.name(__VA_ARGS__);                                                    \
	} while (0)

/* Handles are the driver's own pointers under the layer's opaque types. */
#define CS(s) ((CUstream)(s))
#define CE(e) ((CUevent)(e))

int eht_dev_load(void) { return eht_cu_load(); }
int eht_dev_count(void) { return eht_cu_device_count(); }
int eht_dev_use(int device) { return eht_cu_use_device(device); }

int eht_dev_current(void **ctx, int *device)
{
	int rc = eht_cu_load();
	if (rc)
		return rc;
	CUcontext c = NULL;
	CUdevice d = 0;
	if ((rc = CK(cuCtxGetCurrent, &c)))
		return rc;
	if (c && (rc = CK(cuCtxGetDevice, &d)))
		return rc;
	if (ctx)
		*ctx = c;
	if (device)
		*device = c ? (int)d : -1;
	return 0;
}

bool eht_dev_has(enum eht_dev_feature f) { return eht_cu_has(f); }

static int get_dev(int device, CUdevice *d)
{
	int rc = eht_cu_load();
	return rc ? rc : CK(cuDeviceGet, d, device);
}

int eht_dev_attr(int device, enum eht_dev_attr a, int *value)
{
	static const int map[] = {
		[EHT_DEV_ATTR_SM_COUNT] = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
		[EHT_DEV_ATTR_CC_MAJOR] = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
		[EHT_DEV_ATTR_CC_MINOR] = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
		[EHT_DEV_ATTR_PCI_DOMAIN] = CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
		[EHT_DEV_ATTR_PCI_BUS] = CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
		[EHT_DEV_ATTR_PCI_DEVICE] = CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
		[EHT_DEV_ATTR_HOST_NUMA_ID] = CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID,
		[EHT_DEV_ATTR_HOST_NUMA_VMM] = CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
		[EHT_DEV_ATTR_FABRIC_HANDLES] = CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
		[EHT_DEV_ATTR_FD_HANDLES] = CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
	};
	if ((unsigned)a >= sizeof(map) / sizeof(map[0]))
		return eht_err(EINVAL, "device attribute %d", (int)a);
	CUdevice d;
	int rc = get_dev(device, &d);
	return rc ? rc : CK(cuDeviceGetAttribute, value, map[a], d);
}

int eht_dev_name(int device, char *name, size_t len)
{
	CUdevice d;
	int rc = get_dev(device, &d);
	if (!rc)
		rc = eht_cu_need(EHT_DEV_FEAT_INFO, "device name");
	return rc ? rc : CK(cuDeviceGetName, name, (int)len, d);
}

int eht_dev_total_mem(int device, size_t *bytes)
{
	CUdevice d;
	int rc = get_dev(device, &d);
	if (!rc)
		rc = eht_cu_need(EHT_DEV_FEAT_INFO, "device memory size");
	return rc ? rc : CK(cuDeviceTotalMem, bytes, d);
}

/* Works without a device too (a driver that found none still has a version). */
int eht_dev_driver_version(int *version)
{
	return CK(cuDriverGetVersion, version);
}

/* ---- memory */
int eht_dev_alloc(eht_dptr *d, size_t bytes) { return CK(cuMemAlloc, d, bytes); }

void eht_dev_free(eht_dptr d)
{
	if (d)
		QUIET(cuMemFree, d);
}

static unsigned host_flags(unsigned f, bool reg)
{
	unsigned c = 0;
	if (f & EHT_DEV_HOST_PORTABLE)
		c |= reg ? CU_MEMHOSTREGISTER_PORTABLE : CU_MEMHOSTALLOC_PORTABLE;
	if (f & EHT_DEV_HOST_MAPPED)
		c |= reg ? CU_MEMHOSTREGISTER_DEVICEMAP : CU_MEMHOSTALLOC_DEVICEMAP;
	if (reg && (f & EHT_DEV_HOST_READ_ONLY))
		c |= CU_MEMHOSTREGISTER_READ_ONLY;
	return c;
}

int eht_dev_host_alloc(void **p, size_t bytes, unsigned flags)
{
	return CK(cuMemHostAlloc, p, bytes, host_flags(flags, false));
}

void eht_dev_host_free(void *p)
{
	if (p)
		QUIET(cuMemFreeHost, p);
}

int eht_dev_host_register(void *p, size_t bytes, unsigned flags)
{
	int rc = eht_cu_need(EHT_DEV_FEAT_PIN, "pinning host memory");
	return rc ? rc : CK(cuMemHostRegister, p, bytes, host_flags(flags, true));
}

int eht_dev_host_unregister(void *p)
{
	int rc = eht_cu_need(EHT_DEV_FEAT_PIN, "unpinning host memory");
	return rc ? rc : CK(cuMemHostUnregister, p);
}

int eht_dev_host_dptr(eht_dptr *d, void *p) { return CK(cuMemHostGetDevicePointer, d, p, 0); }

int eht_dev_host_mapped(const void *p, size_t bytes, eht_dptr *d)
{
	if (!p || !bytes || eht_cu_load() != 0) {
		eht_err_clear();
		return !p || !bytes ? -ENOENT : -ENODEV;
	}
	void *first = (void *)(uintptr_t)p, *last = (char *)first + bytes - 1;
	CUdeviceptr a = 0, b = 0;
	/* Pinned memory: its device address from either end, one contiguous range (registered in chunks
	 * by eht_gpu_pin, or by the engine). */
	if (eht_cu.cuMemHostGetDevicePointer(&a, first, 0) == CUDA_SUCCESS &&
	    eht_cu.cuMemHostGetDevicePointer(&b, last, 0) == CUDA_SUCCESS && b - a == bytes - 1) {
		*d = a;
		return 0;
	}
	/* A cuMem mapping (host-NUMA, as vLLM's and eht's own shared tables are): the GPU reads it at the
	 * CPU's address once access was granted to this device. */
	CUdevice dev = 0;
	unsigned long long fa = 0, fb = 0;
	if (eht_cu.cuMemGetAccess && eht_cu.cuCtxGetDevice(&dev) == CUDA_SUCCESS) {
		CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
		if (eht_cu.cuMemGetAccess(&fa, &loc, (CUdeviceptr)(uintptr_t)first) == CUDA_SUCCESS &&
		    eht_cu.cuMemGetAccess(&fb, &loc, (CUdeviceptr)(uintptr_t)last) == CUDA_SUCCESS &&
		    (fa & CU_MEM_ACCESS_FLAGS_PROT_READ) && (fb & CU_MEM_ACCESS_FLAGS_PROT_READ)) {
			*d = (eht_dptr)(uintptr_t)p;
			return 0;
		}
	}
	return -ENOENT;
}

bool eht_dev_is_device_ptr(const void *p)
{
	unsigned int type = 0;
	if (!p || eht_cu_load() != 0) {
		eht_err_clear(); /* a query: no driver means host memory */
		return false;
	}
	CUresult r = eht_cu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p);
	return r == CUDA_SUCCESS && (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED);
}

/* ---- copies and fills */
int eht_dev_h2d(eht_dptr dst, const void *src, size_t n) { return CK(cuMemcpyHtoD, dst, src, n); }
int eht_dev_d2h(void *dst, eht_dptr src, size_t n) { return CK(cuMemcpyDtoH, dst, src, n); }

int eht_dev_h2d_async(eht_dptr dst, const void *src, size_t n, eht_stream s)
{
	return CK(cuMemcpyHtoDAsync, dst, src, n, CS(s));
}

int eht_dev_d2h_async(void *dst, eht_dptr src, size_t n, eht_stream s)
{
	return CK(cuMemcpyDtoHAsync, dst, src, n, CS(s));
}

int eht_dev_d2d_async(eht_dptr dst, eht_dptr src, size_t n, eht_stream s)
{
	return CK(cuMemcpyDtoDAsync, dst, src, n, CS(s));
}

int eht_dev_memset8(eht_dptr d, unsigned char v, size_t n) { return CK(cuMemsetD8, d, v, n); }

int eht_dev_memset8_async(eht_dptr d, unsigned char v, size_t n, eht_stream s)
{
	return CK(cuMemsetD8Async, d, v, n, CS(s));
}

int eht_dev_memset32_async(eht_dptr d, uint32_t v, size_t count, eht_stream s)
{
	return CK(cuMemsetD32Async, d, v, count, CS(s));
}

int eht_dev_sync(void) { return CK(cuCtxSynchronize, ); }

/* ---- streams and events */
int eht_dev_stream_create(eht_stream *s, unsigned flags)
{
	CUstream c = NULL;
	int rc = CK(cuStreamCreate, &c, (flags & EHT_STREAM_NONBLOCKING) ? CU_STREAM_NON_BLOCKING : 0);
	*s = rc ? NULL : (eht_stream)c;
	return rc;
}

void eht_dev_stream_destroy(eht_stream s)
{
	if (s)
		QUIET(cuStreamDestroy, CS(s));
}

int eht_dev_stream_sync(eht_stream s) { return CK(cuStreamSynchronize, CS(s)); }

int eht_dev_stream_wait_event(eht_stream s, eht_event e) { return CK(cuStreamWaitEvent, CS(s), CE(e), 0); }

int eht_dev_stream_capturing(eht_stream s, bool *capturing)
{
	int status = CU_STREAM_CAPTURE_STATUS_NONE;
	int rc = CK(cuStreamIsCapturing, CS(s), &status);
	*capturing = !rc && status != CU_STREAM_CAPTURE_STATUS_NONE;
	return rc;
}

int eht_dev_event_create(eht_event *e, unsigned flags)
{
	CUevent c = NULL;
	int rc = CK(cuEventCreate, &c, (flags & EHT_EVENT_TIMING) ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
	*e = rc ? NULL : (eht_event)c;
	return rc;
}

void eht_dev_event_destroy(eht_event e)
{
	if (e)
		QUIET(cuEventDestroy, CE(e));
}

int eht_dev_event_record(eht_event e, eht_stream s) { return CK(cuEventRecord, CE(e), CS(s)); }
int eht_dev_event_sync(eht_event e) { return CK(cuEventSynchronize, CE(e)); }

int eht_dev_event_done(eht_event e)
{
	if (!eht_cu.cuEventQuery)
		return absent("cuEventQuery");
	CUresult r = eht_cu.cuEventQuery(CE(e));
	if (r == CUDA_ERROR_NOT_READY)
		return 0;
	return r == CUDA_SUCCESS ? 1 : eht_cu_result(r, "cuEventQuery");
}

int eht_dev_event_ms(float *ms, eht_event start, eht_event end)
{
	return CK(cuEventElapsedTime, ms, CE(start), CE(end));
}

/* ---- graphs and host functions */
int eht_dev_capture_begin(eht_stream s, enum eht_capture_mode mode)
{
	int rc = eht_cu_need(EHT_DEV_FEAT_GRAPHS, "stream capture");
	return rc ? rc : CK(cuStreamBeginCapture, CS(s), (int)mode);
}

int eht_dev_capture_end(eht_stream s, eht_graph *g)
{
	CUgraph c = NULL;
	int rc = eht_cu_need(EHT_DEV_FEAT_GRAPHS, "stream capture");
	if (!rc)
		rc = CK(cuStreamEndCapture, CS(s), &c);
	*g = (eht_graph)c; /* a failed capture may still hand back a graph to destroy */
	return rc;
}

int eht_dev_graph_instantiate(eht_graph_exec *x, eht_graph g)
{
	CUgraphExec c = NULL;
	int rc = eht_cu_need(EHT_DEV_FEAT_GRAPHS, "graph instantiation");
	if (!rc)
		rc = CK(cuGraphInstantiateWithFlags, &c, (CUgraph)g, 0);
	*x = rc ? NULL : (eht_graph_exec)c;
	return rc;
}

int eht_dev_graph_launch(eht_graph_exec x, eht_stream s)
{
	int rc = eht_cu_need(EHT_DEV_FEAT_GRAPHS, "graph launch");
	return rc ? rc : CK(cuGraphLaunch, (CUgraphExec)x, CS(s));
}

void eht_dev_graph_exec_destroy(eht_graph_exec x)
{
	if (x)
		QUIET(cuGraphExecDestroy, (CUgraphExec)x);
}

void eht_dev_graph_destroy(eht_graph g)
{
	if (g)
		QUIET(cuGraphDestroy, (CUgraph)g);
}

int eht_dev_host_func(eht_stream s, eht_host_fn fn, void *arg)
{
	int rc = eht_cu_need(EHT_DEV_FEAT_HOST_FUNC, "host function on a stream");
	return rc ? rc : CK(cuLaunchHostFunc, CS(s), fn, arg);
}

/* ---- stream memory ops */
int eht_dev_stream_write32(eht_stream s, eht_dptr addr, uint32_t v)
{
	int rc = eht_cu_need(EHT_DEV_FEAT_MEM_OPS, "stream write");
	return rc ? rc : CK(cuStreamWriteValue32, CS(s), addr, v, CU_STREAM_WRITE_VALUE_DEFAULT);
}

int eht_dev_stream_wait32(eht_stream s, eht_dptr addr, uint32_t v, enum eht_wait_cond cond)
{
	int rc = eht_cu_need(EHT_DEV_FEAT_MEM_OPS, "stream wait");
	if (!rc && (cond < EHT_WAIT_GEQ || cond > EHT_WAIT_NOR))
		rc = eht_err(EINVAL, "stream wait: condition %d", (int)cond);
	return rc ? rc : CK(cuStreamWaitValue32, CS(s), addr, v, (unsigned)cond);
}

/* ---- modules and launches */
int eht_dev_module_load(eht_module *m, const char *image)
{
	*m = NULL;
	const struct eht_fatbin *fb = eht_fatbin_find(image);
	if (!fb)
		return eht_err(ENOTSUP, "%s: this build of libeht has no GPU kernels (nvcc was not found)", image);
	CUmodule c = NULL;
	int rc = CK(cuModuleLoadData, &c, fb->begin);
	if (!rc)
		*m = (eht_module)c;
	return rc;
}

void eht_dev_module_unload(eht_module m)
{
	if (m)
		QUIET(cuModuleUnload, (CUmodule)m);
}

int eht_dev_kernel(eht_kernel *k, eht_module m, const char *name)
{
	CUfunction f = NULL;
	int rc = CK(cuModuleGetFunction, &f, (CUmodule)m, name);
	*k = rc ? NULL : (eht_kernel)f;
	return rc;
}

/* The current context's greatest stream priority (the lowest number), read once: 0 (the default
 * priority) where it cannot be read. */
static int greatest_priority(void)
{
	static _Atomic int cached = 1; /* 1: not read yet (priorities are <= 0) */
	int p = atomic_load_explicit(&cached, memory_order_relaxed);
	if (p == 1) {
		int least = 0, greatest = 0;
		if (eht_cu.cuCtxGetStreamPriorityRange(&least, &greatest) != CUDA_SUCCESS)
			greatest = 0;
		p = greatest <= 0 ? greatest : 0;
		atomic_store_explicit(&cached, p, memory_order_relaxed);
	}
	return p;
}

int eht_dev_launch(eht_kernel k, unsigned grid, unsigned block, unsigned shmem, eht_stream s, void **args,
		   unsigned flags)
{
	if (!(flags & EHT_LAUNCH_URGENT) || !eht_cu_has(EHT_DEV_FEAT_PRIORITY))
		return CK(cuLaunchKernel, (CUfunction)k, grid, 1, 1, block, 1, 1, shmem, CS(s), args, NULL);
	CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_PRIORITY, .value.priority = greatest_priority()};
	CUlaunchConfig cfg = {.gridDimX = grid, .gridDimY = 1, .gridDimZ = 1, .blockDimX = block, .blockDimY = 1,
			      .blockDimZ = 1, .sharedMemBytes = shmem, .hStream = CS(s), .attrs = &attr, .numAttrs = 1};
	return CK(cuLaunchKernelEx, &cfg, (CUfunction)k, args, NULL);
}
