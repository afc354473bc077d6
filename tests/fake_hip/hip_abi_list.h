/* SPDX-License-Identifier: Apache-2.0 */
/* hip_abi_list.h: the HIP runtime constants and sizes test_hip_abi compares; included once beside
 * eht's own declarations (hip_abi_eht.c) and once beside hip_runtime_api.h (test_hip_abi.c). The
 * memory types are left out: they depend on the ROCm version (hip_types.h keeps both numberings). */
#define EHT_HIP_ABI_VALUES \
	V(hipSuccess) V(hipErrorInvalidValue) V(hipErrorOutOfMemory) V(hipErrorNotInitialized) \
	V(hipErrorInvalidDevicePointer) V(hipErrorInsufficientDriver) V(hipErrorNoDevice) V(hipErrorInvalidDevice) \
	V(hipErrorInvalidImage) V(hipErrorInvalidContext) V(hipErrorNoBinaryForGpu) V(hipErrorOperatingSystem) \
	V(hipErrorInvalidHandle) V(hipErrorNotFound) V(hipErrorNotReady) V(hipErrorIllegalAddress) \
	V(hipErrorHostMemoryAlreadyRegistered) V(hipErrorHostMemoryNotRegistered) V(hipErrorLaunchFailure) \
	V(hipErrorNotSupported) V(hipErrorStreamCaptureUnsupported) V(hipErrorUnknown) \
	V(hipDeviceAttributeCanMapHostMemory) V(hipDeviceAttributeIntegrated) \
	V(hipDeviceAttributeComputeCapabilityMajor) V(hipDeviceAttributeComputeCapabilityMinor) \
	V(hipDeviceAttributeMultiprocessorCount) V(hipDeviceAttributePageableMemoryAccess) \
	V(hipDeviceAttributePciBusId) V(hipDeviceAttributePciDeviceId) V(hipDeviceAttributePciDomainID) \
	V(HIP_POINTER_ATTRIBUTE_MEMORY_TYPE) V(hipHostMallocPortable) V(hipHostMallocMapped) \
	V(hipHostRegisterPortable) V(hipHostRegisterMapped) V(hipStreamDefault) V(hipStreamNonBlocking) \
	V(hipEventDefault) V(hipEventBlockingSync) V(hipEventDisableTiming) V(hipStreamCaptureStatusNone) \
	V(hipStreamCaptureStatusActive) V(hipStreamWaitValueGte) V(hipStreamWaitValueEq) V(hipStreamWaitValueAnd) \
	V(hipStreamWaitValueNor) V(sizeof(hipDeviceptr_t)) V(sizeof(hipDevice_t)) V(sizeof(hipError_t)) \
	-1
