/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_dequant_cpu.c: eht_lookup_dequant's refusals that need no GPU: a NULL engine, tables
 * whose rows are not packed Engram rows (naming the table and the row size), an engine without GPU
 * kernels (CPU_ONLY), NULL buffers; and no rows is no work. */
#include <string.h>

#include "eht.h"
#include "testutil.h"

int main(void)
{
	uint64_t rs = 3;
	uint8_t buf[2 * 512] = {0};
	CHECK_RC(eht_lookup_dequant(NULL, buf, 1, buf, NULL), -EINVAL);
	for (int k = 0; k < 2; k++) {
		const size_t rb = k ? 40 : EHT_ENGRAM_ROW_BYTES;
		uint8_t *rows = t_rand_rows(100, rb, &rs);
		eht_table *t = NULL;
		CHECK_RC(eht_table_wrap(rows, 100, rb, 0, k ? "narrow-rows" : "engram-rows", &t), 0);
		struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
					    .format = EHT_LOOKUP_RAW, .device = -1, .numa_node = -1, .threads = 2};
		eht_lookup *lk = NULL;
		CHECK_RC(t ? eht_lookup_create(t, &o, &lk) : -1, 0);
		if (lk) {
			CHECK_RC(eht_lookup_dequant(lk, buf, 0, buf, NULL), 0);
			CHECK_RC(eht_lookup_dequant(lk, NULL, 1, buf, NULL), -EINVAL);
			CHECK_RC(eht_lookup_dequant(lk, buf, 1, NULL, NULL), -EINVAL);
			if (k) {
				CHECK_RC(eht_lookup_dequant(lk, buf, 1, buf, NULL), -EINVAL);
				CHECK(strstr(eht_last_error(), "narrow-rows has 40-byte rows") != NULL);
			} else {
				CHECK_RC(eht_lookup_dequant(lk, buf, 1, buf, NULL), -ENOTSUP);
				CHECK(strstr(eht_last_error(), "no GPU kernels") != NULL);
			}
			eht_lookup_destroy(lk);
		}
		eht_table_close(t);
		free(rows);
	}
	return t_done();
}
