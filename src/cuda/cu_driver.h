/* SPDX-License-Identifier: Apache-2.0 */
/* cu_driver.h: the CUDA driver, loaded at run time (dlopen libcuda.so.1 + cuGetProcAddress).
 * libeht has no link-time dependency on libcuda or libcudart: without a driver these calls report
 * -ENODEV and every CPU path keeps working. */
#ifndef EHT_CUDA_CU_DRIVER_H
#define EHT_CUDA_CU_DRIVER_H

#include "cuda/cu_types.h"

/* X(name, return-less parameter list). Each becomes a function pointer eht_cu.name. */
#define EHT_CU_FUNCS(X)                                                                              \
	X(cuInit, (unsigned int flags))                                                              \
	X(cuDriverGetVersion, (int *version))                                                        \
	X(cuGetErrorName, (CUresult error, const char **str))                                        \
	X(cuGetErrorString, (CUresult error, const char **str))                                      \
	X(cuDeviceGetCount, (int *count))                                                            \
	X(cuDeviceGet, (CUdevice *dev, int ordinal))                                                 \
	X(cuDeviceGetName, (char *name, int len, CUdevice dev))                                      \
	X(cuDeviceGetAttribute, (int *pi, int attrib, CUdevice dev))                                 \
	X(cuDeviceTotalMem, (size_t *bytes, CUdevice dev))                                           \
	X(cuDeviceGetPCIBusId, (char *pciBusId, int len, CUdevice dev))                              \
	X(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev))                                 \
	X(cuDevicePrimaryCtxRelease, (CUdevice dev))                                                 \
	X(cuCtxSetCurrent, (CUcontext ctx))                                                          \
	X(cuCtxGetCurrent, (CUcontext *pctx))                                                        \
	X(cuCtxGetDevice, (CUdevice *device))                                                        \
	X(cuCtxSynchronize, (void))                                                                  \
	X(cuMemGetInfo, (size_t *free, size_t *total))                                               \
	X(cuMemAlloc, (CUdeviceptr *dptr, size_t bytesize))                                          \
	X(cuMemFree, (CUdeviceptr dptr))                                                             \
	X(cuMemAllocHost, (void **pp, size_t bytesize))                                              \
	X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int flags))                          \
	X(cuMemFreeHost, (void *p))                                                                  \
	X(cuMemHostRegister, (void *p, size_t bytesize, unsigned int flags))                         \
	X(cuMemHostUnregister, (void *p))                                                            \
	X(cuMemHostGetDevicePointer, (CUdeviceptr * pdptr, void *p, unsigned int flags))             \
	X(cuMemcpyHtoD, (CUdeviceptr dst, const void *src, size_t n))                                \
	X(cuMemcpyDtoH, (void *dst, CUdeviceptr src, size_t n))                                      \
	X(cuMemcpyHtoDAsync, (CUdeviceptr dst, const void *src, size_t n, CUstream s))               \
	X(cuMemcpyDtoHAsync, (void *dst, CUdeviceptr src, size_t n, CUstream s))                     \
	X(cuMemcpyDtoDAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s))               \
	X(cuMemsetD8, (CUdeviceptr dst, unsigned char uc, size_t n))                                 \
	X(cuMemsetD8Async, (CUdeviceptr dst, unsigned char uc, size_t n, CUstream s))                \
	X(cuMemsetD32Async, (CUdeviceptr dst, unsigned int ui, size_t n, CUstream s))                \
	X(cuPointerGetAttribute, (void *data, int attribute, CUdeviceptr ptr))                       \
	X(cuStreamCreate, (CUstream * s, unsigned int flags))                                        \
	X(cuStreamDestroy, (CUstream s))                                                             \
	X(cuStreamSynchronize, (CUstream s))                                                         \
	X(cuStreamQuery, (CUstream s))                                                               \
	X(cuStreamWaitEvent, (CUstream s, CUevent e, unsigned int flags))                            \
	X(cuStreamIsCapturing, (CUstream s, int *status))                                            \
	X(cuStreamBeginCapture, (CUstream s, int mode))                                              \
	X(cuStreamEndCapture, (CUstream s, CUgraph * graph))                                         \
	X(cuGraphInstantiateWithFlags, (CUgraphExec * exec, CUgraph graph, unsigned long long flags)) \
	X(cuGraphLaunch, (CUgraphExec exec, CUstream s))                                             \
	X(cuGraphExecDestroy, (CUgraphExec exec))                                                    \
	X(cuGraphDestroy, (CUgraph graph))                                                           \
	X(cuLaunchHostFunc, (CUstream s, CUhostFn fn, void *userData))                               \
	X(cuEventCreate, (CUevent * e, unsigned int flags))                                          \
	X(cuEventDestroy, (CUevent e))                                                               \
	X(cuEventRecord, (CUevent e, CUstream s))                                                    \
	X(cuEventSynchronize, (CUevent e))                                                           \
	X(cuEventQuery, (CUevent e))                                                                 \
	X(cuEventElapsedTime, (float *ms, CUevent start, CUevent end))                               \
	X(cuModuleLoadData, (CUmodule * module, const void *image))                                  \
	X(cuModuleUnload, (CUmodule module))                                                         \
	X(cuModuleGetFunction, (CUfunction * fn, CUmodule module, const char *name))                 \
	X(cuFuncSetAttribute, (CUfunction fn, int attrib, int value))                                \
	X(cuLaunchKernel, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,         \
			   unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,      \
			   void **extra))                                                            \
	X(cuMemGetAllocationGranularity,                                                             \
	  (size_t *granularity, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags o)) \
	X(cuMemCreate, (CUmemGenericAllocationHandle * handle, size_t size,                         \
			const CUmemAllocationProp *prop, unsigned long long flags))                  \
	X(cuMemRelease, (CUmemGenericAllocationHandle handle))                                       \
	X(cuMemExportToShareableHandle, (void *shareableHandle, CUmemGenericAllocationHandle handle, \
					 CUmemAllocationHandleType handleType,                       \
					 unsigned long long flags))                                  \
	X(cuMemImportFromShareableHandle, (CUmemGenericAllocationHandle * handle, void *osHandle,   \
					   CUmemAllocationHandleType shHandleType))                  \
	X(cuMemAddressReserve, (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, \
				unsigned long long flags))                                           \
	X(cuMemAddressFree, (CUdeviceptr ptr, size_t size))                                          \
	X(cuMemMap, (CUdeviceptr ptr, size_t size, size_t offset,                                   \
		     CUmemGenericAllocationHandle handle, unsigned long long flags))                 \
	X(cuMemUnmap, (CUdeviceptr ptr, size_t size))                                                \
	X(cuMemSetAccess, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count))

#define EHT_CU_DECLARE(name, params) CUresult (*name) params;
struct eht_cu_api {
	EHT_CU_FUNCS(EHT_CU_DECLARE)
};
#undef EHT_CU_DECLARE

/* Function pointers; valid once eht_cu_load() returned 0. */
extern struct eht_cu_api eht_cu;

/* Loads the driver and calls cuInit once per process (thread-safe). Returns 0; -ENODEV when
 * libcuda.so.1 is missing or cuInit fails (no device), -ENOSYS when an entry point is missing.
 * The first failure is logged once at info level; the result is cached. */
int eht_cu_load(void);
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
