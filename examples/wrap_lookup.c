/* SPDX-License-Identifier: Apache-2.0 */
/* wrap_lookup.c: the smallest use of libeht: a table over this process's memory, and a lookup of a
 * few ids into host memory (the CPU path: no GPU needed). Prints the rows it got. */
#include <stdio.h>
#include <stdlib.h>

#include "eht.h"

int main(void)
{
	enum { ROWS = 1000, ROW_BYTES = 16 };
	unsigned char *rows = malloc(ROWS * ROW_BYTES);
	if (!rows)
		return 1;
	for (int r = 0; r < ROWS; r++)
		for (int b = 0; b < ROW_BYTES; b++)
			rows[r * ROW_BYTES + b] = (unsigned char)(r + b);

	eht_table *t = NULL;
	eht_lookup *lk = NULL;
	/* device -1: not pinned for any GPU; the HOST strategy gathers on the CPU. */
	int rc = eht_table_wrap(rows, ROWS, ROW_BYTES, -1, "example", &t);
	struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_HOST, .flags = EHT_LOOKUP_CPU_ONLY,
				    .device = -1};
	if (!rc)
		rc = eht_lookup_create(t, &o, &lk);
	int64_t ids[] = {0, 7, 999, -1, 1000, 7}; /* -1 and 1000 are dead: zero rows */
	unsigned char out[6 * ROW_BYTES];
	uint64_t dead = 0;
	if (!rc)
		rc = eht_lookup_run(lk, ids, EHT_ID_INT64, 0, 6, out, NULL,
				    EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_HOST, &dead);
	if (rc) {
		fprintf(stderr, "wrap_lookup: %s\n", eht_last_error());
	} else {
		for (int i = 0; i < 6; i++) {
			printf("id %5lld:", (long long)ids[i]);
			for (int b = 0; b < 4; b++)
				printf(" %3u", out[i * ROW_BYTES + b]);
			printf(" ...\n");
		}
		printf("%llu dead id(s)\n", (unsigned long long)dead);
	}
	eht_lookup_destroy(lk);
	eht_table_close(t);
	free(rows);
	return rc ? 1 : 0;
}
