/* SPDX-License-Identifier: Apache-2.0 */
/* hip_rt.c: dlopen the HIP runtime once and resolve its entry points with dlsym; mandatory ones (CORE)
 * or the whole runtime is off, optional ones turn off only their feature. */
#include "gpu/hip/hip_rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gpu/backend_load.h"
#include "util/settings.h"
#include "util/err.h"

#ifndef EHT_HIP_RUNTIME
#define EHT_HIP_RUNTIME "libamdhip64.so"
#endif

struct eht_hip_api eht_hip;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct eht_backend_load loader = EHT_BACKEND_LOAD_INIT("HIP runtime");
static int device_count, runtime_version;
/* VMM rests on no entry point here: ROCm's hipMemCreate places memory on devices, never on a host
 * NUMA node, which is what the host-NUMA tier needs. */
#define VMM_WHY "host-NUMA allocations (hipMemCreate has no host-NUMA location; tables go to regions pinned with hipHostRegister)"

/* Launch priority is not wired to HIP's launch attributes (untested on ROCm here): urgent launches
 * are plain ones. */
#define PRIORITY_WHY "launch priority (eht's HIP backend makes plain launches)"

static void *open_runtime(char *why, size_t len)
{
	static const char *const names[] = {EHT_HIP_RUNTIME, "libamdhip64.so.7", "libamdhip64.so.6",
					    "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so"};
	const char *first = NULL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (lib)
			return lib;
		if (!first) {
			const char *e = dlerror();
			snprintf(why, len, "%s", e ? e : names[i]);
			first = why;
		}
	}
	return NULL;
}

static void load_runtime(void)
{
	loader.missing[EHT_DEV_FEAT_VMM] = VMM_WHY;
	loader.missing[EHT_DEV_FEAT_PRIORITY] = PRIORITY_WHY;
	/* EHT_NO_CUDA=1: the GPU switch of every backend (tests, operators running the CPU paths). */
	if (eht_setting_bool(EHT_SET_NO_CUDA)) {
		snprintf(loader.msg, sizeof(loader.msg), "GPU disabled by EHT_NO_CUDA");
		return;
	}
	char why[256] = "";
	void *lib = open_runtime(why, sizeof(why));
	if (!lib) {
		snprintf(loader.msg, sizeof(loader.msg), "no HIP runtime (%s)", why);
		return;
	}
#define EHT_HIP_RESOLVE(name, feature, params)                                                       \
	{                                                                                            \
		void *fn = dlsym(lib, #name);                                                        \
		if (!eht_backend_found(&loader, fn, EHT_DEV_FEAT_##feature, #name)) {                \
			memset(&eht_hip, 0, sizeof(eht_hip)); /* no call may reach a half-loaded runtime */ \
			return;                                                                      \
		}                                                                                    \
		memcpy(&eht_hip.name, &fn, sizeof(fn));                                              \
	}
	EHT_HIP_FUNCS(EHT_HIP_RESOLVE)
#undef EHT_HIP_RESOLVE
	void *fn = dlsym(lib, "hipGetErrorName");
	memcpy(&eht_hip.hipGetErrorName, &fn, sizeof(fn));
	eht_backend_found(&loader, fn, EHT_DEV_FEAT_INFO, "hipGetErrorName"); /* (not CORE: never false) */
	fn = dlsym(lib, "hipGetErrorString");
	memcpy(&eht_hip.hipGetErrorString, &fn, sizeof(fn));
	hipError_t r = eht_hip.hipInit(0);
	if (r != hipSuccess) {
		snprintf(loader.msg, sizeof(loader.msg), "hipInit failed: %s", eht_hip_error_name(r));
		return;
	}
	if (eht_hip.hipRuntimeGetVersion(&runtime_version) != hipSuccess)
		runtime_version = 0;
	if (eht_hip.hipGetDeviceCount(&device_count) != hipSuccess || device_count <= 0) {
		device_count = 0;
		snprintf(loader.msg, sizeof(loader.msg), "HIP runtime found but no device");
		return;
	}
	loader.rc = 0;
}

static void load(void)
{
	load_runtime();
	eht_backend_report(&loader);
}

int eht_hip_load(void)
{
	pthread_once(&load_once, load);
	return eht_backend_rc(&loader);
}

bool eht_hip_has(enum eht_dev_feature f)
{
	pthread_once(&load_once, load);
	return eht_backend_has(&loader, f);
}

int eht_hip_need(enum eht_dev_feature f, const char *what)
{
	pthread_once(&load_once, load);
	return eht_backend_need(&loader, f, what);
}

int eht_hip_device_count(void)
{
	pthread_once(&load_once, load);
	return loader.rc ? 0 : device_count;
}

int eht_hip_runtime_version(void)
{
	pthread_once(&load_once, load);
	return runtime_version;
}

const char *eht_hip_error_name(hipError_t r)
{
	const char *s = eht_hip.hipGetErrorName ? eht_hip.hipGetErrorName(r) : NULL;
	return s ? s : "unknown HIP error";
}

/* The errno a hipError_t maps to (EIO for the ones without a closer meaning). */
static int eht_hip_errno(hipError_t r)
{
	switch (r) {
	case hipErrorInvalidValue:
	case hipErrorInvalidHandle:
	case hipErrorInvalidContext:
	case hipErrorHostMemoryNotRegistered: return EINVAL;
	case hipErrorOutOfMemory: return ENOMEM;
	case hipErrorNoDevice:
	case hipErrorInvalidDevice: return ENODEV;
	case hipErrorInvalidDevicePointer: return EFAULT;
	case hipErrorNotFound: return ENOENT;
	case hipErrorNotReady: return EAGAIN;
	case hipErrorHostMemoryAlreadyRegistered: return EEXIST;
	case hipErrorInvalidImage:
	case hipErrorNoBinaryForGpu: return ENOEXEC; /* the kernel image has no code for this GPU */
	case hipErrorInsufficientDriver: return ENOSYS;
	case hipErrorNotSupported:
	case hipErrorStreamCaptureUnsupported: return EOPNOTSUPP;
	default: return EIO;
	}
}

int eht_hip_result(hipError_t r, const char *call)
{
	if (r == hipSuccess)
		return 0;
	const char *text = eht_hip.hipGetErrorString ? eht_hip.hipGetErrorString(r) : NULL;
	size_t n = strcspn(call, "(");
	return eht_err(eht_hip_errno(r), "%.*s failed: %s (%s)", (int)n, call, eht_hip_error_name(r),
		       text ? text : "no description");
}
