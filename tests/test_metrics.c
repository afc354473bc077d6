/* SPDX-License-Identifier: Apache-2.0 */
/* test_metrics.c: the process's lookup counters (eht_metrics_read) follow the calls made: calls, ids,
 * the path, dead ids the CPU counted, errors, the rows the CPU gathered; a too-small struct is refused. Runs without a GPU. */
#include <string.h>

#include "testutil.h"

int main(void)
{
	struct eht_metrics m0 = {.size = sizeof(m0)}, m1 = {.size = sizeof(m1)}, small = {.size = 8};
	CHECK_RC(eht_metrics_read(&small), -EINVAL);
	CHECK_RC(eht_metrics_read(NULL), -EINVAL);
	uint64_t rs = 1;
	uint8_t *rows = t_rand_rows(1000, 264, &rs);
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(rows, 1000, 264, -1, "metrics", &t), 0);
	struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_HOST, .device = -1, .numa_node = -1,
				    .threads = 2, .flags = EHT_LOOKUP_CPU_ONLY};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk)
		return t_done();
	CHECK_RC(eht_metrics_read(&m0), 0);
	int64_t ids[100];
	for (int i = 0; i < 100; i++)
		ids[i] = i % 10 == 0 ? -5 : i * 7; /* 10 dead */
	uint8_t out[100 * 264];
	for (int k = 0; k < 3; k++)
		CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT64, 0, 100, out, NULL, 0, NULL), 0);
	CHECK_RC(eht_lookup_run(lk, ids, 7, 0, 100, out, NULL, 0, NULL), -EINVAL); /* an error */
	CHECK_RC(eht_metrics_read(&m1), 0);
	CHECK(m1.calls - m0.calls == 4);
	CHECK(m1.ids - m0.ids == 400);
	CHECK(m1.calls_cpu - m0.calls_cpu == 3);
	CHECK(m1.calls_gpu == m0.calls_gpu && m1.calls_hot == m0.calls_hot);
	CHECK(m1.errors - m0.errors == 1);
	CHECK(m1.dead_cpu - m0.dead_cpu == 30);
	CHECK(m1.call_ns > m0.call_ns);
	CHECK(m1.rows_gathered - m0.rows_gathered == 300); /* by the pool's gather, dead positions included */
	CHECK(m1.bytes_staged - m0.bytes_staged == 300 * 264);
	eht_lookup_destroy(lk);
	eht_table_close(t);
	free(rows);
	return t_done();
}
