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

#include "gpu/backend_load.h"
#include "util/err.h"
#include "util/settings.h"

struct eht_cu_api eht_cu;

/* The API version we ask entry points for: CUDA 12.0 semantics (the _v2 variants). */
#define EHT_CU_API_VERSION 12000

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct eht_backend_load loader = EHT_BACKEND_LOAD_INIT("CUDA driver");
static int device_count;

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t, int *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, cuuint64_t);

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
		snprintf(loader.msg, sizeof(loader.msg), "CUDA disabled by EHT_NO_CUDA");
		return;
	}
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(loader.msg, sizeof(loader.msg), "no CUDA driver (%s)", e ? e : "libcuda.so.1 not found");
		return;
	}
	get_proc_v2_fn gp2 = (get_proc_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
	get_proc_v1_fn gp1 = gp2 ? NULL : (get_proc_v1_fn)dlsym(lib, "cuGetProcAddress");
	if (!gp2 && !gp1) {
		snprintf(loader.msg, sizeof(loader.msg), "CUDA driver lacks cuGetProcAddress (driver older than 11.3)");
		loader.rc = -ENOSYS;
		return;
	}
#define EHT_CU_RESOLVE(name, feature, params)                                                        \
	{                                                                                            \
		void *fn = resolve(gp1, gp2, #name);                                                 \
		if (!eht_backend_found(&loader, fn, EHT_DEV_FEAT_##feature, #name)) {                \
			memset(&eht_cu, 0, sizeof(eht_cu)); /* no call may reach a half-loaded runtime */ \
			return;                                                                      \
		}                                                                                    \
		memcpy(&eht_cu.name, &fn, sizeof(fn));                                               \
	}
	EHT_CU_FUNCS(EHT_CU_RESOLVE)
#undef EHT_CU_RESOLVE
	CUresult r = eht_cu.cuInit(0);
	if (r != CUDA_SUCCESS) {
		snprintf(loader.msg, sizeof(loader.msg), "cuInit failed: %s", eht_cu_error_name(r));
		return;
	}
	if (eht_cu.cuDeviceGetCount(&device_count) != CUDA_SUCCESS || device_count <= 0) {
		device_count = 0;
		snprintf(loader.msg, sizeof(loader.msg), "CUDA driver found but no device");
		return;
	}
	loader.rc = 0;
}

static void load(void)
{
	load_driver();
	eht_backend_report(&loader);
}

bool eht_cu_has(enum eht_dev_feature f)
{
	pthread_once(&load_once, load);
	return eht_backend_has(&loader, f);
}

int eht_cu_need(enum eht_dev_feature f, const char *what)
{
	pthread_once(&load_once, load);
	return eht_backend_need(&loader, f, what);
}

int eht_cu_load(void)
{
	pthread_once(&load_once, load);
	return eht_backend_rc(&loader);
}

/* A query, not a failure: no driver means 0 devices, and leaves no error text behind for a later
 * error message to pick up. */
int eht_cu_device_count(void)
{
	pthread_once(&load_once, load);
	return loader.rc ? 0 : device_count;
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
