/* SPDX-License-Identifier: Apache-2.0 */
/* pin.c: chunked host registration with one contiguous device pointer (on gpu/dev.h). */
#include "gpu/pin.h"

#include "gpu/dev.h"
#include "util/err.h"
#include "util/log.h"
#include "util/settings.h"
#include "eht.h"

size_t eht_gpu_pin_chunk(void)
{
	return (size_t)eht_setting_u64(EHT_SET_PIN_CHUNK); /* at least 4 KiB: the table's bound */
}

int eht_gpu_pin(void *host, size_t bytes, int device, unsigned flags, uint64_t *dptr)
{
	int rc = eht_dev_use(device);
	if (rc)
		return rc;
	size_t chunk = eht_gpu_pin_chunk(), done = 0;
	eht_dptr base = 0;
	flags |= EHT_DEV_HOST_MAPPED | EHT_DEV_HOST_PORTABLE;
	while (done < bytes) {
		size_t len = bytes - done < chunk ? bytes - done : chunk;
		char *p = (char *)host + done;
		rc = eht_dev_host_register(p, len, flags);
		if (rc) {
			eht_err_prefix(rc, "pinning %zu bytes at offset %zu of %zu", len, done, bytes);
			goto fail;
		}
		eht_dptr d = 0;
		rc = eht_dev_host_dptr(&d, p);
		if (!rc && done == 0)
			base = d;
		else if (!rc && d != base + done)
			rc = eht_err(EINVAL, "pinned chunk at offset %zu maps to a non-contiguous device address", done);
		done += len;
		if (rc)
			goto fail;
	}
	eht_debug("pinned %zu bytes for GPU %d in chunks of %zu", bytes, device, chunk);
	*dptr = base;
	return 0;
fail:;
	struct eht_err_saved cause; /* the unregistering below must not overwrite why it failed */
	eht_err_save(&cause);
	for (size_t off = 0; off < done; off += chunk)
		eht_dev_host_unregister((char *)host + off);
	eht_err_restore(&cause, rc);
	return rc;
}

int eht_gpu_pin_reads(void *host, size_t bytes, int device, uint64_t *dptr)
{
	int rc = eht_gpu_pin(host, bytes, device, 0, dptr);
	if (rc == 0 || rc == -ENODEV || rc == -ENOTSUP)
		return rc;
	struct eht_err_saved cause;
	eht_err_save(&cause);
	if (eht_gpu_pin(host, bytes, device, EHT_DEV_HOST_READ_ONLY, dptr) == 0) {
		eht_debug("pinned %zu bytes read-only for GPU %d (writable: %s)", bytes, device, cause.msg);
		return 0;
	}
	eht_err_restore(&cause, rc);
	return rc;
}

int eht_gpu_unpin(void *host, size_t bytes)
{
	if (eht_dev_load() != 0)
		return -ENODEV;
	size_t chunk = eht_gpu_pin_chunk();
	int first = 0;
	for (size_t off = 0; off < bytes; off += chunk) {
		int rc = eht_dev_host_unregister((char *)host + off);
		if (rc) {
			eht_warn("unpinning offset %zu: %s", off, eht_last_error());
			if (!first)
				first = rc;
		}
	}
	return first;
}
