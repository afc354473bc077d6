/* SPDX-License-Identifier: Apache-2.0 */
/* st_synth.c: a small synthetic Engram-shaped checkpoint, deterministic from a seed (demo, tests). */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "st/st_impl.h"
#include "util/err.h"
#include "util/opts.h"

#define MAX_TABLES 1000

enum { K_WEIGHT, K_SCALE, K_DUMMY };

struct synth_tensor {
	char name[96];
	int kind;
	uint64_t shape[2];
	uint64_t seed;
	uint32_t shard;
};

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Byte p of a tensor depends only on (seed, p): any chunking gives the same bytes. */
static int synth_fill(void *ctx, uint64_t off, void *buf, size_t len)
{
	const struct synth_tensor *t = ctx;
	uint8_t *b = buf;
	for (size_t i = 0; i < len;) {
		/* The 8 bytes of word p >> 3 come from one mix: computed once a word, not once a byte
		 * (8x fewer; generating a test's checkpoint took minutes under TSan). */
		uint64_t p = off + i;
		uint64_t w = mix(t->seed + (p >> 3) * 0x9e3779b97f4a7c15ull);
		for (unsigned k = (unsigned)(p & 7); k < 8 && i < len; k++, i++) {
			uint8_t x = (uint8_t)(w >> (8 * k));
			switch (t->kind) {
			case K_WEIGHT:
				/* 0x7f and 0xff are NaN in e4m3fn */
				b[i] = (x & 0x7f) == 0x7f ? x ^ 1 : x;
				break;
			case K_SCALE:
				b[i] = (uint8_t)(120 + x % 15); /* 2^-7 .. 2^7 */
				break;
			default:
				/* bf16, little-endian: random mantissa and sign, exponent 120..127 (never NaN);
				 * k has the parity of the byte's offset */
				b[i] = (k & 1) ? (uint8_t)((x & 0x80) | (60 + (x & 3))) : x;
				break;
			}
		}
	}
	return 0;
}

uint32_t eht_synth_layer(uint32_t table) { return 1 + 13 * table; }

static int cmp_tensor(const void *a, const void *b)
{
	return strcmp(((const struct synth_tensor *)a)->name, ((const struct synth_tensor *)b)->name);
}

/* Removes what an earlier run may have left, so the directory reads as exactly this checkpoint. */
static int clean_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;
	if (!d)
		return eht_err_sys(errno, "%s: opendir", dir);
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		size_t l = strlen(n);
		int ours = !strcmp(n, "model.safetensors") || !strcmp(n, "model.safetensors.index.json") ||
			   (!strncmp(n, "model-", 6) && l > 12 && !strcmp(n + l - 12, ".safetensors") &&
			    strstr(n, "-of-"));
		if (!ours)
			continue;
		char *p;
		if (asprintf(&p, "%s/%s", dir, n) < 0) {
			rc = eht_err(ENOMEM, "out of memory");
			break;
		}
		if (unlink(p) != 0 && errno != ENOENT)
			rc = eht_err_sys(errno, "%s: unlink", p);
		free(p);
		if (rc)
			break;
	}
	closedir(d);
	return rc;
}

static int write_index(const char *dir, const struct synth_tensor *t, size_t nt, uint32_t shards, uint64_t total)
{
	json_t *root = json_object(), *meta = json_object(), *wm = json_object();
	char *path = NULL, *tmp = NULL;
	int rc = 0;
	if (!root || !meta || !wm) {
		json_decref(meta);
		json_decref(wm);
		rc = eht_err(ENOMEM, "out of memory");
		goto out;
	}
	json_object_set_new(meta, "total_size", json_integer((json_int_t)total));
	json_object_set_new(root, "metadata", meta);
	json_object_set_new(root, "weight_map", wm);
	for (size_t i = 0; i < nt; i++) {
		char shard[64];
		snprintf(shard, sizeof(shard), "model-%05u-of-%05u.safetensors", t[i].shard + 1, shards);
		if (json_object_set_new(wm, t[i].name, json_string(shard))) {
			rc = eht_err(ENOMEM, "out of memory");
			goto out;
		}
	}
	if (asprintf(&path, "%s/model.safetensors.index.json", dir) < 0 || asprintf(&tmp, "%s.tmp", path) < 0) {
		rc = eht_err(ENOMEM, "out of memory");
		goto out;
	}
	if (json_dump_file(root, tmp, JSON_INDENT(2)) != 0) {
		rc = eht_err(EIO, "%s: could not write", tmp);
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) != 0)
		rc = eht_err_sys(errno, "rename %s -> %s", tmp, path);
out:
	free(path);
	free(tmp);
	json_decref(root);
	return rc;
}

int eht_synth_checkpoint(const char *dir, const struct eht_synth_opts *opts)
{
	struct eht_synth_opts o = {.size = sizeof(o)};
	struct synth_tensor *t = NULL;
	struct eht_st_write_tensor *w = NULL;
	int rc = 0;
	if (!dir)
		return eht_err(EINVAL, "eht_synth_checkpoint: NULL directory");
	if ((rc = eht_opts_in(&o, sizeof(o), opts, "eht_synth_checkpoint: opts")))
		return rc;
	if (o.flags)
		return eht_err(EINVAL, "eht_synth_checkpoint: unknown flags 0x%x", o.flags);
	if (!o.tables)
		o.tables = EHT_SYNTH_DEFAULT_TABLES;
	if (!o.rows)
		o.rows = EHT_SYNTH_DEFAULT_ROWS;
	if (!o.shards)
		o.shards = 1;
	if (o.tables > MAX_TABLES)
		return eht_err(EINVAL, "eht_synth_checkpoint: %u tables (at most %d)", o.tables, MAX_TABLES);
	size_t nt = 2 * (size_t)o.tables + 1;
	if (o.shards > nt)
		return eht_err(EINVAL, "eht_synth_checkpoint: %u shards for %zu tensors (at most one file per tensor)",
			       o.shards, nt);
	const bool made = mkdir(dir, 0755) == 0;
	if (!made && errno != EEXIST)
		return eht_err_sys(errno, "%s: mkdir", dir);
	if ((rc = clean_dir(dir)))
		return rc;

	t = calloc(nt, sizeof(*t));
	w = calloc(nt, sizeof(*w));
	if (!t || !w) {
		rc = eht_err(ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < o.tables; i++) {
		struct synth_tensor *wt = &t[2 * i], *sc = &t[2 * i + 1];
		snprintf(wt->name, sizeof(wt->name), "layers.%u.engram.embed.weight", eht_synth_layer(i));
		snprintf(sc->name, sizeof(sc->name), "layers.%u.engram.embed.scale", eht_synth_layer(i));
		wt->kind = K_WEIGHT;
		wt->shape[0] = sc->shape[0] = o.table_rows ? o.table_rows[i] : o.rows;
		if (!wt->shape[0]) {
			rc = eht_err(EINVAL, "eht_synth_checkpoint: table_rows[%u] is 0", i);
			goto out;
		}
		wt->shape[1] = EHT_ENGRAM_DIM;
		sc->kind = K_SCALE;
		sc->shape[1] = EHT_ENGRAM_DIM / EHT_ENGRAM_GROUP;
	}
	struct synth_tensor *dm = &t[nt - 1];
	snprintf(dm->name, sizeof(dm->name), "layers.0.attn.dummy");
	dm->kind = K_DUMMY;
	dm->shape[0] = dm->shape[1] = 64;
	qsort(t, nt, sizeof(*t), cmp_tensor);
	uint64_t total = 0;
	for (size_t k = 0; k < nt; k++) {
		/* per-tensor stream from the seed and the name, independent of the shard layout */
		uint64_t h = mix(o.seed ^ 0x6a09e667f3bcc908ull);
		for (const char *c = t[k].name; *c; c++)
			h = mix(h ^ (uint8_t)*c);
		t[k].seed = h;
		t[k].shard = (uint32_t)(k % o.shards);
		total += t[k].shape[0] * t[k].shape[1] * (t[k].kind == K_DUMMY ? 2 : 1);
	}
	static const char *const meta[] = {"format", "pt", NULL};
	for (uint32_t s = 0; s < o.shards; s++) {
		size_t n = 0;
		for (size_t k = 0; k < nt; k++) {
			if (t[k].shard != s)
				continue;
			w[n] = (struct eht_st_write_tensor){
				.name = t[k].name,
				.dtype = t[k].kind == K_WEIGHT  ? EHT_DTYPE_F8_E4M3
					 : t[k].kind == K_SCALE ? EHT_DTYPE_F8_E8M0
								: EHT_DTYPE_BF16,
				.ndim = 2,
				.shape = t[k].shape,
				.fill = synth_fill,
				.ctx = &t[k],
			};
			n++;
		}
		char *path;
		int r = o.shards == 1 ? asprintf(&path, "%s/model.safetensors", dir)
				      : asprintf(&path, "%s/model-%05u-of-%05u.safetensors", dir, s + 1, o.shards);
		if (r < 0) {
			rc = eht_err(ENOMEM, "out of memory");
			goto out;
		}
		rc = eht_st_write(path, w, n, meta, 0);
		free(path);
		if (rc)
			goto out;
	}
	if (o.shards > 1)
		rc = write_index(dir, t, nt, o.shards, total);
out:
	free(t);
	free(w);
	if (rc) { /* no partial checkpoint left behind: a shard written before a later one failed */
		struct eht_err_saved cause;
		eht_err_save(&cause);
		if (clean_dir(dir) == 0 && made)
			rmdir(dir);
		rc = eht_err_restore(&cause, rc);
	}
	return rc;
}
