/* SPDX-License-Identifier: Apache-2.0 */
/* hip_rt.h: the ROCm HIP runtime (libamdhip64.so), loaded at run time with dlopen + dlsym, for the HIP
 * backend of the device layer (src/gpu/hip/) only: everything else calls gpu/dev.h. libeht has no
 * link-time dependency on ROCm: without a runtime these calls report -ENODEV and every CPU path keeps
 * working. Built instead of src/gpu/cuda/ with -DEHT_GPU_BACKEND=hip (cmake/gpu_backend.cmake). */
#ifndef EHT_GPU_HIP_HIP_RT_H
#define EHT_GPU_HIP_HIP_RT_H

#include "gpu/dev.h"
#include "gpu/hip/hip_types.h"

/* X(name, feature, parameter list): a function pointer eht_hip.name. CORE entries are mandatory
 * (eht_hip_load fails without one); any other is optional: when the runtime lacks it the pointer
 * stays NULL and only that feature (gpu/dev.h) is off. */
#define EHT_HIP_FUNCS(X) \
	X(hipInit, CORE, (unsigned int flags)) \
	X(hipRuntimeGetVersion, CORE, (int *version)) \
	X(hipDriverGetVersion, INFO, (int *version)) \
	X(hipGetDeviceCount, CORE, (int *count)) \
	X(hipDeviceGet, INFO, (hipDevice_t * dev, int ordinal)) \
	X(hipDeviceGetName, INFO, (char *name, int len, hipDevice_t dev)) \
	X(hipDeviceTotalMem, INFO, (size_t *bytes, hipDevice_t dev)) \
	X(hipDeviceGetAttribute, CORE, (int *value, int attr, int device)) \
	X(hipSetDevice, CORE, (int device)) \
	X(hipGetDevice, CORE, (int *device)) \
	X(hipDeviceSynchronize, CORE, (void)) \
	X(hipMalloc, CORE, (void **p, size_t bytes)) \
	X(hipFree, CORE, (void *p)) \
	X(hipHostMalloc, CORE, (void **p, size_t bytes, unsigned int flags)) \
	X(hipHostFree, CORE, (void *p)) \
	X(hipHostRegister, PIN, (void *p, size_t bytes, unsigned int flags)) \
	X(hipHostUnregister, PIN, (void *p)) \
	X(hipHostGetDevicePointer, CORE, (void **dptr, void *p, unsigned int flags)) \
	X(hipPointerGetAttribute, CORE, (void *data, int attribute, hipDeviceptr_t ptr)) \
	X(hipMemcpyHtoD, CORE, (hipDeviceptr_t dst, void *src, size_t n)) \
	X(hipMemcpyDtoH, CORE, (void *dst, hipDeviceptr_t src, size_t n)) \
	X(hipMemcpyHtoDAsync, CORE, (hipDeviceptr_t dst, void *src, size_t n, hipStream_t s)) \
	X(hipMemcpyDtoHAsync, CORE, (void *dst, hipDeviceptr_t src, size_t n, hipStream_t s)) \
	X(hipMemcpyDtoDAsync, CORE, (hipDeviceptr_t dst, hipDeviceptr_t src, size_t n, hipStream_t s)) \
	X(hipMemsetD8, CORE, (hipDeviceptr_t dst, unsigned char v, size_t n)) \
	X(hipMemsetD8Async, CORE, (hipDeviceptr_t dst, unsigned char v, size_t n, hipStream_t s)) \
	X(hipMemsetD32Async, CORE, (hipDeviceptr_t dst, int v, size_t count, hipStream_t s)) \
	X(hipStreamCreateWithFlags, CORE, (hipStream_t * s, unsigned int flags)) \
	X(hipStreamDestroy, CORE, (hipStream_t s)) \
	X(hipStreamSynchronize, CORE, (hipStream_t s)) \
	X(hipStreamWaitEvent, CORE, (hipStream_t s, hipEvent_t e, unsigned int flags)) \
	X(hipStreamIsCapturing, GRAPHS, (hipStream_t s, int *status)) \
	X(hipStreamBeginCapture, GRAPHS, (hipStream_t s, int mode)) \
	X(hipStreamEndCapture, GRAPHS, (hipStream_t s, hipGraph_t * graph)) \
	X(hipGraphInstantiateWithFlags, GRAPHS, (hipGraphExec_t * exec, hipGraph_t graph, unsigned long long flags)) \
	X(hipGraphLaunch, GRAPHS, (hipGraphExec_t exec, hipStream_t s)) \
	X(hipGraphExecDestroy, GRAPHS, (hipGraphExec_t exec)) \
	X(hipGraphDestroy, GRAPHS, (hipGraph_t graph)) \
	X(hipLaunchHostFunc, HOST_FUNC, (hipStream_t s, hipHostFn_t fn, void *arg)) \
	X(hipEventCreateWithFlags, CORE, (hipEvent_t * e, unsigned int flags)) \
	X(hipEventDestroy, CORE, (hipEvent_t e)) \
	X(hipEventRecord, CORE, (hipEvent_t e, hipStream_t s)) \
	X(hipEventSynchronize, CORE, (hipEvent_t e)) \
	X(hipEventQuery, CORE, (hipEvent_t e)) \
	X(hipEventElapsedTime, CORE, (float *ms, hipEvent_t start, hipEvent_t end)) \
	X(hipModuleLoadData, CORE, (hipModule_t * module, const void *image)) \
	X(hipModuleUnload, CORE, (hipModule_t module)) \
	X(hipModuleGetFunction, CORE, (hipFunction_t * fn, hipModule_t module, const char *name)) \
	X(hipModuleLaunchKernel, CORE, (hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, \
				       unsigned by, unsigned bz, unsigned shmem, hipStream_t s, void **params, \
				       void **extra)) \
	X(hipStreamWriteValue32, MEM_OPS, (hipStream_t s, void *addr, uint32_t value, unsigned int flags)) \
	X(hipStreamWaitValue32, MEM_OPS, (hipStream_t s, void *addr, uint32_t value, unsigned int flags, \
					  uint32_t mask))

/* The two entry points that return a string, not a hipError_t (feature INFO). */
typedef const char *(*eht_hip_str_fn)(hipError_t e);

#define EHT_HIP_DECLARE(name, feature, params) hipError_t (*name) params;
struct eht_hip_api {
	EHT_HIP_FUNCS(EHT_HIP_DECLARE)
	eht_hip_str_fn hipGetErrorName, hipGetErrorString;
};
#undef EHT_HIP_DECLARE

/* Function pointers; valid once eht_hip_load() returned 0 (optional ones may be NULL). */
extern struct eht_hip_api eht_hip;

/* Loads the runtime and calls hipInit once per process (thread-safe): EHT_HIP_RUNTIME (a build option,
 * libamdhip64.so by default), then the sonames of ROCm 7, 6 and 5, then /opt/rocm/lib. Returns 0;
 * -ENODEV when no runtime loads, hipInit fails or finds no device, or EHT_NO_CUDA=1 (the GPU switch of
 * every backend); -ENOSYS when a mandatory entry point is missing. The first failure is logged once at
 * info level; the result is cached. */
int eht_hip_load(void);
/* Whether feature f is on (false before a successful load; VMM is never on: see vmm_hip.c). */
bool eht_hip_has(enum eht_dev_feature f);
/* 0 when feature f is on; else -ENOTSUP with "<what>: the HIP runtime lacks <entry point> (GPU feature
 * <f> off)", logged once per feature at info level. */
int eht_hip_need(enum eht_dev_feature f, const char *what);
/* Number of devices, or 0 without a runtime or device (a query: leaves no error text). */
int eht_hip_device_count(void);
/* hipRuntimeGetVersion's answer (50221153 for ROCm 5.2), 0 before a load. */
int eht_hip_runtime_version(void);

/* A failed hipError_t as -errno with the message "<call> failed: <hipErrorName> (<text>)"; 0 for
 * hipSuccess. */
int eht_hip_result(hipError_t r, const char *call);
const char *eht_hip_error_name(hipError_t r);

#endif
