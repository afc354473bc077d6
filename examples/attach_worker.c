/* SPDX-License-Identifier: Apache-2.0 */
/* attach_worker.c: what an inference worker does with tables served by `eht serve --key KEY`:
 * attach, list the tables, and look a few rows of the first one up (on GPU 0 when there is one).
 *   example_attach_worker KEY */
#include <stdio.h>

#include "eht.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s KEY   (after: eht serve CHECKPOINT --key KEY)\n", argv[0]);
		return 2;
	}
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 10000};
	eht_client *c = NULL;
	if (eht_attach(argv[1], &ao, &c) != 0) {
		fprintf(stderr, "attach: %s\n", eht_last_error());
		return 1;
	}
	int rc = 0;
	for (size_t i = 0; i < eht_client_table_count(c); i++) {
		eht_table *t = NULL;
		struct eht_table_info info = {.size = sizeof(info)};
		if (eht_client_table(c, i, &t) == 0 && eht_table_get_info(t, &info) == 0)
			printf("%-40s %llu rows x %llu bytes, tier %s\n", info.name, (unsigned long long)info.rows,
			       (unsigned long long)info.row_bytes, eht_tier_name(info.tier));
	}
	eht_table *t = NULL;
	eht_lookup *lk = NULL;
	struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_HOST, .flags = EHT_LOOKUP_CPU_ONLY,
				    .device = -1};
	int64_t ids[4] = {0, 1, 2, 3};
	unsigned char out[4 * EHT_ENGRAM_ROW_BYTES];
	rc = eht_client_table(c, 0, &t);
	if (!rc)
		rc = eht_lookup_create(t, &o, &lk);
	if (!rc)
		rc = eht_lookup_run(lk, ids, EHT_ID_INT64, 0, 4, out, NULL,
				    EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_HOST, NULL);
	if (rc)
		fprintf(stderr, "lookup: %s\n", eht_last_error());
	else
		printf("rows 0..3 of the first table looked up; first bytes %02x %02x %02x %02x\n", out[0], out[1],
		       out[2], out[3]);
	eht_lookup_destroy(lk);
	eht_detach(c);
	return rc ? 1 : 0;
}
