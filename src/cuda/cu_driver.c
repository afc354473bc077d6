/* SPDX-License-Identifier: Apache-2.0 */
/* cu_driver.c: dlopen libcuda.so.1 once and resolve entry points through cuGetProcAddress. */
#include "cuda/cu_driver.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/log.h"
#include "util/env.h"

struct eht_cu_api eht_cu;

/* The API version we ask entry points for: CUDA 12.0 semantics (the _v2 variants). */
#define EHT_CU_API_VERSION 12000

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = -ENODEV;
static int device_count;
static char load_msg[512];

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t, int *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, cuuint64_t);

static void load_driver(void)
{
	/* EHT_NO_CUDA=1 lets tests and operators run the CPU paths on a machine with a GPU. */
	if (eht_env_u64("EHT_NO_CUDA", 0)) {
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
#define EHT_CU_RESOLVE(name, params)                                                                 \
	{                                                                                            \
		void *fn = NULL;                                                                     \
		int status = 0;                                                                      \
		CUresult r = gp2 ? gp2(#name, &fn, EHT_CU_API_VERSION, 0, &status)                   \
				 : gp1(#name, &fn, EHT_CU_API_VERSION, 0);                           \
		if (r != CUDA_SUCCESS || !fn) {                                                      \
			snprintf(load_msg, sizeof(load_msg), "CUDA driver lacks %s (error %d)", #name, r); \
			load_rc = -ENOSYS;                                                           \
			return;                                                                      \
		}                                                                                    \
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
	if (load_rc)
		eht_info("GPU paths off: %s", load_msg);
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
