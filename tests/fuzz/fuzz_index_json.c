/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_index_json.c: libFuzzer target for a sharded checkpoint's model.safetensors.index.json: the
 * input is the index of a folder holding two small valid shards (a.safetensors, b.safetensors).
 * Any index must be rejected with a message or open a checkpoint that is safe to walk. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eht.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];

static void cleanup(void)
{
	char p[320];
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (system(p) != 0)
		return;
}

static int setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/eht-fuzz-index-%d", (int)getpid());
	char p[320];
	static const uint64_t shape[2] = {4, 8};
	static uint8_t bytes[32];
	struct eht_st_write_tensor a[2] = {{"t.weight", EHT_DTYPE_U8, 2, shape, bytes, NULL, NULL},
					   {"t.scale", EHT_DTYPE_U8, 2, shape, bytes, NULL, NULL}};
	struct eht_st_write_tensor b[1] = {{"u.weight", EHT_DTYPE_U8, 2, shape, bytes, NULL, NULL}};
	snprintf(p, sizeof(p), "mkdir -p %s", dir);
	if (system(p) != 0)
		return -1;
	atexit(cleanup);
	snprintf(p, sizeof(p), "%s/a.safetensors", dir);
	if (eht_st_write(p, a, 2, NULL, 0) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/b.safetensors", dir);
	return eht_st_write(p, b, 1, NULL, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		setenv("EHT_LOG", "error", 1);
		eht_settings_reload(); /* libeht reads its settings once */
		if (setup() != 0)
			abort();
		ready = 1;
	}
	char p[320];
	snprintf(p, sizeof(p), "%s/model.safetensors.index.json", dir);
	FILE *f = fopen(p, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	eht_ckpt *ck = NULL;
	if (eht_ckpt_open(dir, 0, &ck) != 0) {
		if (!eht_last_error()[0])
			abort();
		return 0;
	}
	volatile uint8_t sink = 0;
	for (size_t i = 0; i < eht_ckpt_count(ck); i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		if (eht_ckpt_tensor(ck, i, &t) != 0 || !t.name)
			abort();
		const uint8_t *b = t.data;
		for (uint64_t k = 0; k < t.nbytes; k++)
			sink ^= b[k];
	}
	(void)sink;
	eht_ckpt_close(ck);
	return 0;
}
