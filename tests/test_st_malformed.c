/* SPDX-License-Identifier: Apache-2.0 */
/* test_st_malformed.c: every rule of the safetensors format, each on a file built here; the valid
 * edge cases (all 22 dtypes, sub-byte sizes, scalars, empty tensors, padding, misalignment). */
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static unsigned char img[1 << 16];

/* An image: 8-byte length n (or len_override), the header, then data_len bytes of 0x5a. */
static size_t build(const char *hdr, size_t hdr_len, uint64_t len_override, size_t data_len)
{
	uint64_t n = len_override ? len_override : hdr_len;
	for (int i = 0; i < 8; i++)
		img[i] = (unsigned char)(n >> (8 * i));
	memcpy(img + 8, hdr, hdr_len);
	memset(img + 8 + hdr_len, 0x5a, data_len);
	return 8 + hdr_len + data_len;
}

/* Expects open_memory to fail with rc and a message holding each of the substrings. */
static void expect_fail_(int line, const void *buf, size_t len, int rc, const char *sub1, const char *sub2)
{
	eht_st_file *f = (eht_st_file *)1;
	int r = eht_st_open_memory(buf, len, 0, &f);
	if (r != rc || f != NULL || !strstr(eht_last_error(), sub1) || (sub2 && !strstr(eht_last_error(), sub2))) {
		fprintf(stderr, "line %d: got %d (want %d), message '%s' (want '%s'%s%s)\n", line, r, rc,
			eht_last_error(), sub1, sub2 ? " and " : "", sub2 ? sub2 : "");
		t_failures++;
	}
	if (r == 0)
		eht_st_close(f);
}
#define expect_fail(buf, len, rc, s1, s2) expect_fail_(__LINE__, buf, len, rc, s1, s2)

/* A header (C string) followed by data_len data bytes must fail. */
#define BAD(hdr, data_len, rc, s1, s2) expect_fail(img, build(hdr, strlen(hdr), 0, data_len), rc, s1, s2)

static eht_st_file *open_ok_(int line, const char *hdr, size_t data_len)
{
	eht_st_file *f = NULL;
	int r = eht_st_open_memory(img, build(hdr, strlen(hdr), 0, data_len), 0, &f);
	if (r != 0) {
		fprintf(stderr, "line %d: valid header rejected (%d): %s\n", line, r, eht_last_error());
		t_failures++;
	}
	return f;
}
#define open_ok(hdr, data_len) open_ok_(__LINE__, hdr, data_len)

static void rules(void)
{
	/* file shorter than 8 bytes */
	expect_fail(img, 0, -EINVAL, "shorter than 8 bytes", NULL);
	expect_fail(img, 7, -EINVAL, "shorter than 8 bytes", NULL);
	/* header length over 100,000,000 (checked before the file size) */
	expect_fail(img, build("{}", 2, 100000001ull, 0), -EFBIG, "over the limit", NULL);
	expect_fail(img, build("{}", 2, UINT64_MAX, 0), -EFBIG, "over the limit", NULL);
	/* header running past EOF (the largest allowed length, on a small file) */
	expect_fail(img, build("{}", 2, 100000000ull, 0), -EINVAL, "runs past end of file", NULL);
	expect_fail(img, build("{}  ", 4, 5, 0), -EINVAL, "runs past end of file", NULL);
	/* header not starting with '{' */
	BAD(" {}", 0, -EINVAL, "does not start with '{'", NULL);
	BAD("[]", 0, -EINVAL, "does not start with '{'", NULL);
	expect_fail(img, build("", 0, 0, 0), -EINVAL, "does not start with '{'", NULL);
	/* invalid UTF-8 (in a name, in a metadata value, an overlong form) */
	BAD("{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, -EINVAL, "not valid UTF-8", NULL);
	BAD("{\"__metadata__\":{\"k\":\"\xc0\xaf\"}}", 0, -EINVAL, "not valid UTF-8", NULL);
	/* invalid JSON */
	BAD("{\"a\":}", 0, -EINVAL, "not valid JSON", NULL);
	BAD("{} x", 0, -EINVAL, "not valid JSON", NULL);
	expect_fail(img, build("{}\0\0", 4, 0, 0), -EINVAL, "not valid JSON", NULL);
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}", 1, -EINVAL, "not valid JSON", NULL);
	/* integers jansson cannot hold */
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[99999999999999999999],\"data_offsets\":[0,1]}}", 1, -EOVERFLOW,
	    "integer out of range", NULL);
	/* duplicate keys: a tensor name twice, a metadata key twice */
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
	    "\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2, -EINVAL, "duplicate key", NULL);
	BAD("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, -EINVAL, "duplicate key", NULL);
	/* unknown dtype (names are case-sensitive) */
	BAD("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, -EINVAL, "unknown dtype", "'w'");
	BAD("{\"w\":{\"dtype\":\"F8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, -EINVAL, "unknown dtype", "'w'");
	/* missing fields */
	BAD("{\"w\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1, -EINVAL, "missing field 'dtype'", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, -EINVAL, "missing field 'shape'", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, -EINVAL, "missing field 'data_offsets'", "'w'");
	/* wrongly typed and extra fields */
	BAD("{\"w\":3}", 0, -EINVAL, "wrong field type", "'w'");
	BAD("{\"w\":{\"dtype\":8,\"shape\":[1],\"data_offsets\":[0,1]}}", 1, -EINVAL, "wrong field type", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":1,\"data_offsets\":[0,1]}}", 1, -EINVAL, "wrong field type", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":{}}}", 1, -EINVAL, "wrong field type", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}", 1, -EINVAL, "unknown field 'x'", "'w'");
	/* shapes: non-negative integers only */
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,1]}}", 1, -EINVAL, "invalid shape", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1.0],\"data_offsets\":[0,1]}}", 1, -EINVAL, "invalid shape", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[\"1\"],\"data_offsets\":[0,1]}}", 1, -EINVAL, "invalid shape", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[null],\"data_offsets\":[0,1]}}", 1, -EINVAL, "invalid shape", "'w'");
	/* offsets: two non-negative integers */
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", 1, -EINVAL, "invalid data_offsets", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", 1, -EINVAL, "invalid data_offsets", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1, -EINVAL, "invalid data_offsets", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1e0]}}", 1, -EINVAL, "invalid data_offsets", "'w'");
	/* element-count and byte-count overflow */
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0, -EOVERFLOW,
	    "element count overflow", "'w'");
	BAD("{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,0]}}", 0, -EOVERFLOW,
	    "byte count overflow", "'w'");
	/* a bit count not a multiple of 8 (4- and 6-bit dtypes) */
	BAD("{\"w\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2, -EINVAL, "not a multiple of 8", "'w'");
	BAD("{\"w\":{\"dtype\":\"F6_E2M3\",\"shape\":[3],\"data_offsets\":[0,3]}}", 3, -EINVAL, "not a multiple of 8", "'w'");
	BAD("{\"w\":{\"dtype\":\"F6_E3M2\",\"shape\":[2,1],\"data_offsets\":[0,2]}}", 2, -EINVAL, "not a multiple of 8", "'w'");
	/* byte count not equal to shape x dtype size */
	BAD("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, -EINVAL, "byte count mismatch", "'w'");
	BAD("{\"w\":{\"dtype\":\"F4\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4, -EINVAL, "byte count mismatch", "'w'");
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,0]}}", 0, -EINVAL, "byte count mismatch", "'w'");
	/* reversed ranges */
	BAD("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,4]}}", 8, -EINVAL, "reversed", "'w'");
	/* tiling: gaps (also before the first tensor), overlaps */
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
	    "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,12]}}", 12, -EINVAL, "gap", "'b'");
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}", 8, -EINVAL, "gap", "'a'");
	BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	    "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, -EINVAL, "overlap", "'b'");
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
	    "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4, -EINVAL, "overlap", NULL);
	/* the data area must end exactly at EOF */
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 5, -EINVAL, "trailing bytes", NULL);
	BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 3, -EINVAL, "past end of file", NULL);
	BAD("{}", 1, -EINVAL, "trailing bytes", NULL);
	/* __metadata__: an object of strings */
	BAD("{\"__metadata__\":{\"k\":1}}", 0, -EINVAL, "value of 'k' is not a string", NULL);
	BAD("{\"__metadata__\":{\"k\":null}}", 0, -EINVAL, "is not a string", NULL);
	BAD("{\"__metadata__\":[\"k\"]}", 0, -EINVAL, "__metadata__ is not an object", NULL);
	/* names in messages are escaped: one printable line */
	BAD("{\"a\\nb\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}", 0, -EINVAL, "'a\\x0ab'", NULL);
}

static void valid(void)
{
	eht_st_file *f;
	struct eht_st_tensor_info t = {.size = sizeof(t)};

	/* trailing spaces after the header; no tensors */
	f = open_ok("{}      ", 0);
	CHECK(eht_st_count(f) == 0);
	CHECK(eht_st_data_start(f) == 16);
	eht_st_close(f);
	f = open_ok("{\"__metadata__\":null}", 0);
	CHECK(eht_st_metadata_count(f) == 0);
	eht_st_close(f);

	/* every dtype, with its bit size; sub-byte tensors whose bits are a multiple of 8 */
	static const struct { const char *n; int bits; } dts[] = {
		{"BOOL", 8}, {"F4", 4}, {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8}, {"I8", 8}, {"F8_E5M2", 8},
		{"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16}, {"U16", 16},
		{"F16", 16}, {"BF16", 16}, {"I32", 32}, {"U32", 32}, {"F32", 32}, {"C64", 64}, {"F64", 64},
		{"I64", 64}, {"U64", 64}};
	CHECK(sizeof(dts) / sizeof(dts[0]) == 22 && EHT_DTYPE_COUNT == 23);
	char hdr[8192];
	size_t o = (size_t)snprintf(hdr, sizeof(hdr), "{\"__metadata__\":{\"k\":\"v\",\"e\":\"\"}");
	uint64_t off = 0;
	for (int i = 0; i < 22; i++) {
		CHECK(eht_dtype_from_name(dts[i].n) == i + 1);
		CHECK(eht_dtype_bits(i + 1) == dts[i].bits);
		CHECK(strcmp(eht_dtype_name(i + 1), dts[i].n) == 0);
		uint64_t bytes = (uint64_t)(8 * dts[i].bits) / 8; /* shape [2,4]: 8 elements */
		o += (size_t)snprintf(hdr + o, sizeof(hdr) - o, ",\"t%02d\":{\"dtype\":\"%s\",\"shape\":[2,4],\"data_offsets\":[%llu,%llu]}",
				      i, dts[i].n, (unsigned long long)off, (unsigned long long)(off + bytes));
		off += bytes;
	}
	snprintf(hdr + o, sizeof(hdr) - o, "}");
	CHECK(eht_dtype_from_name("F8_E4M3FN") == -EINVAL && eht_dtype_bits(0) == -EINVAL && !eht_dtype_name(23));
	f = open_ok(hdr, (size_t)off);
	CHECK(eht_st_count(f) == 22);
	for (int i = 0; i < 22 && f; i++) {
		char name[8];
		snprintf(name, sizeof(name), "t%02d", i);
		CHECK_RC(eht_st_find(f, name, &t), 0);
		CHECK(t.dtype == i + 1 && t.ndim == 2 && t.shape[0] == 2 && t.shape[1] == 4 && t.elements == 8);
		CHECK(t.nbytes == (uint64_t)dts[i].bits);
		CHECK(t.file_offset == eht_st_data_start(f) + t.data_begin);
		CHECK((const unsigned char *)t.data == img + t.file_offset);
		CHECK(!strcmp(t.path, "<memory>"));
	}
	CHECK(f && !strcmp(eht_st_metadata_get(f, "k"), "v") && !strcmp(eht_st_metadata_get(f, "e"), ""));
	CHECK(f && eht_st_metadata_get(f, "x") == NULL && eht_st_metadata_count(f) == 2);
	CHECK_RC(eht_st_find(f, "nope", &t), -ENOENT);
	CHECK_RC(eht_st_tensor(f, 22, &t), -EINVAL);
	struct eht_st_tensor_info z = {0};
	CHECK_RC(eht_st_tensor(f, 0, &z), -EINVAL);
	eht_st_close(f);

	/* F4 [2] is one byte, F6 [4] three; a scalar is one element; an empty tensor has no bytes;
	 * data not aligned to the element size is reported */
	char padded[1024];
	snprintf(padded, sizeof(padded), "%s", "{\"a\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]},"
		    "\"b\":{\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[1,4]},"
		    "\"c\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4,8]},"
		    "\"d\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[8,8]},"
		    "\"e\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[8,9]},"
		    "\"f\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[9,13]}}");
	while (strlen(padded) % 8)
		strcat(padded, " ");
	f = open_ok(padded, 13);
	size_t ds = eht_st_data_start(f);
	CHECK(ds % 8 == 0);
	CHECK_RC(eht_st_find(f, "c", &t), 0);
	CHECK(t.ndim == 0 && t.elements == 1 && t.nbytes == 4 && !t.misaligned);
	CHECK_RC(eht_st_find(f, "d", &t), 0);
	CHECK(t.elements == 0 && t.nbytes == 0);
	CHECK_RC(eht_st_find(f, "f", &t), 0);
	CHECK(t.misaligned && t.alignment == 1 && t.file_offset == ds + 9);
	CHECK_RC(eht_st_find(f, "e", &t), 0);
	CHECK(!t.misaligned && t.alignment == 8);
	/* file order follows the offsets */
	const char *order = "abcdef";
	for (size_t i = 0; i < eht_st_count(f); i++) {
		CHECK_RC(eht_st_tensor(f, i, &t), 0);
		CHECK(t.name[0] == order[i]);
	}
	/* a short info size gets only its prefix */
	struct eht_st_tensor_info small = {.size = 8};
	small.name = (const char *)1;
	CHECK_RC(eht_st_tensor(f, 0, &small), 0);
	CHECK(small.ndim == 1 && small.name == (const char *)1);
	eht_st_close(f);

	/* empty tensors may share their offset with a neighbour */
	f = open_ok("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
		    "\"b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
		    "\"c\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2);
	CHECK(eht_st_count(f) == 3);
	eht_st_close(f);
}

static void files(void)
{
	char *dir = t_tmpdir("st-bad");
	char p[512];
	eht_st_file *f = NULL;
	snprintf(p, sizeof(p), "%s/short.safetensors", dir);
	CHECK_RC(t_write_file(p, "\x02\0\0\0", 4), 0);
	CHECK_RC(eht_st_open(p, 0, &f), -EINVAL);
	CHECK(strstr(eht_last_error(), "shorter than 8 bytes") && strstr(eht_last_error(), p));
	CHECK_RC(t_write_file(p, "", 0), 0);
	CHECK_RC(eht_st_open(p, 0, &f), -EINVAL);
	size_t n = build("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 53, 0, 3);
	CHECK_RC(t_write_file(p, img, n), 0);
	CHECK_RC(eht_st_open(p, 0, &f), -EINVAL);
	CHECK(strstr(eht_last_error(), "past end of file") && strstr(eht_last_error(), p));
	n = build("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 53, 0, 4);
	CHECK_RC(t_write_file(p, img, n), 0);
	CHECK_RC(eht_st_open(p, 0, &f), 0);
	CHECK(eht_st_count(f) == 1 && eht_st_file_size(f) == n && !strcmp(eht_st_path(f), p));
	eht_st_close(f);
	CHECK_RC(eht_st_open(p, 1, &f), -EINVAL);
	CHECK_RC(eht_st_open(dir, 0, &f), -EINVAL);
	CHECK(strstr(eht_last_error(), "not a regular file"));
	snprintf(p, sizeof(p), "%s/missing", dir);
	CHECK_RC(eht_st_open(p, 0, &f), -ENOENT);
	t_rmtree(dir);
}

int main(void)
{
	rules();
	valid();
	files();
	return t_done();
}
