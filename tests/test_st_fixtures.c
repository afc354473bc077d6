/* SPDX-License-Identifier: Apache-2.0 */
/* test_st_fixtures.c: files of the official writer (tests/fixtures/safetensors): every tensor's
 * bytes, read through eht, hash to the sha256 of manifest.json; shapes, dtypes, metadata; the same
 * tensors through eht_ckpt over the single file and over the indexed shards. */
#include <jansson.h>
#include <string.h>

#include "testutil.h"

static const char *torch_to_st(const char *torch)
{
	static const char *const map[][2] = {
		{"torch.float32", "F32"}, {"torch.bfloat16", "BF16"}, {"torch.float16", "F16"},
		{"torch.int64", "I64"}, {"torch.uint8", "U8"}, {"torch.bool", "BOOL"},
		{"torch.float8_e4m3fn", "F8_E4M3"}, {"torch.float8_e8m0fnu", "F8_E8M0"},
		{"torch.float8_e5m2", "F8_E5M2"}, {"torch.int32", "I32"}, {"torch.float64", "F64"},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i][0], torch))
			return map[i][1];
	return "?";
}

/* Checks t against its manifest entry m. */
static void check_tensor(const struct eht_st_tensor_info *t, json_t *m)
{
	char hex[65];
	json_t *shape = json_object_get(m, "shape");
	CHECK(!strcmp(eht_dtype_name(t->dtype), torch_to_st(json_string_value(json_object_get(m, "dtype")))));
	CHECK(t->nbytes == (uint64_t)json_integer_value(json_object_get(m, "nbytes")));
	CHECK(t->ndim == json_array_size(shape));
	for (uint32_t d = 0; d < t->ndim && d < json_array_size(shape); d++)
		CHECK(t->shape[d] == (uint64_t)json_integer_value(json_array_get(shape, d)));
	t_sha256_hex(t->data, (size_t)t->nbytes, hex);
	if (strcmp(hex, json_string_value(json_object_get(m, "sha256")))) {
		fprintf(stderr, "%s: tensor %s: sha256 %s, manifest %s\n", t->path, t->name, hex,
			json_string_value(json_object_get(m, "sha256")));
		t_failures++;
	}
}

/* Every tensor of manifest entry `file` through eht_st_open: counted, found, hashed. */
static size_t check_file(const char *path, json_t *entries)
{
	eht_st_file *f = NULL;
	CHECK_RC(eht_st_open(path, 0, &f), 0);
	if (!f)
		return 0;
	CHECK(eht_st_count(f) == json_object_size(entries));
	const char *name;
	json_t *m;
	size_t n = 0;
	json_object_foreach(entries, name, m) {
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		CHECK_RC(eht_st_find(f, name, &t), 0);
		if (strcmp(t.name ? t.name : "", name) == 0) {
			check_tensor(&t, m);
			n++;
		}
	}
	/* iteration in offset order covers the same tensors, tiled */
	uint64_t expect = 0;
	for (size_t i = 0; i < eht_st_count(f); i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		CHECK_RC(eht_st_tensor(f, i, &t), 0);
		CHECK(t.data_begin == expect && json_object_get(entries, t.name) != NULL);
		expect = t.data_end;
	}
	CHECK(eht_st_data_start(f) + expect == eht_st_file_size(f));
	eht_st_close(f);
	return n;
}

/* Every tensor of a checkpoint against the union of the manifest's entries. */
static void check_ckpt(const char *path, json_t *files, int kind, size_t nfiles, size_t ntensors)
{
	eht_ckpt *c = NULL;
	CHECK_RC(eht_ckpt_open(path, 0, &c), 0);
	if (!c)
		return;
	CHECK(eht_ckpt_kind(c) == kind);
	CHECK(eht_ckpt_file_count(c) == nfiles);
	CHECK(eht_ckpt_count(c) == ntensors);
	for (size_t i = 0; i < eht_ckpt_count(c); i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)}, u = {.size = sizeof(u)};
		CHECK_RC(eht_ckpt_tensor(c, i, &t), 0);
		const char *base = strrchr(t.path, '/') ? strrchr(t.path, '/') + 1 : t.path;
		json_t *m = json_object_get(json_object_get(files, base), t.name);
		CHECK(m != NULL);
		if (m)
			check_tensor(&t, m);
		CHECK_RC(eht_ckpt_find(c, t.name, &u), 0);
		CHECK(u.data == t.data && u.file_index == t.file_index);
		CHECK(!strcmp(eht_st_path(eht_ckpt_file(c, t.file_index)), t.path));
	}
	struct eht_st_tensor_info t = {.size = sizeof(t)};
	CHECK_RC(eht_ckpt_find(c, "model.layers.2.engram.embedding.weight", &t), -ENOENT);
	CHECK_RC(eht_ckpt_tensor(c, ntensors, &t), -EINVAL);
	eht_ckpt_close(c);
}

int main(void)
{
	const char *fx = t_fixtures();
	char p[1024];
	json_error_t je;
	snprintf(p, sizeof(p), "%s/safetensors/manifest.json", fx);
	json_t *man = json_load_file(p, 0, &je);
	if (!man)
		return fprintf(stderr, "FAIL: %s/safetensors/manifest.json not readable (fixtures are in the repository)\n", fx), 1;
	json_t *files = json_object_get(man, "files");
	CHECK(json_object_size(files) == 5);

	size_t hashed = 0;
	const char *fname;
	json_t *entries;
	json_object_foreach(files, fname, entries) {
		if (!strncmp(fname, "model-", 6))
			snprintf(p, sizeof(p), "%s/safetensors/engram_sharded/%s", fx, fname);
		else
			snprintf(p, sizeof(p), "%s/safetensors/%s", fx, fname);
		hashed += check_file(p, entries);
	}
	CHECK(hashed == 5 + 8 + 1 + 1 + 3);

	/* misc: metadata, the scalar, the empty tensor */
	eht_st_file *f = NULL;
	struct eht_st_tensor_info t = {.size = sizeof(t)};
	snprintf(p, sizeof(p), "%s/safetensors/misc.safetensors", fx);
	CHECK_RC(eht_st_open(p, 0, &f), 0);
	CHECK(eht_st_metadata_count(f) == 2);
	CHECK(!strcmp(eht_st_metadata_get(f, "format"), "pt") && !strcmp(eht_st_metadata_get(f, "note"), "fixture"));
	const char *k, *v;
	CHECK_RC(eht_st_metadata_at(f, 0, &k, &v), 0);
	CHECK(!strcmp(k, "format") && !strcmp(v, "pt"));
	CHECK_RC(eht_st_metadata_at(f, 2, &k, &v), -EINVAL);
	CHECK_RC(eht_st_find(f, "e.f16.scalar", &t), 0);
	CHECK(t.ndim == 0 && t.elements == 1 && t.nbytes == 2);
	CHECK_RC(eht_st_find(f, "f.empty", &t), 0);
	CHECK(t.ndim == 2 && t.elements == 0 && t.nbytes == 0 && t.data_begin == t.data_end);
	CHECK_RC(eht_st_find(f, "h.bool", &t), 0);
	CHECK(t.dtype == EHT_DTYPE_BOOL && t.file_offset + 3 == eht_st_file_size(f));
	CHECK_RC(eht_st_find(f, "a.f32", &t), 0);
	CHECK(!t.misaligned && t.file_offset % 4 == 0);
	eht_st_close(f);

	/* checkpoints: a lone file, the indexed shards, and a lone file opened as a checkpoint */
	json_t *single = json_object_get(files, "engram_single.safetensors");
	json_t *as_files = json_object();
	json_object_set(as_files, "engram_single.safetensors", single);
	snprintf(p, sizeof(p), "%s/safetensors/engram_single.safetensors", fx);
	check_ckpt(p, as_files, EHT_CKPT_FILE, 1, 5);
	snprintf(p, sizeof(p), "%s/safetensors/engram_sharded", fx);
	check_ckpt(p, files, EHT_CKPT_INDEX, 3, 5);
	json_decref(as_files);
	json_decref(man);
	return t_done();
}
