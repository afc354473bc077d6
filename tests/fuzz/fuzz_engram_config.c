/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_engram_config.c: libFuzzer target for the Engram config.json parser: any input is rejected
 * with a message, or gives a layout whose columns tile each layer's rows and whose shards and
 * hashes stay inside them. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eht.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	eht_engram_layout *l = NULL;
	if (eht_engram_layout_from_json((const char *)data, size, &l) != 0) {
		if (!eht_last_error()[0])
			abort();
		return 0;
	}
	struct eht_engram_info in = {.size = sizeof(in)};
	if (eht_engram_layout_info(l, &in) != 0)
		abort();
	for (uint32_t li = 0; li < in.n_layers; li++) {
		uint64_t next = 0, m, o, a, e;
		for (uint32_t c = 0; c < in.cols; c++) {
			if (eht_engram_layout_column(l, li, c, &m, &o) != 0 || o != next || m < 2)
				abort();
			next += m;
		}
		if (next != in.rows[li])
			abort();
		for (uint32_t tp = 1; tp <= in.cols / 2; tp *= 2)
			for (uint32_t r = 0; r < tp; r++) {
				/* vLLM's rule: every rank owns a head range, or the tp is refused */
				int want = (uint64_t)(tp - 1) * ((in.cols + tp - 1) / tp) >= in.cols ? -EINVAL : 0;
				int got = eht_engram_shard(l, li, tp, r, &a, &e);
				if (got != want || (!got && (a >= e || e > in.rows[li])))
					abort();
			}
	}
	int32_t top = (int32_t)(in.compressed_vocab - 1), tok[4] = {0, top > 0 ? 1 : 0, top, 0};
	uint32_t st[2] = {0, 4};
	uint8_t dead[4] = {0, 0, 0, 1};
	int32_t *rows = malloc(4 * (size_t)in.n_layers * in.cols * sizeof(*rows));
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = 4, .tokens = tok, .dead = dead, .n_requests = 1,
				     .starts = st};
	if (!rows || eht_engram_hash(l, &b, rows) != 0)
		abort();
	for (uint32_t t = 0; t < 4; t++)
		for (uint32_t li = 0; li < in.n_layers; li++)
			for (uint32_t c = 0; c < in.cols; c++) {
				int32_t v = rows[(t * in.n_layers + li) * in.cols + c];
				if (v < 0 || (uint64_t)v >= in.rows[li])
					abort();
			}
	free(rows);
	eht_engram_layout_free(l);
	return 0;
}
