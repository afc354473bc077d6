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

#include "util/settings.h"
#include "util/err.h"
#include "util/log.h"

#ifndef EHT_HIP_RUNTIME
#define EHT_HIP_RUNTIME "libamdhip64.so"
#endif

struct eht_hip_api eht_hip;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = -ENODEV;
static int device_count, runtime_version;
static char load_msg[512];

/* The first missing entry point of each feature (NULL: complete). */
static const char *missing[EHT_DEV_FEAT_COUNT];
static bool noticed[EHT_DEV_FEAT_COUNT];
static pthread_mutex_t notice_lock = PTHREAD_MUTEX_INITIALIZER;
/* VMM rests on no entry point here: ROCm's hipMemCreate places memory on devices, never on a host
 * NUMA node, which is what the host-NUMA tier needs. */
#define VMM_WHY "host-NUMA allocations (hipMemCreate has no host-NUMA location; tables go to regions pinned with hipHostRegister)"

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
	missing[EHT_DEV_FEAT_VMM] = VMM_WHY;
	/* EHT_NO_CUDA=1: the GPU switch of every backend (tests, operators running the CPU paths). */
	if (eht_setting_bool(EHT_SET_NO_CUDA)) {
		snprintf(load_msg, sizeof(load_msg), "GPU disabled by EHT_NO_CUDA");
		return;
	}
	char why[256] = "";
	void *lib = open_runtime(why, sizeof(why));
	if (!lib) {
		snprintf(load_msg, sizeof(load_msg), "no HIP runtime (%s)", why);
		return;
	}
#define EHT_HIP_RESOLVE(name, feature, params)                                                       \
	{                                                                                            \
		void *fn = dlsym(lib, #name);                                                        \
		if (!fn && EHT_DEV_FEAT_##feature == EHT_DEV_FEAT_CORE) {                            \
			snprintf(load_msg, sizeof(load_msg), "HIP runtime lacks %s", #name);         \
			load_rc = -ENOSYS;                                                           \
			memset(&eht_hip, 0, sizeof(eht_hip)); /* no call may reach a half-loaded runtime */ \
			return;                                                                      \
		}                                                                                    \
		if (!fn && !missing[EHT_DEV_FEAT_##feature])                                         \
			missing[EHT_DEV_FEAT_##feature] = #name;                                     \
		memcpy(&eht_hip.name, &fn, sizeof(fn));                                              \
	}
	EHT_HIP_FUNCS(EHT_HIP_RESOLVE)
#undef EHT_HIP_RESOLVE
	void *fn = dlsym(lib, "hipGetErrorName");
	memcpy(&eht_hip.hipGetErrorName, &fn, sizeof(fn));
	fn = dlsym(lib, "hipGetErrorString");
	memcpy(&eht_hip.hipGetErrorString, &fn, sizeof(fn));
	if (!eht_hip.hipGetErrorName && !missing[EHT_DEV_FEAT_INFO])
		missing[EHT_DEV_FEAT_INFO] = "hipGetErrorName";
	hipError_t r = eht_hip.hipInit(0);
	if (r != hipSuccess) {
		snprintf(load_msg, sizeof(load_msg), "hipInit failed: %s", eht_hip_error_name(r));
		return;
	}
	if (eht_hip.hipRuntimeGetVersion(&runtime_version) != hipSuccess)
		runtime_version = 0;
	if (eht_hip.hipGetDeviceCount(&device_count) != hipSuccess || device_count <= 0) {
		device_count = 0;
		snprintf(load_msg, sizeof(load_msg), "HIP runtime found but no device");
		return;
	}
	load_rc = 0;
}

/* Says once, in one line, what could not be used: CPU-only machines are normal, so info level. */
static void load(void)
{
	load_runtime();
	if (load_rc) {
		eht_info("GPU paths off: %s", load_msg);
		return;
	}
	for (int f = 1; f < EHT_DEV_FEAT_COUNT; f++)
		if (missing[f])
			eht_debug("HIP runtime lacks %s: feature %s off", missing[f], eht_dev_feature_name(f));
}

int eht_hip_load(void)
{
	pthread_once(&load_once, load);
	return load_rc ? eht_err(load_rc, "%s", load_msg) : 0;
}

bool eht_hip_has(enum eht_dev_feature f)
{
	pthread_once(&load_once, load);
	return load_rc == 0 && f >= 0 && f < EHT_DEV_FEAT_COUNT && !missing[f];
}

int eht_hip_need(enum eht_dev_feature f, const char *what)
{
	int rc = eht_hip_load();
	if (rc)
		return rc;
	if (eht_hip_has(f))
		return 0;
	pthread_mutex_lock(&notice_lock);
	bool first = !noticed[f];
	noticed[f] = true;
	pthread_mutex_unlock(&notice_lock);
	if (first)
		eht_info("GPU feature %s off: the HIP runtime lacks %s", eht_dev_feature_name(f), missing[f]);
	return eht_err(ENOTSUP, "%s: the HIP runtime lacks %s (GPU feature %s off)", what, missing[f],
		       eht_dev_feature_name(f));
}

int eht_hip_device_count(void)
{
	pthread_once(&load_once, load);
	return load_rc ? 0 : device_count;
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

int eht_hip_errno(hipError_t r)
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
