/* SPDX-License-Identifier: Apache-2.0 */
/* test_engram_shard.c: head-range sharding: at TP 1, 2, 4, 8 each rank's disk table maps only its
 * [vocab_start, vocab_end) of a v41-small checkpoint, ids outside (and -1) give zero rows, and the
 * ranks' outputs summed equal the full lookup; TP above 12 is refused. */
#include <string.h>

#include "testutil.h"

#define RB 264

static void lookup_all(eht_table *t, const int32_t *ids, size_t n, uint8_t *out, uint64_t *dead)
{
	eht_lookup *lk = NULL;
	struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_HOST, .flags = EHT_LOOKUP_CPU_ONLY,
				    .device = -1, .threads = 2};
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (lk)
		CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, 0, n, out, NULL,
					EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_HOST, dead),
			 0);
	eht_lookup_destroy(lk);
}

int main(void)
{
	const char *dir = t_tmpdir("engram_shard");
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_preset("v41-small", &l), 0);
	if (!l)
		return t_done();
	struct eht_engram_info in = {.size = sizeof(in)};
	eht_engram_layout_info(l, &in);
	uint64_t rows[2] = {in.rows[0], in.rows[1]};
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 2, .shards = 3, .seed = 11, .table_rows = rows};
	CHECK_RC(eht_synth_checkpoint(dir, &so), 0);

	/* layer 14's ids of a random batch (column-major per token: every head range is hit), plus -1 */
	enum { NT = 2000 };
	static int32_t tok[NT], all[NT * 48], ids[NT * 24 + 3];
	uint64_t s = 5;
	for (int i = 0; i < NT; i++)
		tok[i] = (int32_t)(t_rand(&s) % 99092);
	uint32_t st[2] = {0, NT};
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = NT, .tokens = tok, .n_requests = 1, .starts = st};
	CHECK_RC(eht_engram_hash(l, &b, all), 0);
	for (int i = 0; i < NT; i++)
		memcpy(ids + i * 24, all + i * 48 + 24, 24 * 4);
	const size_t n = NT * 24 + 3;
	ids[n - 3] = -1;
	ids[n - 2] = (int32_t)rows[1]; /* one past the table */
	ids[n - 1] = 0;

	uint8_t *full = malloc(n * RB), *sum = malloc(n * RB), *part = malloc(n * RB);
	eht_table *t = NULL;
	struct eht_disk_opts o = {.size = sizeof(o), .weight = "layers.14.engram.embed.weight",
				  .scale = "layers.14.engram.embed.scale", .cache_bytes = EHT_DISK_NO_CACHE};
	CHECK_RC(eht_disk_open(dir, &o, &t), 0);
	uint64_t dead = 0;
	lookup_all(t, ids, n, full, &dead);
	CHECK(dead == 2);
	eht_table_close(t);

	static const uint32_t tps[] = {1, 2, 4, 8};
	for (size_t k = 0; k < sizeof(tps) / sizeof(tps[0]); k++) {
		memset(sum, 0, n * RB);
		uint64_t dead_total = 0;
		for (uint32_t r = 0; r < tps[k]; r++) {
			uint64_t a, e;
			CHECK_RC(eht_engram_shard(l, 1, tps[k], r, &a, &e), 0);
			struct eht_disk_opts ro = o;
			ro.first_row = a;
			ro.row_count = e - a;
			t = NULL;
			CHECK_RC(eht_disk_open(dir, &ro, &t), 0);
			if (!t)
				continue;
			struct eht_table_info ti = {.size = sizeof(ti)};
			CHECK_RC(eht_table_get_info(t, &ti), 0);
			CHECK(ti.first_row == a && ti.local_rows == e - a && ti.rows == rows[1]);
			lookup_all(t, ids, n, part, &dead);
			uint64_t outside = 0;
			for (size_t i = 0; i < n; i++) {
				int live = ids[i] >= 0 && (uint64_t)ids[i] >= a && (uint64_t)ids[i] < e;
				outside += !live;
				for (int j = 0; j < RB; j++) {
					if (!live && part[i * RB + j]) { /* dead: zero row */
						t_failures++;
						fprintf(stderr, "tp %u rank %u: id %d not zero\n", tps[k], r, ids[i]);
						break;
					}
					sum[i * RB + j] = (uint8_t)(sum[i * RB + j] + part[i * RB + j]);
				}
			}
			CHECK(dead == outside);
			dead_total += dead;
			eht_table_close(t);
		}
		CHECK(!memcmp(sum, full, n * RB));
		CHECK(dead_total == (uint64_t)(tps[k] - 1) * (n - 2) + 2 * tps[k]);
	}
	uint64_t a, e;
	CHECK_RC(eht_engram_shard(l, 1, 16, 0, &a, &e), -EINVAL);
	CHECK(strstr(eht_last_error(), "head range") != NULL);
	/* a range past the tensor is refused */
	struct eht_disk_opts bad = o;
	bad.first_row = rows[1] - 5;
	bad.row_count = 6;
	t = NULL;
	CHECK_RC(eht_disk_open(dir, &bad, &t), -EINVAL);
	CHECK(t == NULL);
	free(full);
	free(sum);
	free(part);
	eht_engram_layout_free(l);
	t_rmtree(dir);
	return t_done();
}
