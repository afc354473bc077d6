/* SPDX-License-Identifier: Apache-2.0 */
/* cu_pin.c: chunked cuMemHostRegister with one contiguous device pointer. */
#include "cuda/cu_pin.h"

#include "cuda/cu_driver.h"
#include "util/env.h"
#include "util/err.h"
#include "util/log.h"
#include "eht.h"

size_t eht_cu_pin_chunk(void)
{
	uint64_t c = eht_env_u64("EHT_PIN_CHUNK", EHT_PIN_CHUNK_DEFAULT);
	return c < 4096 ? 4096 : (size_t)c;
}

int eht_cu_pin(void *host, size_t bytes, int device, unsigned flags, uint64_t *dptr)
{
	int rc = eht_cu_use_device(device);
	if (rc)
		return rc;
	size_t chunk = eht_cu_pin_chunk(), done = 0;
	CUdeviceptr base = 0;
	flags |= CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE;
	while (done < bytes) {
		size_t len = bytes - done < chunk ? bytes - done : chunk;
		char *p = (char *)host + done;
		rc = EHT_CU_CHECK(cuMemHostRegister(p, len, flags));
		if (rc) {
			eht_err_prefix(rc, "pinning %zu bytes at offset %zu of %zu", len, done, bytes);
			goto fail;
		}
		CUdeviceptr d = 0;
		rc = EHT_CU_CHECK(cuMemHostGetDevicePointer(&d, p, 0));
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
fail:
	for (size_t off = 0; off < done; off += chunk)
		eht_cu.cuMemHostUnregister((char *)host + off);
	return rc;
}

int eht_cu_unpin(void *host, size_t bytes)
{
	if (eht_cu_load() != 0)
		return -ENODEV;
	size_t chunk = eht_cu_pin_chunk();
	int first = 0;
	for (size_t off = 0; off < bytes; off += chunk) {
		int rc = EHT_CU_CHECK(cuMemHostUnregister((char *)host + off));
		if (rc) {
			eht_warn("unpinning offset %zu: %s", off, eht_last_error());
			if (!first)
				first = rc;
		}
	}
	return first;
}
