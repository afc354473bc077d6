/* SPDX-License-Identifier: Apache-2.0 */
/* layout.c: Engram layouts (presets, config.json), their primes, offsets, multipliers and token map. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engram/engram_impl.h"
#include "util/err.h"
#include "util/file.h"

#define SEED_PRIME 10007

struct layout_cfg {
	uint32_t n_layers, max_ngram, n_heads;
	uint32_t layer_ids[EHT_ENGRAM_MAX_LAYERS];
	uint64_t vocab[EHT_ENGRAM_MAX_NGRAM];
	uint64_t compressed_vocab;
	int64_t pad;
	int have_rows;
	uint64_t rows[EHT_ENGRAM_MAX_LAYERS];
	uint64_t tokenizer_vocab;
};

static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m) { return (uint64_t)((unsigned __int128)a * b % m); }

static uint64_t powmod(uint64_t a, uint64_t e, uint64_t m)
{
	uint64_t r = 1;
	for (a %= m; e; e >>= 1, a = mulmod(a, a, m))
		if (e & 1)
			r = mulmod(r, a, m);
	return r;
}

/* Deterministic Miller-Rabin: these bases decide every n < 3.3e24 (configs stay far below). */
static int is_prime(uint64_t n)
{
	static const uint64_t bases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
	if (n < 2)
		return 0;
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
		if (n % bases[i] == 0)
			return n == bases[i];
	uint64_t d = n - 1;
	int r = 0;
	while (!(d & 1))
		d >>= 1, r++;
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		uint64_t x = powmod(bases[i], d, n);
		if (x == 1 || x == n - 1)
			continue;
		int composite = 1;
		for (int k = 1; k < r && composite; k++) {
			x = mulmod(x, x, n);
			composite = x != n - 1;
		}
		if (composite)
			return 0;
	}
	return 1;
}

static int build(const struct layout_cfg *c, eht_engram_layout **out)
{
	eht_engram_layout *l = calloc(1, sizeof(*l));
	if (!l)
		return eht_err(ENOMEM, "engram layout: out of memory");
	l->n_layers = c->n_layers;
	l->max_ngram = c->max_ngram;
	l->n_heads = c->n_heads;
	l->cols = (c->max_ngram - 1) * c->n_heads;
	memcpy(l->layer_ids, c->layer_ids, sizeof(l->layer_ids));
	memcpy(l->vocab, c->vocab, sizeof(l->vocab));
	l->compressed_vocab = c->compressed_vocab;
	l->pad = (int32_t)c->pad;
	l->tokenizer_vocab = c->tokenizer_vocab;
	/* primes never repeat across orders and layers; each order's search restarts at its vocab */
	uint64_t used[EHT_ENGRAM_MAX_LAYERS * ENGRAM_MAX_COLS];
	size_t nused = 0;
	for (uint32_t li = 0; li < l->n_layers; li++) {
		uint64_t off = 0;
		for (uint32_t o = 0; o < l->max_ngram - 1; o++) {
			uint64_t cand = l->vocab[o] - 1;
			for (uint32_t h = 0; h < l->n_heads; h++) {
				for (;;) {
					cand++;
					if (!is_prime(cand))
						continue;
					size_t k = 0;
					while (k < nused && used[k] != cand)
						k++;
					if (k == nused)
						break;
				}
				used[nused++] = cand;
				uint32_t col = o * l->n_heads + h;
				l->mod[li][col] = cand;
				l->off[li][col] = off;
				l->rcp[li][col] = (uint64_t)(((unsigned __int128)1 << 64) / cand);
				off += cand;
			}
		}
		l->rows[li] = off;
		if (off > INT32_MAX) {
			free(l);
			return eht_err(EINVAL, "engram layout: layer %u has %llu rows; row ids are int32",
				       c->layer_ids[li], (unsigned long long)off);
		}
		if (c->have_rows && c->rows[li] != off) {
			free(l);
			return eht_err(EINVAL,
				       "engram layout: engram_num_embeddings[%u] is %llu but the head ranges of layer %u "
				       "sum to %llu",
				       li, (unsigned long long)c->rows[li], c->layer_ids[li], (unsigned long long)off);
		}
		int64_t r[EHT_ENGRAM_MAX_NGRAM];
		int64_t half = (int64_t)(INT64_MAX / (int64_t)l->compressed_vocab / 2);
		int rc = eht_engram_rng_integers((uint64_t)SEED_PRIME * l->layer_ids[li], half > 0 ? half : 1,
						 l->max_ngram, r);
		if (rc) {
			free(l);
			return rc;
		}
		for (uint32_t s = 0; s < l->max_ngram; s++)
			l->mult[li][s] = 2 * (uint64_t)r[s] + 1;
	}
	*out = l;
	return 0;
}

static int check_cfg(const struct layout_cfg *c)
{
	if (c->n_layers < 1 || c->n_layers > EHT_ENGRAM_MAX_LAYERS)
		return eht_err(EINVAL, "engram layout: engram_layer_ids has %u entries (1..%d)", c->n_layers,
			       EHT_ENGRAM_MAX_LAYERS);
	if (c->max_ngram < 2 || c->max_ngram > EHT_ENGRAM_MAX_NGRAM)
		return eht_err(EINVAL, "engram layout: engram_max_ngram_size %u (2..%d)", c->max_ngram,
			       EHT_ENGRAM_MAX_NGRAM);
	if (c->n_heads < 1 || c->n_heads > EHT_ENGRAM_MAX_HEADS)
		return eht_err(EINVAL, "engram layout: engram_n_heads %u (1..%d)", c->n_heads, EHT_ENGRAM_MAX_HEADS);
	for (uint32_t o = 0; o < c->max_ngram - 1; o++)
		if (c->vocab[o] < 2 || c->vocab[o] > (1u << 30))
			return eht_err(EINVAL, "engram layout: engram_vocab_size %llu (2..2^30)",
				       (unsigned long long)c->vocab[o]);
	if (c->compressed_vocab < 1 || c->compressed_vocab > INT32_MAX)
		return eht_err(EINVAL, "engram layout: engram_compressed_vocab_size %llu (1..2^31-1)",
			       (unsigned long long)c->compressed_vocab);
	if (c->pad < 0 || (uint64_t)c->pad >= c->compressed_vocab)
		return eht_err(EINVAL, "engram layout: engram_pad_token_id %lld outside [0, %llu)", (long long)c->pad,
			       (unsigned long long)c->compressed_vocab);
	for (uint32_t i = 0; i < c->n_layers; i++)
		if (c->layer_ids[i] > 100000)
			return eht_err(EINVAL, "engram layout: layer id %u too large", c->layer_ids[i]);
	return 0;
}

int eht_engram_layout_preset(const char *name, eht_engram_layout **out)
{
	if (!name || !out)
		return eht_err(EINVAL, "eht_engram_layout_preset: NULL argument");
	struct layout_cfg c = {.n_layers = 2, .max_ngram = 4, .n_heads = 8, .layer_ids = {1, 14},
			       .compressed_vocab = 99092, .pad = 2, .tokenizer_vocab = 129280};
	uint64_t v;
	if (!strcmp(name, "v41"))
		v = 16000000;
	else if (!strcmp(name, "v41-small"))
		v = 500;
	else
		return eht_err(ENOENT, "engram layout: unknown preset '%s' (known: v41, v41-small)", name);
	for (int o = 0; o < 3; o++)
		c.vocab[o] = v;
	if (!strcmp(name, "v41")) {
		c.have_rows = 1;
		c.rows[0] = 384006168;
		c.rows[1] = 384016682;
	}
	return build(&c, out);
}

static int get_uint(json_t *cfg, const char *key, uint64_t max, uint64_t *v)
{
	json_t *j = json_object_get(cfg, key);
	if (!j)
		return eht_err(EINVAL, "engram config: no key %s", key);
	if (!json_is_integer(j) || json_integer_value(j) < 0 || (uint64_t)json_integer_value(j) > max)
		return eht_err(EINVAL, "engram config: %s must be an integer in [0, %llu]", key, (unsigned long long)max);
	*v = (uint64_t)json_integer_value(j);
	return 0;
}

static int get_array(json_t *cfg, const char *key, uint64_t max, uint64_t *v, size_t cap, size_t *n)
{
	json_t *j = json_object_get(cfg, key), *e;
	size_t i;
	if (!j)
		return eht_err(EINVAL, "engram config: no key %s", key);
	if (!json_is_array(j) || json_array_size(j) == 0 || json_array_size(j) > cap)
		return eht_err(EINVAL, "engram config: %s must be an array of 1..%zu integers", key, cap);
	json_array_foreach(j, i, e)
	{
		if (!json_is_integer(e) || json_integer_value(e) < 0 || (uint64_t)json_integer_value(e) > max)
			return eht_err(EINVAL, "engram config: %s[%zu] must be an integer in [0, %llu]", key, i,
				       (unsigned long long)max);
		v[i] = (uint64_t)json_integer_value(e);
	}
	*n = i; /* the entries written */
	return 0;
}

int eht_engram_layout_from_json(const char *json, size_t len, eht_engram_layout **out)
{
	if (!json || !out)
		return eht_err(EINVAL, "eht_engram_layout_from_json: NULL argument");
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return eht_err(EINVAL, "engram config: line %d: %s", je.line, je.text);
	struct layout_cfg c = {0};
	uint64_t v = 0, arr[EHT_ENGRAM_MAX_LAYERS];
	size_t n;
	int rc;
	json_t *cfg = json_object_get(root, "text_config");
	if (!cfg)
		cfg = root;
	if (!json_is_object(cfg)) {
		rc = eht_err(EINVAL, "engram config: not a JSON object");
		goto out;
	}
	if ((rc = get_array(cfg, "engram_layer_ids", 100000, arr, EHT_ENGRAM_MAX_LAYERS, &n)))
		goto out;
	c.n_layers = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		c.layer_ids[i] = (uint32_t)arr[i];
	if ((rc = get_uint(cfg, "engram_max_ngram_size", EHT_ENGRAM_MAX_NGRAM, &v)))
		goto out;
	c.max_ngram = (uint32_t)v;
	if ((rc = get_uint(cfg, "engram_n_heads", EHT_ENGRAM_MAX_HEADS, &v)))
		goto out;
	c.n_heads = (uint32_t)v;
	if ((rc = get_uint(cfg, "engram_compressed_vocab_size", INT32_MAX, &c.compressed_vocab)))
		goto out;
	if ((rc = get_uint(cfg, "engram_pad_token_id", INT32_MAX, &v)))
		goto out;
	c.pad = (int64_t)v;
	json_t *vj = json_object_get(cfg, "engram_vocab_size");
	if (vj && json_is_array(vj)) {
		if ((rc = get_array(cfg, "engram_vocab_size", 1u << 30, arr, EHT_ENGRAM_MAX_NGRAM, &n)))
			goto out;
		if (c.max_ngram < 2 || n != c.max_ngram - 1) {
			rc = eht_err(EINVAL, "engram config: engram_vocab_size has %zu entries; max_ngram %u needs %u", n,
				     c.max_ngram, c.max_ngram > 1 ? c.max_ngram - 1 : 0);
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			c.vocab[i] = arr[i];
	} else {
		if ((rc = get_uint(cfg, "engram_vocab_size", 1u << 30, &v)))
			goto out;
		for (int i = 0; i < EHT_ENGRAM_MAX_NGRAM; i++)
			c.vocab[i] = v;
	}
	if (json_object_get(cfg, "engram_num_embeddings")) {
		if ((rc = get_array(cfg, "engram_num_embeddings", INT32_MAX, c.rows, EHT_ENGRAM_MAX_LAYERS, &n)))
			goto out;
		if (n != c.n_layers) {
			rc = eht_err(EINVAL, "engram config: engram_num_embeddings has %zu entries for %u layers", n,
				     c.n_layers);
			goto out;
		}
		c.have_rows = 1;
	}
	json_t *tv = json_object_get(cfg, "vocab_size"); /* the tokenizer's: a token map's length */
	if (tv && (rc = get_uint(cfg, "vocab_size", INT32_MAX, &c.tokenizer_vocab)))
		goto out;
	if ((rc = check_cfg(&c)))
		goto out;
	rc = build(&c, out);
out:
	json_decref(root);
	return rc;
}

int eht_engram_layout_from_file(const char *path, eht_engram_layout **out)
{
	if (!path || !out)
		return eht_err(EINVAL, "eht_engram_layout_from_file: NULL argument");
	char *b;
	size_t n;
	int rc = eht_file_read_all(path, "config", 64u << 20, &b, &n);
	if (rc)
		return rc;
	rc = eht_engram_layout_from_json(b, n, out);
	free(b);
	return rc ? eht_err_prefix(rc, "%s", path) : 0;
}

void eht_engram_layout_free(eht_engram_layout *l)
{
	if (!l)
		return;
	engram_gpu_free(l);
	free(l->token_map);
	free(l);
}

int eht_engram_layout_info(const eht_engram_layout *l, struct eht_engram_info *info)
{
	if (!l || !info || info->size < sizeof(*info))
		return eht_err(EINVAL, "eht_engram_layout_info: NULL argument or size too small");
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	info->n_layers = l->n_layers;
	info->max_ngram = l->max_ngram;
	info->n_heads = l->n_heads;
	info->cols = l->cols;
	memcpy(info->layer_ids, l->layer_ids, sizeof(info->layer_ids));
	memcpy(info->rows, l->rows, sizeof(info->rows));
	info->compressed_vocab = l->compressed_vocab;
	info->pad_id = l->pad;
	info->token_map_len = l->token_map_len;
	return 0;
}

int eht_engram_layout_column(const eht_engram_layout *l, uint32_t li, uint32_t col, uint64_t *modulus,
			     uint64_t *offset)
{
	if (!l || li >= l->n_layers || col >= l->cols)
		return eht_err(EINVAL, "eht_engram_layout_column: layer index %u / column %u out of range", li, col);
	if (modulus)
		*modulus = l->mod[li][col];
	if (offset)
		*offset = l->off[li][col];
	return 0;
}

int eht_engram_layout_multipliers(const eht_engram_layout *l, uint32_t li, uint64_t *out)
{
	if (!l || !out || li >= l->n_layers)
		return eht_err(EINVAL, "eht_engram_layout_multipliers: bad argument (layer index %u)", li);
	memcpy(out, l->mult[li], l->max_ngram * sizeof(uint64_t));
	return 0;
}

int eht_engram_layout_set_token_map(eht_engram_layout *l, const int32_t *map, size_t n)
{
	if (!l || !map || n == 0 || n > INT32_MAX)
		return eht_err(EINVAL, "eht_engram_layout_set_token_map: bad argument (%zu entries)", n);
	if (l->tokenizer_vocab && n != l->tokenizer_vocab)
		return eht_err(EINVAL, "token map: %zu entries, but the tokenizer has %llu ids", n,
			       (unsigned long long)l->tokenizer_vocab);
	int32_t max = -1;
	for (size_t i = 0; i < n; i++) {
		if (map[i] < 0 || (uint64_t)map[i] >= l->compressed_vocab)
			return eht_err(EINVAL, "token map: entry %zu is %d, outside [0, %llu)", i, map[i],
				       (unsigned long long)l->compressed_vocab);
		if (map[i] > max)
			max = map[i];
	}
	if ((uint64_t)max + 1 != l->compressed_vocab)
		return eht_err(EINVAL, "token map: largest entry %d, but the compressed vocabulary is %llu", max,
			       (unsigned long long)l->compressed_vocab);
	int32_t *m = malloc(n * sizeof(*m));
	if (!m)
		return eht_err(ENOMEM, "token map: out of memory");
	memcpy(m, map, n * sizeof(*m));
	engram_gpu_free(l); /* the GPU copy follows the new map */
	free(l->token_map);
	l->token_map = m;
	l->token_map_len = (uint32_t)n;
	return 0;
}

int eht_engram_layout_load_token_map(eht_engram_layout *l, const char *path)
{
	if (!l || !path)
		return eht_err(EINVAL, "eht_engram_layout_load_token_map: NULL argument");
	char *b;
	size_t n;
	int rc = eht_file_read_all(path, "token map", (size_t)1 << 31, &b, &n);
	if (rc)
		return rc;
	if (n == 0 || n % 4) {
		free(b);
		return eht_err(EINVAL, "%s: %zu bytes is not a whole number of int32 entries", path, n);
	}
	int32_t *m = malloc(n);
	if (!m) {
		free(b);
		return eht_err(ENOMEM, "%s: out of memory", path);
	}
	const uint8_t *u = (const uint8_t *)b;
	for (size_t i = 0; i < n / 4; i++)
		m[i] = (int32_t)((uint32_t)u[4 * i] | (uint32_t)u[4 * i + 1] << 8 | (uint32_t)u[4 * i + 2] << 16 |
				 (uint32_t)u[4 * i + 3] << 24);
	free(b);
	rc = eht_engram_layout_set_token_map(l, m, n / 4);
	free(m);
	return rc ? eht_err_prefix(rc, "%s", path) : 0;
}

int eht_engram_shard(const eht_engram_layout *l, uint32_t li, uint32_t tp, uint32_t rank, uint64_t *vocab_start,
		     uint64_t *vocab_end)
{
	if (!l || !vocab_start || !vocab_end || li >= l->n_layers)
		return eht_err(EINVAL, "eht_engram_shard: bad argument (layer index %u)", li);
	if (tp == 0 || rank >= tp)
		return eht_err(EINVAL, "eht_engram_shard: rank %u of tp %u", rank, tp);
	uint32_t part = (l->cols + tp - 1) / tp, c0 = rank * part, c1 = c0 + part;
	/* vLLM's rule: the last rank must own a head range ((tp - 1) * part < cols), so 7, 9, 10, 11 and
	 * every tp > 12 are refused for 24 columns although tp <= cols / 2. */
	if ((uint64_t)(tp - 1) * part >= l->cols)
		return eht_err(EINVAL, "eht_engram_shard: tp %u: with ceil(%u / %u) = %u head ranges per rank, rank %u "
				       "would own no head range (vLLM refuses such a tp)",
			       tp, l->cols, tp, part, tp - 1);
	if (c0 > l->cols)
		c0 = l->cols;
	if (c1 > l->cols)
		c1 = l->cols;
	*vocab_start = c0 < l->cols ? l->off[li][c0] : l->rows[li];
	*vocab_end = c1 < l->cols ? l->off[li][c1] : l->rows[li];
	return 0;
}
