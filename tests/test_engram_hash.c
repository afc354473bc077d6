/* SPDX-License-Identifier: Apache-2.0 */
/* test_engram_hash.c: Engram layouts, multipliers, hashing (CPU) and per-request state, against
 * hand-derived vectors, the V4.1 constants and a plain-% reference. */
#include <string.h>

#include "engram/engram_impl.h"
#include "engram_hash_vectors.h"
#include "engram_rng_vectors.h"
#include "testutil.h"

/* The reference: the formula of eht_engram.h with plain % and the window read naively. */
static void ref_token(const eht_engram_layout *l, const int32_t *win, int32_t *out)
{
	struct eht_engram_info in = {.size = sizeof(in)};
	eht_engram_layout_info(l, &in);
	for (uint32_t li = 0; li < in.n_layers; li++) {
		uint64_t m[EHT_ENGRAM_MAX_NGRAM], r = 0;
		eht_engram_layout_multipliers(l, li, m);
		int blocked = 0;
		for (uint32_t s = 0; s < in.max_ngram; s++) {
			if (win[s] == EHT_ENGRAM_HIST_BLOCK)
				blocked = 1;
			uint64_t v = (blocked || win[s] < 0) ? (uint64_t)in.pad_id : (uint64_t)win[s];
			r ^= v * m[s];
			if (s == 0)
				continue;
			for (uint32_t h = 0; h < in.n_heads; h++) {
				uint64_t p, o;
				uint32_t c = (s - 1) * in.n_heads + h;
				eht_engram_layout_column(l, li, c, &p, &o);
				out[li * in.cols + c] = (int32_t)(r % p + o);
			}
		}
	}
}

static void check_v41_constants(void)
{
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_preset("v41", &l), 0);
	if (!l)
		return;
	static const uint64_t p1[24] = {16000057, 16000079, 16000081, 16000097, 16000121, 16000129, 16000133, 16000183,
					16000189, 16000207, 16000211, 16000253, 16000277, 16000289, 16000307, 16000321,
					16000339, 16000381, 16000393, 16000399, 16000403, 16000409, 16000447, 16000463};
	static const uint64_t p14[24] = {16000477, 16000487, 16000499, 16000507, 16000511, 16000573, 16000609, 16000627,
					 16000667, 16000669, 16000693, 16000697, 16000711, 16000729, 16000759, 16000769,
					 16000781, 16000799, 16000813, 16000819, 16000841, 16000877, 16000879, 16000889};
	static const uint64_t m1[4] = {76632096046245ull, 4839876093313ull, 35959672319349ull, 73987337458391ull};
	static const uint64_t m14[4] = {67716810739261ull, 51510806800915ull, 30921347202721ull, 82619226485591ull};
	struct eht_engram_info in = {.size = sizeof(in)};
	CHECK_RC(eht_engram_layout_info(l, &in), 0);
	CHECK(in.n_layers == 2 && in.cols == 24 && in.layer_ids[0] == 1 && in.layer_ids[1] == 14);
	CHECK(in.rows[0] == 384006168ull && in.rows[1] == 384016682ull);
	uint64_t off = 0, m[4];
	for (uint32_t c = 0; c < 24; c++) {
		uint64_t p, o;
		CHECK_RC(eht_engram_layout_column(l, 0, c, &p, &o), 0);
		CHECK(p == p1[c] && o == off);
		off += p;
		CHECK_RC(eht_engram_layout_column(l, 1, c, &p, &o), 0);
		CHECK(p == p14[c]);
	}
	CHECK_RC(eht_engram_layout_multipliers(l, 0, m), 0);
	CHECK(!memcmp(m, m1, sizeof(m)));
	CHECK_RC(eht_engram_layout_multipliers(l, 1, m), 0);
	CHECK(!memcmp(m, m14, sizeof(m)));
	CHECK_RC(eht_engram_layout_column(l, 2, 0, NULL, NULL), -EINVAL);
	CHECK_RC(eht_engram_layout_column(l, 0, 24, NULL, NULL), -EINVAL);

	/* head-range shards: TP 1, 2, 4, 8 tile the rows on column boundaries; above 12: error */
	static const uint32_t tps[] = {1, 2, 3, 4, 6, 8, 12};
	for (size_t k = 0; k < sizeof(tps) / sizeof(tps[0]); k++) {
		uint64_t prev = 0, a, b;
		for (uint32_t r = 0; r < tps[k]; r++) {
			CHECK_RC(eht_engram_shard(l, 1, tps[k], r, &a, &b), 0);
			CHECK(a == prev && b >= a);
			uint32_t part = (24 + tps[k] - 1) / tps[k];
			uint64_t o;
			eht_engram_layout_column(l, 1, r * part, NULL, &o);
			CHECK(a == o);
			prev = b;
		}
		CHECK(prev == in.rows[1]);
	}
	uint64_t a, b;
	CHECK_RC(eht_engram_shard(l, 0, 2, 1, &a, &b), 0);
	CHECK(a == 16000057ull + 16000079 + 16000081 + 16000097 + 16000121 + 16000129 + 16000133 + 16000183 +
			   16000189 + 16000207 + 16000211 + 16000253 && b == 384006168ull);
	CHECK_RC(eht_engram_shard(l, 0, 13, 0, &a, &b), -EINVAL);
	CHECK(strstr(eht_last_error(), "13") != NULL);
	CHECK_RC(eht_engram_shard(l, 0, 4, 4, &a, &b), -EINVAL);
	/* vLLM's rule, (tp - 1) * ceil(24 / tp) >= 24 refused: 7, 9, 10, 11 (below 24 / 2) and 13..16 */
	for (uint32_t tp = 1; tp <= 16; tp++) {
		int refused = tp == 7 || tp == 9 || tp == 10 || tp == 11 || tp >= 13;
		for (uint32_t r = 0; r < tp; r++) {
			int rc = eht_engram_shard(l, 0, tp, r, &a, &b);
			if (rc != (refused ? -EINVAL : 0) || (!rc && a >= b)) {
				t_failures++;
				fprintf(stderr, "eht_engram_shard tp %u rank %u: %d [%llu, %llu)\n", tp, r, rc,
					(unsigned long long)a, (unsigned long long)b);
			}
		}
	}
	CHECK_RC(eht_engram_shard(l, 0, 7, 0, &a, &b), -EINVAL);
	CHECK(strstr(eht_last_error(), "rank 6 would own no head range") != NULL);
	eht_engram_layout_free(l);
}

/* V4.1 rows computed independently (tests/gen_engram_hash_vectors.py): one shot, then in chunks cut
 * at and next to image tokens, then token by token. */
static void check_independent_vectors(void)
{
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_preset("v41", &l), 0);
	if (!l)
		return;
	enum { T = sizeof(hv_tokens) / sizeof(hv_tokens[0]) };
	int32_t rows[T * 48];
	uint32_t st[2] = {0, T};
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = T, .tokens = hv_tokens, .dead = hv_image,
				     .n_requests = 1, .starts = st};
	CHECK_RC(eht_engram_hash(l, &b, rows), 0);
	CHECK(!memcmp(rows, hv_rows, sizeof(rows)));
	static const uint32_t cuts[][6] = {{0, 9, 10, 23, 24, T}, {0, 10, 11, 22, 23, T}, {0, 1, 2, 3, 39, T}};
	for (size_t k = 0; k < 3; k++) {
		eht_engram_state *S = NULL;
		CHECK_RC(eht_engram_state_create(l, 3, &S), 0);
		memset(rows, 0, sizeof(rows));
		uint64_t req = 7;
		for (int c = 0; c < 5 && S; c++) {
			uint32_t a = cuts[k][c], e = cuts[k][c + 1], cs[2] = {0, e - a};
			struct eht_engram_batch cb = {.size = sizeof(cb), .n_tokens = e - a, .tokens = hv_tokens + a,
						      .dead = hv_image + a, .n_requests = 1, .starts = cs};
			CHECK_RC(eht_engram_state_step(S, &req, &cb, rows + a * 48), 0);
		}
		CHECK(!memcmp(rows, hv_rows, sizeof(rows)));
		eht_engram_state_destroy(S);
	}
	eht_engram_layout_free(l);
}

static void check_rng(void)
{
	int64_t v[3];
	/* numpy: np.random.default_rng(42).integers(0, 10, 3) == [0, 7, 6] (the 32-bit path) */
	CHECK_RC(eht_engram_rng_integers(42, 10, 3, v), 0);
	CHECK(v[0] == 0 && v[1] == 7 && v[2] == 6);
	CHECK_RC(eht_engram_rng_integers(1, 0, 1, v), -EINVAL);
	/* numpy's own outputs for many seeds and bounds (tests/gen_engram_rng_vectors.py) */
	int bad = 0;
	for (size_t i = 0; i < sizeof(rng_vectors) / sizeof(rng_vectors[0]); i++) {
		int64_t w[8];
		CHECK_RC(eht_engram_rng_integers(rng_vectors[i].seed, rng_vectors[i].high, 8, w), 0);
		if (memcmp(w, rng_vectors[i].v, sizeof(w))) {
			if (bad++ < 5)
				fprintf(stderr, "rng seed %llu high %lld: got %lld, numpy %lld\n", rng_vectors[i].seed,
					rng_vectors[i].high, (long long)w[0], rng_vectors[i].v[0]);
		}
	}
	CHECK(bad == 0);
	CHECK_RC(eht_engram_rng_integers(5, 1, 3, v), 0);
	CHECK(v[0] == 0 && v[1] == 0 && v[2] == 0);
}

/* A tiny config worked by hand: layer 3, orders 2..3, 2 heads, vocab 10 -> primes 11, 13 (order 2)
 * and 17, 19 (order 3, restarting at 9 and skipping 11, 13); offsets 0, 11, 24, 41; 60 rows. */
static const char *TINY = "{\"text_config\": {\"engram_layer_ids\": [3], \"engram_max_ngram_size\": 3,"
			  "\"engram_vocab_size\": 10, \"engram_n_heads\": 2, \"engram_pad_token_id\": 2,"
			  "\"engram_compressed_vocab_size\": 20, \"engram_num_embeddings\": [60]}}";

static void check_tiny(void)
{
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_from_json(TINY, strlen(TINY), &l), 0);
	if (!l)
		return;
	static const uint64_t P[4] = {11, 13, 17, 19}, O[4] = {0, 11, 24, 41};
	for (uint32_t c = 0; c < 4; c++) {
		uint64_t p, o;
		CHECK_RC(eht_engram_layout_column(l, 0, c, &p, &o), 0);
		CHECK(p == P[c] && o == O[c]);
	}
	uint64_t m[3];
	CHECK_RC(eht_engram_layout_multipliers(l, 0, m), 0);
	int64_t r[3];
	CHECK_RC(eht_engram_rng_integers(10007 * 3, INT64_MAX / 20 / 2, 3, r), 0);
	for (int s = 0; s < 3; s++)
		CHECK(m[s] == 2 * (uint64_t)r[s] + 1 && (m[s] & 1));
	/* one request [5, 7, 9]: by hand from the formula */
	int32_t tok[3] = {5, 7, 9}, rows[3 * 4];
	uint32_t st[2] = {0, 3};
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = 3, .tokens = tok, .n_requests = 1, .starts = st};
	CHECK_RC(eht_engram_hash(l, &b, rows), 0);
	uint64_t R0 = 5 * m[0] ^ 2 * m[1]; /* token 0: p-1 before the start -> pad, blocked */
	uint64_t R0b = R0 ^ 2 * m[2];
	uint64_t R1 = 7 * m[0] ^ 5 * m[1], R1b = R1 ^ 2 * m[2];
	uint64_t R2 = 9 * m[0] ^ 7 * m[1], R2b = R2 ^ 5 * m[2];
	int32_t want[12] = {
	    (int32_t)(R0 % 11), (int32_t)(R0 % 13 + 11), (int32_t)(R0b % 17 + 24), (int32_t)(R0b % 19 + 41),
	    (int32_t)(R1 % 11), (int32_t)(R1 % 13 + 11), (int32_t)(R1b % 17 + 24), (int32_t)(R1b % 19 + 41),
	    (int32_t)(R2 % 11), (int32_t)(R2 % 13 + 11), (int32_t)(R2b % 17 + 24), (int32_t)(R2b % 19 + 41)};
	CHECK(!memcmp(rows, want, sizeof(want)));
	/* image token in the middle: token 2's order-3 gram sees pad (blocked) at p-2 too */
	uint8_t dead[3] = {0, 1, 0};
	b.dead = dead;
	CHECK_RC(eht_engram_hash(l, &b, rows), 0);
	uint64_t D2 = 9 * m[0] ^ 2 * m[1], D2b = D2 ^ 2 * m[2];
	CHECK(rows[8] == (int32_t)(D2 % 11) && rows[11] == (int32_t)(D2b % 19 + 41));
	/* unknown history: pad but not blocked, so an older known entry still counts */
	int32_t hist[2] = {EHT_ENGRAM_HIST_UNKNOWN, 4};
	b.dead = NULL;
	b.n_tokens = 1;
	st[1] = 1;
	b.history = hist;
	CHECK_RC(eht_engram_hash(l, &b, rows), 0);
	uint64_t U = 5 * m[0] ^ 2 * m[1], Ub = U ^ 4 * m[2];
	CHECK(rows[0] == (int32_t)(U % 11) && rows[3] == (int32_t)(Ub % 19 + 41));
	hist[0] = EHT_ENGRAM_HIST_BLOCK; /* blocked: the 4 behind it is not used */
	CHECK_RC(eht_engram_hash(l, &b, rows), 0);
	CHECK(rows[3] == (int32_t)((U ^ 2 * m[2]) % 19 + 41));
	/* errors */
	hist[0] = -3;
	CHECK_RC(eht_engram_hash(l, &b, rows), -EINVAL);
	hist[0] = 0;
	tok[0] = 20;
	CHECK_RC(eht_engram_hash(l, &b, rows), -EINVAL);
	CHECK(strstr(eht_last_error(), "token 0") != NULL);
	tok[0] = 5;
	st[1] = 2;
	CHECK_RC(eht_engram_hash(l, &b, rows), -EINVAL);
	eht_engram_layout_free(l);
}

static void check_configs(void)
{
	eht_engram_layout *l = NULL;
	static const char *bad[] = {
	    "", "[]", "{}", "{\"text_config\": 3}",
	    "{\"engram_layer_ids\": [1], \"engram_max_ngram_size\": 1, \"engram_vocab_size\": 10, \"engram_n_heads\": 2,"
	    "\"engram_pad_token_id\": 2, \"engram_compressed_vocab_size\": 20}",
	    "{\"engram_layer_ids\": [1], \"engram_max_ngram_size\": 3, \"engram_vocab_size\": [10], \"engram_n_heads\": 2,"
	    "\"engram_pad_token_id\": 2, \"engram_compressed_vocab_size\": 20}",
	    "{\"engram_layer_ids\": [1], \"engram_max_ngram_size\": 3, \"engram_vocab_size\": 10, \"engram_n_heads\": 2,"
	    "\"engram_pad_token_id\": 20, \"engram_compressed_vocab_size\": 20}",
	    "{\"engram_layer_ids\": [1], \"engram_max_ngram_size\": 3, \"engram_vocab_size\": 10, \"engram_n_heads\": 2,"
	    "\"engram_pad_token_id\": 2, \"engram_compressed_vocab_size\": 20, \"engram_num_embeddings\": [61]}",
	    "{\"engram_layer_ids\": [1], \"engram_max_ngram_size\": 3, \"engram_vocab_size\": 2000000000,"
	    "\"engram_n_heads\": 2, \"engram_pad_token_id\": 2, \"engram_compressed_vocab_size\": 20}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_RC(eht_engram_layout_from_json(bad[i], strlen(bad[i]), &l), -EINVAL);
	}
	const char *ok = "{\"engram_layer_ids\": [1, 2], \"engram_max_ngram_size\": 3, \"engram_vocab_size\": [10, 30],"
			 "\"engram_n_heads\": 1, \"engram_pad_token_id\": 0, \"engram_compressed_vocab_size\": 5}";
	CHECK_RC(eht_engram_layout_from_json(ok, strlen(ok), &l), 0);
	uint64_t p;
	eht_engram_layout_column(l, 0, 0, &p, NULL);
	CHECK(p == 11);
	eht_engram_layout_column(l, 0, 1, &p, NULL);
	CHECK(p == 31);
	eht_engram_layout_column(l, 1, 0, &p, NULL);
	CHECK(p == 13);
	eht_engram_layout_column(l, 1, 1, &p, NULL);
	CHECK(p == 37);
	/* token map */
	int32_t map[8] = {0, 4, 1, 1, 2, 3, 0, 4};
	CHECK_RC(eht_engram_layout_set_token_map(l, map, 8), 0);
	map[7] = 5;
	CHECK_RC(eht_engram_layout_set_token_map(l, map, 8), -EINVAL);
	map[7] = 3;
	map[1] = 3; /* max + 1 = 4 != 5 */
	CHECK_RC(eht_engram_layout_set_token_map(l, map, 8), -EINVAL);
	eht_engram_layout_free(l);
	CHECK_RC(eht_engram_layout_preset("v99", &l), -ENOENT);
	/* the presets know the tokenizer: a map of another length is refused */
	CHECK_RC(eht_engram_layout_preset("v41-small", &l), 0);
	int32_t *big = calloc(129281, 4);
	for (int i = 0; i < 129281; i++)
		big[i] = i % 99092;
	CHECK_RC(eht_engram_layout_set_token_map(l, big, 129281), -EINVAL);
	CHECK(strstr(eht_last_error(), "129280") != NULL);
	CHECK_RC(eht_engram_layout_set_token_map(l, big, 129280), 0);
	free(big);
	eht_engram_layout_free(l);
	/* the prime search against trial division: 2 layers x 7 orders x 32 heads from 2 upwards */
	const char *many = "{\"engram_layer_ids\": [0, 1], \"engram_max_ngram_size\": 8, \"engram_vocab_size\": 2,"
			   "\"engram_n_heads\": 32, \"engram_pad_token_id\": 0, \"engram_compressed_vocab_size\": 5}";
	CHECK_RC(eht_engram_layout_from_json(many, strlen(many), &l), 0);
	uint64_t q = 1;
	int badp = 0;
	for (uint32_t li = 0; li < 2 && l; li++)
		for (uint32_t c = 0; c < 7 * 32; c++) {
			eht_engram_layout_column(l, li, c, &p, NULL);
			for (uint64_t d = 2; d * d <= p; d++)
				badp += p % d == 0;
			if (li == 0 && c < 32) /* order 2 of layer 0: the 32 smallest primes >= 2, rising */
				badp += p <= q, q = p;
		}
	CHECK(badp == 0);
	eht_engram_layout_free(l);
}

static void check_mod(void)
{
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_preset("v41", &l), 0);
	if (!l)
		return;
	uint64_t s = 1;
	int bad = 0;
	for (int i = 0; i < 2000000; i++) {
		uint64_t x = t_rand(&s);
		if (i % 4 == 1)
			x >>= 1; /* hash values are < 2^63 */
		if (i % 4 == 2)
			x = (uint64_t)i; /* small ones */
		uint32_t c = (uint32_t)(i % 24), li = (uint32_t)(i / 24 % 2);
		bad += engram_mod(x, l->mod[li][c], l->rcp[li][c]) != x % l->mod[li][c];
	}
	uint64_t edge[] = {0, 1, UINT64_MAX, UINT64_MAX - 1, (1ull << 63) - 1, 16000057ull * 1000003};
	for (size_t k = 0; k < sizeof(edge) / sizeof(edge[0]); k++)
		for (uint32_t c = 0; c < 24; c++)
			bad += engram_mod(edge[k], l->mod[0][c], l->rcp[0][c]) != edge[k] % l->mod[0][c];
	CHECK(bad == 0);
	eht_engram_layout_free(l);
}

/* A random multi-request batch (with image tokens and mixed histories) against the reference; big
 * enough for the threaded path. */
static void check_random_batch(size_t n_tokens, size_t n_req, uint64_t seed)
{
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_preset("v41", &l), 0);
	if (!l)
		return;
	int32_t *tok = malloc(n_tokens * 4), *rows = malloc(n_tokens * 48 * 4), *hist = malloc(n_req * 3 * 4);
	uint8_t *dead = malloc(n_tokens);
	uint32_t *st = malloc((n_req + 1) * 4);
	uint64_t s = seed;
	for (size_t i = 0; i < n_tokens; i++) {
		tok[i] = (int32_t)(t_rand(&s) % (i % 7 == 0 ? 50 : 99092));
		dead[i] = t_rand(&s) % 23 == 0;
	}
	for (size_t r = 0; r < n_req * 3; r++) {
		uint64_t x = t_rand(&s) % 6;
		hist[r] = x == 0 ? -1 : x == 1 ? -2 : (int32_t)(t_rand(&s) % 99092);
	}
	st[0] = 0;
	st[n_req] = (uint32_t)n_tokens;
	for (size_t r = 1; r < n_req; r++) {
		st[r] = (uint32_t)(t_rand(&s) % (n_tokens + 1));
	}
	for (size_t r = 1; r < n_req; r++) /* sort (insertion: small n) */
		for (size_t q = r; q > 1 && st[q] < st[q - 1]; q--) {
			uint32_t t = st[q];
			st[q] = st[q - 1];
			st[q - 1] = t;
		}
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = n_tokens, .tokens = tok, .dead = dead,
				     .n_requests = n_req, .starts = st, .history = hist};
	CHECK_RC(eht_engram_hash(l, &b, rows), 0);
	size_t bad = 0;
	for (size_t r = 0; r < n_req; r++)
		for (size_t i = st[r]; i < st[r + 1]; i++) {
			int32_t win[4], want[48];
			for (int k = 0; k < 4; k++) {
				long j = (long)i - k;
				if (j >= (long)st[r])
					win[k] = dead[j] ? -2 : tok[j];
				else
					win[k] = hist[r * 3 + (st[r] - j - 1)];
			}
			ref_token(l, win, want);
			bad += memcmp(want, rows + i * 48, sizeof(want)) != 0;
		}
	CHECK(bad == 0);
	free(tok);
	free(rows);
	free(hist);
	free(dead);
	free(st);
	eht_engram_layout_free(l);
}

/* Chunked prefill = one-shot = token-by-token decode; image tokens at chunk boundaries; fork,
 * rollback and drop. */
static void check_state(void)
{
	eht_engram_layout *l = NULL;
	CHECK_RC(eht_engram_layout_preset("v41", &l), 0);
	if (!l)
		return;
	enum { N = 300 };
	int32_t tok[N], *one = malloc(N * 48 * 4), *got = malloc(N * 48 * 4);
	uint8_t dead[N];
	uint64_t s = 7;
	for (int i = 0; i < N; i++) {
		tok[i] = (int32_t)(t_rand(&s) % 99092);
		dead[i] = (i % 37 == 36) || (i >= 100 && i < 104) || i == 150 || i == 151;
	}
	uint32_t st[2] = {0, N};
	struct eht_engram_batch b = {.size = sizeof(b), .n_tokens = N, .tokens = tok, .dead = dead, .n_requests = 1,
				     .starts = st};
	CHECK_RC(eht_engram_hash(l, &b, one), 0);
	/* chunks of several sizes; cuts at 100 and 150 fall on image tokens */
	static const uint32_t cuts[] = {0, 1, 2, 3, 7, 100, 101, 150, 151, 152, 200, 299, N};
	eht_engram_state *S = NULL;
	CHECK_RC(eht_engram_state_create(l, 0, &S), 0);
	if (!S)
		goto out;
	uint64_t req = 42;
	for (size_t k = 0; k + 1 < sizeof(cuts) / sizeof(cuts[0]); k++) {
		uint32_t cs[2] = {0, cuts[k + 1] - cuts[k]};
		struct eht_engram_batch c = {.size = sizeof(c), .n_tokens = cs[1], .tokens = tok + cuts[k],
					     .dead = dead + cuts[k], .n_requests = 1, .starts = cs};
		CHECK_RC(eht_engram_state_step(S, &req, &c, got + (size_t)cuts[k] * 48), 0);
	}
	CHECK(!memcmp(one, got, N * 48 * 4));
	/* token by token, two requests interleaved in one batch per step (the second a fork at 150) */
	memset(got, 0, N * 48 * 4);
	uint64_t rq[2] = {1, 2};
	int32_t *other = malloc(N * 48 * 4);
	CHECK_RC(eht_engram_state_add(S, 1), 0);
	CHECK_RC(eht_engram_state_add(S, 1), -EEXIST);
	for (uint32_t i = 0; i < N; i++) {
		int32_t t2[2] = {tok[i], tok[i]};
		uint8_t d2[2] = {dead[i], dead[i]};
		uint32_t cs[3] = {0, 1, 2};
		int32_t out[96];
		int two = i >= 150;
		if (i == 150)
			CHECK_RC(eht_engram_state_fork(S, 1, 2), 0);
		struct eht_engram_batch c = {.size = sizeof(c), .n_tokens = two ? 2 : 1, .tokens = t2, .dead = d2,
					     .n_requests = two ? 2 : 1, .starts = cs};
		CHECK_RC(eht_engram_state_step(S, rq, &c, out), 0);
		memcpy(got + i * 48, out, 48 * 4);
		if (two)
			memcpy(other + i * 48, out + 48, 48 * 4);
	}
	CHECK(!memcmp(one, got, N * 48 * 4));
	CHECK(!memcmp(one + 150 * 48, other + 150 * 48, (N - 150) * 48 * 4));
	/* rollback 5 and redo the last 5 tokens: the same rows */
	CHECK_RC(eht_engram_state_rollback(S, 1, 5), 0);
	{
		uint32_t cs[2] = {0, 5};
		struct eht_engram_batch c = {.size = sizeof(c), .n_tokens = 5, .tokens = tok + N - 5,
					     .dead = dead + N - 5, .n_requests = 1, .starts = cs};
		CHECK_RC(eht_engram_state_step(S, rq, &c, got), 0);
		CHECK(!memcmp(got, one + (N - 5) * 48, 5 * 48 * 4));
	}
	int32_t h[3];
	CHECK_RC(eht_engram_state_rollback(S, 1, 290), 0); /* 10 left; kept 64: older ones unknown */
	CHECK_RC(eht_engram_state_history(S, 1, h), 0);
	CHECK(h[0] == EHT_ENGRAM_HIST_UNKNOWN && h[2] == EHT_ENGRAM_HIST_UNKNOWN);
	CHECK_RC(eht_engram_state_rollback(S, 1, 11), -ERANGE);
	CHECK_RC(eht_engram_state_rollback(S, 1, 10), 0);
	CHECK_RC(eht_engram_state_history(S, 1, h), 0);
	CHECK(h[0] == EHT_ENGRAM_HIST_BLOCK);
	CHECK_RC(eht_engram_state_drop(S, 2), 0);
	CHECK_RC(eht_engram_state_drop(S, 2), -ENOENT);
	uint64_t twice[2] = {1, 1};
	uint32_t cs[3] = {0, 1, 2};
	struct eht_engram_batch c = {.size = sizeof(c), .n_tokens = 2, .tokens = tok, .n_requests = 2, .starts = cs};
	CHECK_RC(eht_engram_state_step(S, twice, &c, got), -EINVAL);
	free(other);
out:
	eht_engram_state_destroy(S);
	free(one);
	free(got);
	eht_engram_layout_free(l);
}

int main(void)
{
	check_v41_constants();
	check_rng();
	check_independent_vectors();
	check_tiny();
	check_configs();
	check_mod();
	check_random_batch(1000, 10, 3);
	check_random_batch(50000, 300, 4);
	check_random_batch(20000, 1, 5);
	check_state();
	return t_done();
}
