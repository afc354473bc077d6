/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_st_header.c: libFuzzer target for the safetensors parser: any input must be rejected with a
 * message or accepted and then be safe to walk end to end (every tensor, byte, name, metadata entry
 * and row range). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eht.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	eht_st_file *f = NULL;
	/* a private copy so that ASan sees any read past the image */
	uint8_t *img = malloc(size ? size : 1);
	if (!img)
		return 0;
	memcpy(img, data, size);
	if (eht_st_open_memory(img, size, 0, &f) != 0) {
		if (!eht_last_error()[0])
			abort(); /* every failure must say why */
		free(img);
		return 0;
	}
	volatile uint8_t sink = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < eht_st_count(f); i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)}, u = {.size = sizeof(u)};
		if (eht_st_tensor(f, i, &t) != 0 || !t.name || eht_dtype_bits(t.dtype) < 0)
			abort();
		if (eht_st_find(f, t.name, &u) != 0 || strcmp(u.name, t.name) != 0)
			abort();
		if (t.file_offset + t.nbytes > size || t.nbytes != t.data_end - t.data_begin)
			abort();
		const uint8_t *p = t.data;
		for (uint64_t b = 0; b < t.nbytes; b++)
			sink ^= p[b];
		for (uint32_t d = 0; d < t.ndim; d++)
			sink ^= (uint8_t)t.shape[d];
		total += t.nbytes;
		struct eht_st_rows r = {.size = sizeof(r)};
		for (uint32_t rank = 0; rank < 3; rank++)
			if (eht_st_rows(&t, rank, 3, &r) == 0 &&
			    (r.file_offset < t.file_offset || r.file_offset + r.nbytes > t.file_offset + t.nbytes))
				abort();
	}
	if (total + eht_st_data_start(f) != size)
		abort();
	for (size_t i = 0; i < eht_st_metadata_count(f); i++) {
		const char *k, *v;
		if (eht_st_metadata_at(f, i, &k, &v) != 0 || eht_st_metadata_get(f, k) == NULL)
			abort();
		sink ^= (uint8_t)(k[0] ^ v[0]);
	}
	(void)sink;
	eht_st_close(f);
	free(img);
	return 0;
}
