/* SPDX-License-Identifier: Apache-2.0 */
/* test_st_ckpt.c: checkpoints over directories: the index rules (weight_map required, shard names,
 * listed tensors present), directories of files, duplicate names, one object over every file. */
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

static char base[256];

static void mkfile(const char *dir, const char *file, const char *const *names, size_t n)
{
	char p[512];
	static const uint64_t shape[1] = {4};
	static const unsigned char data[4] = {1, 2, 3, 4};
	struct eht_st_write_tensor w[8];
	for (size_t i = 0; i < n; i++)
		w[i] = (struct eht_st_write_tensor){.name = names[i], .dtype = EHT_DTYPE_U8, .ndim = 1,
						    .shape = shape, .data = data};
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	CHECK_RC(eht_st_write(p, w, n, NULL, 0), 0);
}

static char *mkdir_case(const char *name)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s", base, name);
	mkdir(p, 0755);
	return p;
}

static void index_file(const char *dir, const char *json)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/model.safetensors.index.json", dir);
	CHECK_RC(t_write_file(p, json, strlen(json)), 0);
}

static void expect_open_(int line, const char *path, int rc, const char *sub)
{
	eht_ckpt *c = (eht_ckpt *)1;
	int r = eht_ckpt_open(path, 0, &c);
	if (r != rc || c != NULL || (sub && !strstr(eht_last_error(), sub))) {
		fprintf(stderr, "line %d: %s: got %d (want %d), message '%s' (want '%s')\n", line, path, r, rc,
			eht_last_error(), sub ? sub : "");
		t_failures++;
	}
	if (r == 0)
		eht_ckpt_close(c);
}
#define expect_open(p, rc, sub) expect_open_(__LINE__, p, rc, sub)

int main(void)
{
	snprintf(base, sizeof(base), "%s", t_tmpdir("st-ckpt"));
	static const char *const ab[] = {"a", "b"}, *const cd[] = {"c", "d"}, *const bx[] = {"b", "x"};
	char *d;
	eht_ckpt *c = NULL;
	struct eht_st_tensor_info t = {.size = sizeof(t)};

	/* a directory of files: every tensor of every file, files in name order */
	d = mkdir_case("dir");
	mkfile(d, "z.safetensors", cd, 2);
	mkfile(d, "y.safetensors", ab, 2);
	CHECK_RC(t_write_file(strcat(strcpy((char[600]){0}, d), "/notes.txt"), "x", 1), 0);
	CHECK_RC(eht_ckpt_open(d, 0, &c), 0);
	CHECK(eht_ckpt_kind(c) == EHT_CKPT_DIR && eht_ckpt_file_count(c) == 2 && eht_ckpt_count(c) == 4);
	for (size_t i = 0; i < 4; i++) {
		CHECK_RC(eht_ckpt_tensor(c, i, &t), 0);
		CHECK(t.name[0] == "abcd"[i] && t.file_index == (i >= 2));
	}
	CHECK_RC(eht_ckpt_find(c, "d", &t), 0);
	CHECK(strstr(t.path, "z.safetensors") && ((const unsigned char *)t.data)[3] == 4);
	CHECK(eht_ckpt_file(c, 2) == NULL && !strcmp(eht_ckpt_path(c), d));
	eht_ckpt_close(c);
	/* the same name in two files */
	mkfile(d, "x.safetensors", bx, 2);
	expect_open(d, -EINVAL, "duplicate tensor name 'b'");
	/* no safetensors files at all; no such path */
	d = mkdir_case("empty");
	expect_open(d, -ENOENT, "no model.safetensors.index.json and no *.safetensors");
	expect_open("/nonexistent/eht/ckpt", -ENOENT, "/nonexistent/eht/ckpt");
	/* a broken shard fails the checkpoint, naming the file */
	d = mkdir_case("broken");
	CHECK_RC(t_write_file(strcat(strcpy((char[600]){0}, d), "/bad.safetensors"), "1234", 4), 0);
	expect_open(d, -EINVAL, "bad.safetensors: file shorter than 8 bytes");

	/* an index: weight_map is the checkpoint; tensors it leaves out are left out */
	d = mkdir_case("index");
	mkfile(d, "s1.safetensors", ab, 2);
	mkfile(d, "s2.safetensors", cd, 2);
	mkfile(d, "unused.safetensors", bx, 2); /* not referenced: never opened */
	index_file(d, "{\"metadata\":{\"total_size\":12,\"anything\":[1]},"
		      "\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s1.safetensors\",\"c\":\"s2.safetensors\"}}");
	CHECK_RC(eht_ckpt_open(d, 0, &c), 0);
	CHECK(eht_ckpt_kind(c) == EHT_CKPT_INDEX && eht_ckpt_file_count(c) == 2 && eht_ckpt_count(c) == 3);
	CHECK_RC(eht_ckpt_find(c, "c", &t), 0);
	CHECK(t.file_index == 1 && strstr(t.path, "s2.safetensors"));
	CHECK_RC(eht_ckpt_find(c, "d", &t), -ENOENT);
	CHECK_RC(eht_ckpt_find(c, "x", &t), -ENOENT);
	eht_ckpt_close(c);
	/* weight_map required */
	index_file(d, "{\"metadata\":{}}");
	expect_open(d, -EINVAL, "no \"weight_map\"");
	index_file(d, "{\"weight_map\":[]}");
	expect_open(d, -EINVAL, "no \"weight_map\"");
	index_file(d, "{\"weight_map\":{\"a\":1}}");
	expect_open(d, -EINVAL, "not a file name");
	index_file(d, "{\"weight_map\":{\"a\":\"s1.safetensors\"");
	expect_open(d, -EINVAL, "index is not valid JSON");
	index_file(d, "{\"weight_map\":{\"a\":\"s1.safetensors\",\"a\":\"s2.safetensors\"}}");
	expect_open(d, -EINVAL, "index is not valid JSON");
	/* shard names with '/' or '..' */
	index_file(d, "{\"weight_map\":{\"a\":\"../index/s1.safetensors\"}}");
	expect_open(d, -EINVAL, "contains '/' or '..'");
	index_file(d, "{\"weight_map\":{\"a\":\"sub/s1.safetensors\"}}");
	expect_open(d, -EINVAL, "contains '/' or '..'");
	index_file(d, "{\"weight_map\":{\"a\":\"..\"}}");
	expect_open(d, -EINVAL, "contains '/' or '..'");
	/* a listed shard that is not there; a listed tensor missing from its shard */
	index_file(d, "{\"weight_map\":{\"a\":\"s9.safetensors\"}}");
	expect_open(d, -ENOENT, "s9.safetensors");
	index_file(d, "{\"weight_map\":{\"a\":\"s1.safetensors\",\"c\":\"s1.safetensors\"}}");
	expect_open(d, -ENOENT, "tensor 'c' listed in the index is missing from shard 's1.safetensors'");
	/* a lone file, and flags */
	CHECK_RC(eht_ckpt_open(strcat(strcpy((char[600]){0}, d), "/s1.safetensors"), 0, &c), 0);
	CHECK(eht_ckpt_kind(c) == EHT_CKPT_FILE && eht_ckpt_count(c) == 2);
	eht_ckpt_close(c);
	CHECK_RC(eht_ckpt_open(d, 1, &c), -EINVAL);
	t_rmtree(base);
	return t_done();
}
