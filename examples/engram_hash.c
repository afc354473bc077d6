/* SPDX-License-Identifier: Apache-2.0 */
/* engram_hash.c: DeepSeek-V4.1 Engram row ids from token ids: a prefill chunk, then decode steps
 * that carry each request's history, then a tensor-parallel rank's head range. CPU only. */
#include <stdio.h>

#include "eht.h"

int main(void)
{
	eht_engram_layout *l = NULL;
	eht_engram_state *st = NULL;
	int rc = eht_engram_layout_preset("v41", &l); /* or eht_engram_layout_from_file("config.json", &l) */
	if (!rc)
		rc = eht_engram_state_create(l, 0, &st);
	/* step 1: request 7 prefills 5 tokens (compressed ids: no token map loaded), the 4th an image */
	int32_t prompt[5] = {17, 4242, 99, 5, 310};
	uint8_t image[5] = {0, 0, 0, 1, 0};
	uint32_t starts[2] = {0, 5};
	uint64_t req = 7;
	int32_t rows[6 * 48]; /* [token][layer][col]: 2 layers x 24 columns; 5 prompt tokens + 1 */
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = 5, .tokens = prompt, .dead = image,
				     .n_requests = 1, .starts = starts};
	if (!rc)
		rc = eht_engram_state_step(st, &req, &b, rows);
	/* step 2: one decoded token; the state supplies the three before it */
	int32_t next = 1234;
	uint32_t one[2] = {0, 1};
	struct eht_engram_batch d = {.size = sizeof(d), .n_tokens = 1, .tokens = &next, .n_requests = 1, .starts = one};
	if (!rc)
		rc = eht_engram_state_step(st, &req, &d, rows + 5 * 48);
	uint64_t a = 0, e = 0;
	if (!rc)
		rc = eht_engram_shard(l, 0, 4, 1, &a, &e); /* layer 1's rows of TP rank 1 of 4 */
	if (rc) {
		fprintf(stderr, "engram_hash: %s\n", eht_last_error());
	} else {
		for (int t = 0; t < 6; t++)
			printf("token %d, layer 1, order 2, head 0: row %d; layer 14, order 4, head 7: row %d\n", t,
			       rows[t * 48], rows[t * 48 + 47]);
		printf("TP rank 1 of 4 holds layer 1's rows [%llu, %llu)\n", (unsigned long long)a,
		       (unsigned long long)e);
	}
	eht_engram_state_destroy(st);
	eht_engram_layout_free(l);
	return rc ? 1 : 0;
}
