/* SPDX-License-Identifier: Apache-2.0 */
/* cu_driver.c: dlopen libcuda.so.1 once and resolve entry points through cuGetProcAddress; mandatory
 * ones (CORE) or the whole driver is off, optional ones turn off only their feature. */
#include "gpu/cuda/cu_driver.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/log.h"
#include "util/settings.h"

struct eht_cu_api eht_cu;

/* The API version we ask entry points for: CUDA 12.0 semantics (the _v2 variants). */
#define EHT_CU_API_VERSION 12000

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = -ENODEV;
static int device_count;
static char load_msg[512];

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t, int *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, cuuint64_t);

/* The first missing entry point of each feature (NULL: the feature is complete). */
static const char *missing[EHT_DEV_FEAT_COUNT];
static bool noticed[EHT_DEV_FEAT_COUNT];
static pthread_mutex_t notice_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether `name` is listed in EHT_TEST_CU_HIDE (comma-separated): tests turn features off with it. */
static bool hidden(const char *name)
{
	const char *h = eht_setting_str(EHT_SET_TEST_CU_HIDE);
	size_t n = strlen(name);
	while (h && *h) {
		size_t len = strcspn(h, ",");
		if (len == n && strncmp(h, name, n) == 0)
			return true;
		h += len + (h[len] == ',');
	}
	return false;
}

static void *resolve(get_proc_v1_fn gp1, get_proc_v2_fn gp2, const char *name)
{
	void *fn = NULL;
	int status = 0;
	CUresult r = gp2 ? gp2(name, &fn, EHT_CU_API_VERSION, 0, &status) : gp1(name, &fn, EHT_CU_API_VERSION, 0);
	return r == CUDA_SUCCESS && !hidden(name) ? fn : NULL;
}

static void load_driver(void)
{
	/* EHT_NO_CUDA=1 lets tests and operators run the CPU paths on a machine with a GPU. */
	if (eht_setting_bool(EHT_SET_NO_CUDA)) {
		snprintf(load_msg, sizeof(load_msg), "CUDA disabled by EHT_NO_CUDA");
		return;
	}
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(load_msg, sizeof(load_msg), "no CUDA driver (%s)", e ? e : "libcuda.so.1 not found");
		return;
	}
	get_proc_v2_fn gp2 = (get_proc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
	get_proc_v1_fn gp1 = gp2 ? NULL : (get_proc_v1_fn)dlsym(lib, "cuGetProcAddress");
	if (!gp2 && !gp1) {
		snprintf(load_msg, sizeof(load_msg), "CUDA driver lacks cuGetProcAddress (driver older than 11.3)");
		load_rc = -ENOSYS;
		return;
	}
#define EHT_CU_RESOLVE(name, feature, params)                                                        \
	{                                                                                            \
		void *fn = resolve(gp1, gp2, #name);                                                 \
		if (!fn && EHT_DEV_FEAT_##feature == EHT_DEV_FEAT_CORE) {                            \
			snprintf(load_msg, sizeof(load_msg), "CUDA driver lacks %s", #name);         \
			load_rc = -ENOSYS;                                                           \
			memset(&eht_cu, 0, sizeof(eht_cu)); /* no call may reach a half-loaded runtime */ \
			return;                                                                      \
		}                                                                                    \
		if (!fn && !missing[EHT_DEV_FEAT_##feature])                                         \
			missing[EHT_DEV_FEAT_##feature] = #name;                                     \
		memcpy(&eht_cu.name, &fn, sizeof(fn));                                               \
	}
	EHT_CU_FUNCS(EHT_CU_RESOLVE)
#undef EHT_CU_RESOLVE
	CUresult r = eht_cu.cuInit(0);
	if (r != CUDA_SUCCESS) {
		snprintf(load_msg, sizeof(load_msg), "cuInit failed: %s", eht_cu_error_name(r));
		return;
	}
	if (eht_cu.cuDeviceGetCount(&device_count) != CUDA_SUCCESS || device_count <= 0) {
		device_count = 0;
		snprintf(load_msg, sizeof(load_msg), "CUDA driver found but no device");
		return;
	}
	load_rc = 0;
}

/* Says once, in one line, what could not be used: CPU-only machines are normal, so info level. */
static void load(void)
{
	load_driver();
	if (load_rc) {
		eht_info("GPU paths off: %s", load_msg);
		return;
	}
	for (int f = 1; f < EHT_DEV_FEAT_COUNT; f++)
		if (missing[f])
			eht_debug("CUDA driver lacks %s: feature %s off", missing[f], eht_dev_feature_name(f));
}

bool eht_cu_has(enum eht_dev_feature f)
{
	pthread_once(&load_once, load);
	return load_rc == 0 && f >= 0 && f < EHT_DEV_FEAT_COUNT && !missing[f];
}

int eht_cu_need(enum eht_dev_feature f, const char *what)
{
	int rc = eht_cu_load();
	if (rc)
		return rc;
	if (eht_cu_has(f))
		return 0;
	/* Said once per feature, when it is first asked for (a feature nobody uses stays quiet). */
	pthread_mutex_lock(&notice_lock);
	bool first = !noticed[f];
	noticed[f] = true;
	pthread_mutex_unlock(&notice_lock);
	if (first)
		eht_info("GPU feature %s off: the CUDA driver lacks %s", eht_dev_feature_name(f), missing[f]);
	return eht_err(ENOTSUP, "%s: the CUDA driver lacks %s (GPU feature %s off)", what, missing[f],
		       eht_dev_feature_name(f));
}

int eht_cu_load(void)
{
	pthread_once(&load_once, load);
	return load_rc ? eht_err(load_rc, "%s", load_msg) : 0;
}

/* A query, not a failure: no driver means 0 devices, and leaves no error text behind for a later
 * error message to pick up. */
int eht_cu_device_count(void)
{
	pthread_once(&load_once, load);
	return load_rc ? 0 : device_count;
}

const char *eht_cu_error_name(CUresult r)
{
	const char *s = NULL;
	if (eht_cu.cuGetErrorName && eht_cu.cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "unknown CUDA error";
}

static int cu_errno(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_INVALID_VALUE: return EINVAL;
	case CUDA_ERROR_OUT_OF_MEMORY: return ENOMEM;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE: return ENODEV;
	case CUDA_ERROR_NOT_FOUND: return ENOENT;
	case CUDA_ERROR_NOT_READY: return EAGAIN;
	case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: return EEXIST;
	case CUDA_ERROR_NOT_PERMITTED: return EPERM;
	case CUDA_ERROR_NOT_SUPPORTED: return EOPNOTSUPP;
	case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return EOPNOTSUPP;
	default: return EIO;
	}
}

int eht_cu_result(CUresult r, const char *call)
{
	if (r == CUDA_SUCCESS)
		return 0;
	const char *text = NULL;
	if (eht_cu.cuGetErrorString)
		eht_cu.cuGetErrorString(r, &text);
	/* The call text is the macro argument "cuX(args)": keep only the name. */
	size_t n = strcspn(call, "(");
	return eht_err(cu_errno(r), "%.*s failed: %s (%s)", (int)n, call, eht_cu_error_name(r),
		       text ? text : "no description");
}

#define EHT_MAX_DEVICES 64
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[EHT_MAX_DEVICES];

int eht_cu_use_device(int device)
{
	int rc = eht_cu_load();
	if (rc)
		return rc;
	if (device < 0 || device >= device_count || device >= EHT_MAX_DEVICES)
		return eht_err(ENODEV, "CUDA device %d does not exist (%d found)", device, device_count);
	pthread_mutex_lock(&ctx_lock);
	if (!primary[device]) {
		CUdevice dev;
		rc = EHT_CU_CHECK(cuDeviceGet(&dev, device));
		if (!rc)
			rc = EHT_CU_CHECK(cuDevicePrimaryCtxRetain(&primary[device], dev));
	}
	CUcontext ctx = primary[device];
	pthread_mutex_unlock(&ctx_lock);
	if (rc)
		return rc;
	return EHT_CU_CHECK(cuCtxSetCurrent(ctx));
}
