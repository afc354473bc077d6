/* SPDX-License-Identifier: Apache-2.0 */
/* backend_load.h: what a GPU backend's loader found (src/gpu/cuda/cu_driver.c, src/gpu/hip/hip_rt.c):
 * whether its library loaded, why not, and the first missing entry point of each optional feature; the
 * feature queries both backends answer the same way from it. */
#ifndef EHT_GPU_BACKEND_LOAD_H
#define EHT_GPU_BACKEND_LOAD_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "gpu/dev.h"

struct eht_backend_load {
	const char *runtime; /* what its messages call the library: "CUDA driver", "HIP runtime" */
	int rc;              /* 0: usable; else -errno (-ENODEV until loaded) */
	char msg[512];       /* why not usable */
	const char *missing[EHT_DEV_FEAT_COUNT]; /* the first missing entry point of each feature (NULL: complete) */
	bool noticed[EHT_DEV_FEAT_COUNT];        /* whether eht_backend_need said it once */
	pthread_mutex_t notice_lock;
};
#define EHT_BACKEND_LOAD_INIT(words) {.runtime = (words), .rc = -ENODEV, .notice_lock = PTHREAD_MUTEX_INITIALIZER}

/* Records an entry point `name` of feature f as resolved to fn. Returns false when the backend cannot
 * be used: a CORE entry point is missing (rc -ENOSYS and msg set; the caller must clear its table). */
bool eht_backend_found(struct eht_backend_load *b, const void *fn, enum eht_dev_feature f, const char *name);
/* Says once, in one line, what could not be used (info: CPU-only machines are normal), and each
 * feature left off (debug). Called once the loader has run. */
void eht_backend_report(const struct eht_backend_load *b);
/* 0, or the load's failure as an error. */
int eht_backend_rc(const struct eht_backend_load *b);
bool eht_backend_has(const struct eht_backend_load *b, enum eht_dev_feature f);
/* 0 when feature f is there, else the load's failure, or -ENOTSUP naming `what` and the missing entry
 * point (said once per feature at info level, when it is first asked for). */
int eht_backend_need(struct eht_backend_load *b, enum eht_dev_feature f, const char *what);

#endif
