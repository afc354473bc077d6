/* SPDX-License-Identifier: Apache-2.0 */
/* hip_types.h: the subset of the HIP runtime API's types and constants eht uses, declared here so that
 * libeht builds without ROCm. tests/fake_hip/test_hip_abi.c checks them against hip_runtime_api.h
 * where it is installed. Values as in ROCm 5.2 to 7 (the memory types changed in 6.0: both kept). */
#ifndef EHT_GPU_HIP_HIP_TYPES_H
#define EHT_GPU_HIP_HIP_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef int hipError_t;
typedef int hipDevice_t;
typedef void *hipDeviceptr_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipGraph *hipGraph_t;
typedef struct hipGraphExec *hipGraphExec_t;
typedef void (*hipHostFn_t)(void *userData);

enum {
	hipSuccess = 0,
	hipErrorInvalidValue = 1,
	hipErrorOutOfMemory = 2,
	hipErrorNotInitialized = 3,
	hipErrorInvalidDevicePointer = 17,
	hipErrorInsufficientDriver = 35,
	hipErrorNoDevice = 100,
	hipErrorInvalidDevice = 101,
	hipErrorInvalidImage = 200,
	hipErrorInvalidContext = 201,
	hipErrorNoBinaryForGpu = 209,
	hipErrorOperatingSystem = 304,
	hipErrorInvalidHandle = 400,
	hipErrorNotFound = 500,
	hipErrorNotReady = 600,
	hipErrorIllegalAddress = 700,
	hipErrorHostMemoryAlreadyRegistered = 712,
	hipErrorHostMemoryNotRegistered = 713,
	hipErrorLaunchFailure = 719,
	hipErrorNotSupported = 801,
	hipErrorStreamCaptureUnsupported = 900,
	hipErrorUnknown = 999,
};

/* hipDeviceAttribute_t (the same numbers from ROCm 5.2 to 7). */
enum {
	hipDeviceAttributeCanMapHostMemory = 3,
	hipDeviceAttributeIntegrated = 16,
	hipDeviceAttributeComputeCapabilityMajor = 23,
	hipDeviceAttributeComputeCapabilityMinor = 61,
	hipDeviceAttributeMultiprocessorCount = 63,
	hipDeviceAttributePageableMemoryAccess = 65,
	hipDeviceAttributePciBusId = 67,
	hipDeviceAttributePciDeviceId = 68,
	hipDeviceAttributePciDomainID = 69,
};

/* hipMemoryType: ROCm before 6.0 ... */
enum { EHT_HIP5_MEMORY_HOST = 0, EHT_HIP5_MEMORY_DEVICE = 1, EHT_HIP5_MEMORY_UNIFIED = 3 };
/* ... and from 6.0 on (CUDA's numbers). */
enum { EHT_HIP6_MEMORY_HOST = 1, EHT_HIP6_MEMORY_DEVICE = 2, EHT_HIP6_MEMORY_MANAGED = 3, EHT_HIP6_MEMORY_UNIFIED = 11 };
#define EHT_HIP6_VERSION 60000000 /* hipRuntimeGetVersion of ROCm 6.0 */

enum { HIP_POINTER_ATTRIBUTE_MEMORY_TYPE = 2 };

#define hipHostMallocPortable 0x1
#define hipHostMallocMapped 0x2
#define hipHostRegisterPortable 0x1
#define hipHostRegisterMapped 0x2
/* Not used: 0x8 is hipHostRegisterReadOnly from ROCm 6 but hipExtHostRegisterCoarseGrained before. */

enum { hipStreamDefault = 0, hipStreamNonBlocking = 1 };
enum { hipEventDefault = 0, hipEventBlockingSync = 1, hipEventDisableTiming = 2 };
enum { hipStreamCaptureStatusNone = 0, hipStreamCaptureStatusActive = 1 };
enum { hipStreamWaitValueGte = 0, hipStreamWaitValueEq = 1, hipStreamWaitValueAnd = 2, hipStreamWaitValueNor = 3 };

#endif
