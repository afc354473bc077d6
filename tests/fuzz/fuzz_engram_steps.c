/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_engram_steps.c: libFuzzer target for `eht hash`'s STEPS.json: any input is rejected with a
 * message, or parsed and then hashed step by step through the per-request state (tiny layout) on
 * the CPU without error for in-range tokens. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eht.h"
#include "engram/steps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *TINY = "{\"engram_layer_ids\": [3, 5], \"engram_max_ngram_size\": 3, \"engram_vocab_size\": 10,"
			  "\"engram_n_heads\": 2, \"engram_pad_token_id\": 2, \"engram_compressed_vocab_size\": 20}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static eht_engram_layout *l;
	if (!l && eht_engram_layout_from_json(TINY, strlen(TINY), &l) != 0)
		abort();
	struct engram_steps *ss = NULL;
	if (engram_steps_parse((const char *)data, size, &ss) != 0) {
		if (!eht_last_error()[0])
			abort(); /* every failure must say why */
		return 0;
	}
	eht_engram_state *st = NULL;
	if (eht_engram_state_create(l, 4, &st) != 0)
		abort();
	for (size_t i = 0; i < ss->n; i++) {
		const struct engram_step *s = &ss->steps[i];
		int in_range = 1;
		for (size_t t = 0; t < s->n_tokens; t++)
			in_range &= s->tokens[t] < 20;
		int32_t *rows = malloc((s->n_tokens * 8 + 1) * sizeof(*rows));
		if (!rows)
			break;
		struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = s->n_tokens, .tokens = s->tokens,
					     .dead = s->dead, .n_requests = s->n_requests, .starts = s->starts};
		int rc = eht_engram_state_step(st, s->req, &b, rows);
		if ((rc == 0) != in_range)
			abort();
		for (size_t k = 0; rc == 0 && k < s->n_tokens * 8; k++)
			if (rows[k] < 0 || rows[k] >= 11 + 13 + 17 + 19 + 200)
				abort();
		free(rows);
	}
	eht_engram_state_destroy(st);
	engram_steps_free(ss);
	return 0;
}
