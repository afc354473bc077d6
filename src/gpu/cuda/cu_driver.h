/* SPDX-License-Identifier: Apache-2.0 */
/* cu_driver.h: the CUDA driver, loaded at run time (dlopen libcuda.so.1 + cuGetProcAddress), for the
 * CUDA backend of the device layer (src/gpu/cuda/) only: everything else calls gpu/dev.h.
 * libeht has no link-time dependency on libcuda or libcudart: without a driver these calls report
 * -ENODEV and every CPU path keeps working. */
#ifndef EHT_CUDA_CU_DRIVER_H
#define EHT_CUDA_CU_DRIVER_H

#include "gpu/cuda/cu_types.h"
#include "gpu/dev.h"

/* X(name, feature, return-less parameter list). Each becomes a function pointer eht_cu.name; feature
 * CORE entries are mandatory (eht_cu_load fails without one), any other entry is optional: when the
 * driver lacks it the pointer stays NULL and only that feature (gpu/dev.h) is off. */
#define EHT_CU_FUNCS(X) \
	X(cuInit, CORE, (unsigned int flags)) \
	X(cuDriverGetVersion, INFO, (int *version)) \
	X(cuGetErrorName, INFO, (CUresult error, const char **str)) \
	X(cuGetErrorString, INFO, (CUresult error, const char **str)) \
	X(cuDeviceGetCount, CORE, (int *count)) \
	X(cuDeviceGet, CORE, (CUdevice *dev, int ordinal)) \
	X(cuDeviceGetName, INFO, (char *name, int len, CUdevice dev)) \
	X(cuDeviceGetAttribute, CORE, (int *pi, int attrib, CUdevice dev)) \
	X(cuDeviceTotalMem, INFO, (size_t *bytes, CUdevice dev)) \
	X(cuDevicePrimaryCtxRetain, CORE, (CUcontext *pctx, CUdevice dev)) \
	X(cuCtxSetCurrent, CORE, (CUcontext ctx)) \
	X(cuCtxGetCurrent, CORE, (CUcontext *pctx)) \
	X(cuCtxGetDevice, CORE, (CUdevice *device)) \
	X(cuCtxSynchronize, CORE, (void)) \
	X(cuMemAlloc, CORE, (CUdeviceptr *dptr, size_t bytesize)) \
	X(cuMemFree, CORE, (CUdeviceptr dptr)) \
	X(cuMemHostAlloc, CORE, (void **pp, size_t bytesize, unsigned int flags)) \
	X(cuMemFreeHost, CORE, (void *p)) \
	X(cuMemHostRegister, PIN, (void *p, size_t bytesize, unsigned int flags)) \
	X(cuMemHostUnregister, PIN, (void *p)) \
	X(cuMemHostGetDevicePointer, CORE, (CUdeviceptr * pdptr, void *p, unsigned int flags)) \
	X(cuMemcpyHtoD, CORE, (CUdeviceptr dst, const void *src, size_t n)) \
	X(cuMemcpyDtoH, CORE, (void *dst, CUdeviceptr src, size_t n)) \
	X(cuMemcpyHtoDAsync, CORE, (CUdeviceptr dst, const void *src, size_t n, CUstream s)) \
	X(cuMemcpyDtoHAsync, CORE, (void *dst, CUdeviceptr src, size_t n, CUstream s)) \
	X(cuMemcpyDtoDAsync, CORE, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)) \
	X(cuMemsetD8, CORE, (CUdeviceptr dst, unsigned char uc, size_t n)) \
	X(cuMemsetD8Async, CORE, (CUdeviceptr dst, unsigned char uc, size_t n, CUstream s)) \
	X(cuMemsetD32Async, CORE, (CUdeviceptr dst, unsigned int ui, size_t n, CUstream s)) \
	X(cuPointerGetAttribute, CORE, (void *data, int attribute, CUdeviceptr ptr)) \
	X(cuStreamCreate, CORE, (CUstream * s, unsigned int flags)) \
	X(cuStreamDestroy, CORE, (CUstream s)) \
	X(cuStreamSynchronize, CORE, (CUstream s)) \
	X(cuStreamWaitEvent, CORE, (CUstream s, CUevent e, unsigned int flags)) \
	X(cuStreamIsCapturing, CORE, (CUstream s, int *status)) \
	X(cuStreamBeginCapture, GRAPHS, (CUstream s, int mode)) \
	X(cuStreamEndCapture, GRAPHS, (CUstream s, CUgraph * graph)) \
	X(cuGraphInstantiateWithFlags, GRAPHS, (CUgraphExec * exec, CUgraph graph, unsigned long long flags)) \
	X(cuGraphLaunch, GRAPHS, (CUgraphExec exec, CUstream s)) \
	X(cuGraphExecDestroy, GRAPHS, (CUgraphExec exec)) \
	X(cuGraphDestroy, GRAPHS, (CUgraph graph)) \
	X(cuLaunchHostFunc, HOST_FUNC, (CUstream s, CUhostFn fn, void *userData)) \
	X(cuEventCreate, CORE, (CUevent * e, unsigned int flags)) \
	X(cuEventDestroy, CORE, (CUevent e)) \
	X(cuEventRecord, CORE, (CUevent e, CUstream s)) \
	X(cuEventSynchronize, CORE, (CUevent e)) \
	X(cuEventQuery, CORE, (CUevent e)) \
	X(cuEventElapsedTime, CORE, (float *ms, CUevent start, CUevent end)) \
	X(cuModuleLoadData, CORE, (CUmodule * module, const void *image)) \
	X(cuModuleUnload, CORE, (CUmodule module)) \
	X(cuModuleGetFunction, CORE, (CUfunction * fn, CUmodule module, const char *name)) \
	X(cuLaunchKernel, CORE, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, \
			   unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params, \
			   void **extra)) \
	X(cuMemGetAllocationGranularity, VMM, \
	  (size_t *granularity, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags o)) \
	X(cuMemCreate, VMM, (CUmemGenericAllocationHandle * handle, size_t size, \
			const CUmemAllocationProp *prop, unsigned long long flags)) \
	X(cuMemRelease, VMM, (CUmemGenericAllocationHandle handle)) \
	X(cuMemRetainAllocationHandle, VMM, (CUmemGenericAllocationHandle * handle, void *addr)) \
	X(cuMemExportToShareableHandle, VMM, (void *shareableHandle, CUmemGenericAllocationHandle handle, \
					 CUmemAllocationHandleType handleType, \
					 unsigned long long flags)) \
	X(cuMemImportFromShareableHandle, VMM, (CUmemGenericAllocationHandle * handle, void *osHandle, \
					   CUmemAllocationHandleType shHandleType)) \
	X(cuMemAddressReserve, VMM, (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, \
				unsigned long long flags)) \
	X(cuMemAddressFree, VMM, (CUdeviceptr ptr, size_t size)) \
	X(cuMemMap, VMM, (CUdeviceptr ptr, size_t size, size_t offset, \
		     CUmemGenericAllocationHandle handle, unsigned long long flags)) \
	X(cuMemUnmap, VMM, (CUdeviceptr ptr, size_t size)) \
	X(cuMemSetAccess, VMM, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)) \
	X(cuMemGetAccess, VMM, (unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)) \
	X(cuStreamWriteValue32, MEM_OPS, (CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags)) \
	X(cuStreamWaitValue32, MEM_OPS, (CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags)) \
	X(cuCtxGetStreamPriorityRange, PRIORITY, (int *least, int *greatest)) \
	X(cuLaunchKernelEx, PRIORITY, (const CUlaunchConfig *config, CUfunction f, void **params, void **extra))

#define EHT_CU_DECLARE(name, feature, params) CUresult (*name) params;
struct eht_cu_api {
	EHT_CU_FUNCS(EHT_CU_DECLARE)
};
#undef EHT_CU_DECLARE

/* Function pointers; valid once eht_cu_load() returned 0 (optional ones may be NULL: test with
 * eht_cu_feature). */
extern struct eht_cu_api eht_cu;

/* Loads the driver and calls cuInit once per process (thread-safe). Returns 0; -ENODEV when
 * libcuda.so.1 is missing or cuInit fails (no device), -ENOSYS when a mandatory entry point is
 * missing. The first failure is logged once at info level; the result is cached. EHT_TEST_CU_HIDE (a
 * comma-separated list of entry points) makes the loader treat those as missing (tests). */
int eht_cu_load(void);
/* Whether every entry point of feature f resolved (false before a successful load). */
bool eht_cu_has(enum eht_dev_feature f);
/* 0 when feature f is on; else -ENOTSUP with "<what>: the CUDA driver lacks <entry point> (<feature>
 * off)", logged once per feature at info level. */
int eht_cu_need(enum eht_dev_feature f, const char *what);
/* Number of CUDA devices, or 0 when there is no driver or no device. */
int eht_cu_device_count(void);

/* Turns a failed CUresult into -errno with the message "<call>: <CUDA_ERROR_NAME> (<text>)"; 0 for
 * CUDA_SUCCESS. Use as: rc = EHT_CU_CHECK(cuMemAlloc(&p, n)); */
int eht_cu_result(CUresult r, const char *call);
#define EHT_CU_CHECK(call) eht_cu_result(eht_cu.call, #call)
/* Name of a CUresult ("CUDA_ERROR_NOT_PERMITTED"), "unknown" when the driver cannot say. */
const char *eht_cu_error_name(CUresult r);

/* Makes the primary context of device ordinal `device` current on this thread (retaining it once
 * per process and device). Returns 0, -ENODEV or a driver error. */
int eht_cu_use_device(int device);

#endif
