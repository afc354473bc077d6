/* SPDX-License-Identifier: Apache-2.0 */
/* backend_load.c: a GPU backend loader's findings and the feature queries on them (backend_load.h). */
#include "gpu/backend_load.h"

#include <errno.h>
#include <stdio.h>

#include "util/err.h"
#include "util/log.h"

/* (one table for both backends: the features are gpu/dev.h's) */
const char *eht_dev_feature_name(enum eht_dev_feature f)
{
	static const char *const names[EHT_DEV_FEAT_COUNT] = {"core", "info", "pin", "graphs", "host-func",
							       "mem-ops", "vmm", "priority"};
	return f >= 0 && f < EHT_DEV_FEAT_COUNT ? names[f] : "unknown";
}

bool eht_backend_found(struct eht_backend_load *b, const void *fn, enum eht_dev_feature f, const char *name)
{
	if (fn)
		return true;
	if (f == EHT_DEV_FEAT_CORE) {
		snprintf(b->msg, sizeof(b->msg), "%s lacks %s", b->runtime, name);
		b->rc = -ENOSYS;
		return false;
	}
	if (!b->missing[f])
		b->missing[f] = name;
	return true;
}

void eht_backend_report(const struct eht_backend_load *b)
{
	if (b->rc) {
		eht_info("GPU paths off: %s", b->msg);
		return;
	}
	for (int f = 1; f < EHT_DEV_FEAT_COUNT; f++)
		if (b->missing[f])
			eht_debug("%s lacks %s: feature %s off", b->runtime, b->missing[f], eht_dev_feature_name(f));
}

int eht_backend_rc(const struct eht_backend_load *b)
{
	return b->rc ? eht_err(b->rc, "%s", b->msg) : 0;
}

bool eht_backend_has(const struct eht_backend_load *b, enum eht_dev_feature f)
{
	return b->rc == 0 && f >= 0 && f < EHT_DEV_FEAT_COUNT && !b->missing[f];
}

int eht_backend_need(struct eht_backend_load *b, enum eht_dev_feature f, const char *what)
{
	int rc = eht_backend_rc(b);
	if (rc)
		return rc;
	if (f < 0 || f >= EHT_DEV_FEAT_COUNT)
		return eht_err(EINVAL, "%s: no GPU feature %d", what, (int)f);
	if (eht_backend_has(b, f))
		return 0;
	pthread_mutex_lock(&b->notice_lock);
	bool first = !b->noticed[f];
	b->noticed[f] = true;
	pthread_mutex_unlock(&b->notice_lock);
	if (first)
		eht_info("GPU feature %s off: the %s lacks %s", eht_dev_feature_name(f), b->runtime, b->missing[f]);
	return eht_err(ENOTSUP, "%s: the %s lacks %s (GPU feature %s off)", what, b->runtime, b->missing[f],
		       eht_dev_feature_name(f));
}
