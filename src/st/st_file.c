/* SPDX-License-Identifier: Apache-2.0 */
/* st_file.c: open, validate and query one safetensors file (mapped read-only, or an image in memory). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "st/st_impl.h"
#include "util/err.h"
#include "util/file.h"
#include "util/opts.h"

#define MEMORY_PATH "<memory>"

const char *st_quote(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	if (cap < 8) {
		if (cap)
			out[0] = '\0';
		return out;
	}
	for (size_t i = 0; s && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		if (o + 8 >= cap) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}

int st_utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		size_t n;
		uint32_t cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (len - i <= n)
			return 0;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		/* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return 0;
		i += n + 1;
	}
	return 1;
}

static void st_free(struct eht_st_file *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nt; i++) {
		free(f->t[i].name);
		free(f->t[i].shape);
	}
	free(f->t);
	free(f->by_name);
	for (size_t i = 0; i < 2 * f->nmeta; i++)
		free(f->meta[i]);
	free(f->meta);
	free(f->path);
	free(f);
}

/* Reads a JSON integer as a non-negative 64-bit value; 0 when it is not one. */
static int nonneg_int(json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return 0;
	*out = (uint64_t)json_integer_value(v);
	return 1;
}

/* Validates one tensor entry on its own (fields, dtype, shape, sizes); tiling is checked later. */
static int parse_tensor(const char *path, const char *key, json_t *v, struct st_tensor *t)
{
	char q[160];
	const char *qn = st_quote(key, q, sizeof(q));
	const char *k;
	json_t *fv;

	if (!json_is_object(v))
		return eht_err(EINVAL, "%s: tensor '%s': wrong field type: the entry is not an object", path, qn);
	json_object_foreach(v, k, fv) {
		if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets")) {
			char qk[80];
			return eht_err(EINVAL, "%s: tensor '%s': unknown field '%s' (allowed: dtype, shape, data_offsets)",
				       path, qn, st_quote(k, qk, sizeof(qk)));
		}
	}
	json_t *dt = json_object_get(v, "dtype");
	json_t *sh = json_object_get(v, "shape");
	json_t *off = json_object_get(v, "data_offsets");
	if (!dt || !sh || !off)
		return eht_err(EINVAL, "%s: tensor '%s': missing field '%s'", path, qn,
			       !dt ? "dtype" : !sh ? "shape" : "data_offsets");
	if (!json_is_string(dt))
		return eht_err(EINVAL, "%s: tensor '%s': wrong field type: dtype is not a string", path, qn);
	t->dtype = eht_dtype_from_name(json_string_value(dt));
	if (t->dtype < 0) {
		char qd[64];
		return eht_err(EINVAL, "%s: tensor '%s': unknown dtype '%s'", path, qn,
			       st_quote(json_string_value(dt), qd, sizeof(qd)));
	}
	if (!json_is_array(sh))
		return eht_err(EINVAL, "%s: tensor '%s': wrong field type: shape is not an array", path, qn);
	if (json_array_size(sh) > UINT32_MAX)
		return eht_err(EINVAL, "%s: tensor '%s': invalid shape: too many dimensions", path, qn);
	t->ndim = (uint32_t)json_array_size(sh);
	if (t->ndim) {
		t->shape = calloc(t->ndim, sizeof(uint64_t));
		if (!t->shape)
			return eht_err(ENOMEM, "%s: tensor '%s': out of memory for the shape", path, qn);
	}
	for (uint32_t d = 0; d < t->ndim; d++)
		if (!nonneg_int(json_array_get(sh, d), &t->shape[d]))
			return eht_err(EINVAL, "%s: tensor '%s': invalid shape: dimension %u is not a non-negative integer",
				       path, qn, d);
	if (!json_is_array(off))
		return eht_err(EINVAL, "%s: tensor '%s': wrong field type: data_offsets is not an array", path, qn);
	if (json_array_size(off) != 2 || !nonneg_int(json_array_get(off, 0), &t->begin) ||
	    !nonneg_int(json_array_get(off, 1), &t->end))
		return eht_err(EINVAL, "%s: tensor '%s': invalid data_offsets: not two non-negative integers", path, qn);

	/* Checked arithmetic, in the reference reader's order: elements, then bits. */
	uint64_t n = 1;
	for (uint32_t d = 0; d < t->ndim; d++)
		if (__builtin_mul_overflow(n, t->shape[d], &n))
			return eht_err(EOVERFLOW, "%s: tensor '%s': element count overflow: shape product exceeds 2^64",
				       path, qn);
	t->elements = n;
	uint64_t bits;
	if (__builtin_mul_overflow(n, (uint64_t)eht_dtype_bits(t->dtype), &bits))
		return eht_err(EOVERFLOW, "%s: tensor '%s': byte count overflow: %llu elements of %s", path, qn,
			       (unsigned long long)n, eht_dtype_name(t->dtype));
	if (bits % 8)
		return eht_err(EINVAL, "%s: tensor '%s': bit count not a multiple of 8: %llu elements of %s are %llu bits",
			       path, qn, (unsigned long long)n, eht_dtype_name(t->dtype), (unsigned long long)bits);
	t->nbytes = bits / 8;
	if (t->end < t->begin)
		return eht_err(EINVAL, "%s: tensor '%s': reversed data_offsets [%llu, %llu]", path, qn,
			       (unsigned long long)t->begin, (unsigned long long)t->end);
	if (t->end - t->begin != t->nbytes)
		return eht_err(EINVAL, "%s: tensor '%s': byte count mismatch: data_offsets [%llu, %llu] hold %llu bytes, shape x %s needs %llu",
			       path, qn, (unsigned long long)t->begin, (unsigned long long)t->end,
			       (unsigned long long)(t->end - t->begin), eht_dtype_name(t->dtype),
			       (unsigned long long)t->nbytes);
	t->name = strdup(key);
	if (!t->name)
		return eht_err(ENOMEM, "%s: out of memory", path);
	return 0;
}

static int parse_metadata(struct eht_st_file *f, json_t *m)
{
	const char *k;
	json_t *v;
	char qk[80];
	if (json_is_null(m))
		return 0;
	if (!json_is_object(m))
		return eht_err(EINVAL, "%s: __metadata__ is not an object", f->path);
	f->meta = calloc(2 * json_object_size(m) + 1, sizeof(char *));
	if (!f->meta)
		return eht_err(ENOMEM, "%s: out of memory", f->path);
	json_object_foreach(m, k, v) {
		if (!json_is_string(v))
			return eht_err(EINVAL, "%s: __metadata__ value of '%s' is not a string", f->path,
				       st_quote(k, qk, sizeof(qk)));
		f->meta[2 * f->nmeta] = strdup(k);
		f->meta[2 * f->nmeta + 1] = strdup(json_string_value(v));
		f->nmeta++;
		if (!f->meta[2 * f->nmeta - 2] || !f->meta[2 * f->nmeta - 1])
			return eht_err(ENOMEM, "%s: out of memory", f->path);
	}
	return 0;
}

static int cmp_offset(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* qsort has no context argument in C11: the comparator reads a per-thread base. */
static _Thread_local const struct st_tensor *sort_base;
static int cmp_name(const void *a, const void *b)
{
	return strcmp(sort_base[*(const size_t *)a].name, sort_base[*(const size_t *)b].name);
}

static int json_fail(const char *path, const json_error_t *je)
{
	switch (json_error_code(je)) {
	case json_error_duplicate_key:
		return eht_err(EINVAL, "%s: duplicate key in header (tensor names must be unique): %s at byte %d",
			       path, je->text, je->position);
	case json_error_invalid_utf8:
		return eht_err(EINVAL, "%s: header is not valid UTF-8 (at byte %d)", path, je->position);
	case json_error_numeric_overflow:
		return eht_err(EOVERFLOW, "%s: header is not valid JSON: integer out of range at byte %d", path,
			       je->position);
	case json_error_out_of_memory:
		return eht_err(ENOMEM, "%s: out of memory parsing the header", path);
	default:
		return eht_err(EINVAL, "%s: header is not valid JSON: %s at byte %d", path, je->text, je->position);
	}
}

/* Validates the image [base, base + len) into f. */
static int st_parse(struct eht_st_file *f)
{
	const uint8_t *b = f->base;
	uint64_t len = f->len, n = 0, hend;
	json_error_t je;
	json_t *root = NULL;
	int rc = 0;

	if (len < 8)
		return eht_err(EINVAL, "%s: file shorter than 8 bytes (%llu bytes): no header length", f->path,
			       (unsigned long long)len);
	for (int i = 7; i >= 0; i--)
		n = (n << 8) | b[i];
	if (n > EHT_ST_MAX_HEADER)
		return eht_err(EFBIG, "%s: header length %llu over the limit of %llu bytes", f->path,
			       (unsigned long long)n, (unsigned long long)EHT_ST_MAX_HEADER);
	if (__builtin_add_overflow(n, 8, &hend))
		return eht_err(EOVERFLOW, "%s: header length %llu overflows", f->path, (unsigned long long)n);
	if (hend > len)
		return eht_err(EINVAL, "%s: header runs past end of file: %llu header bytes, file has %llu", f->path,
			       (unsigned long long)n, (unsigned long long)len);
	f->header_len = n;
	if (n == 0 || b[8] != '{')
		return eht_err(EINVAL, "%s: header does not start with '{'", f->path);
	root = json_loadb((const char *)b + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return json_fail(f->path, &je);
	if (!json_is_object(root)) {
		rc = eht_err(EINVAL, "%s: header is not a JSON object", f->path);
		goto out;
	}

	size_t cap = json_object_size(root);
	f->t = calloc(cap ? cap : 1, sizeof(*f->t));
	if (!f->t) {
		rc = eht_err(ENOMEM, "%s: out of memory", f->path);
		goto out;
	}
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v) {
		if (strcmp(key, "__metadata__") == 0) {
			rc = parse_metadata(f, v);
		} else {
			/* counted before parsing so that st_free releases a half-filled entry */
			rc = parse_tensor(f->path, key, v, &f->t[f->nt++]);
		}
		if (rc)
			goto out;
	}

	qsort(f->t, f->nt, sizeof(*f->t), cmp_offset);
	uint64_t expect = 0;
	const char *prev = NULL;
	for (size_t i = 0; i < f->nt; i++) {
		struct st_tensor *t = &f->t[i];
		char q[160], qp[160];
		if (t->begin > expect) {
			rc = prev ? eht_err(EINVAL, "%s: tensor '%s': data_offsets gap: starts at %llu, previous tensor '%s' ends at %llu",
					    f->path, st_quote(t->name, q, sizeof(q)), (unsigned long long)t->begin,
					    st_quote(prev, qp, sizeof(qp)), (unsigned long long)expect)
				  : eht_err(EINVAL, "%s: tensor '%s': data_offsets gap: the first tensor starts at %llu, not 0",
					    f->path, st_quote(t->name, q, sizeof(q)), (unsigned long long)t->begin);
			goto out;
		}
		if (t->begin < expect) {
			rc = eht_err(EINVAL, "%s: tensor '%s': data_offsets overlap: starts at %llu, inside tensor '%s' ending at %llu",
				     f->path, st_quote(t->name, q, sizeof(q)), (unsigned long long)t->begin,
				     st_quote(prev, qp, sizeof(qp)), (unsigned long long)expect);
			goto out;
		}
		expect = t->end;
		prev = t->name;
	}
	uint64_t data_len = len - hend;
	if (expect > data_len) {
		rc = eht_err(EINVAL, "%s: data area past end of file: tensors need %llu data bytes, the file holds %llu",
			     f->path, (unsigned long long)expect, (unsigned long long)data_len);
		goto out;
	}
	if (expect < data_len) {
		rc = eht_err(EINVAL, "%s: trailing bytes after data area: %llu bytes past the last tensor (data must end at EOF)",
			     f->path, (unsigned long long)(data_len - expect));
		goto out;
	}

	f->by_name = malloc((f->nt ? f->nt : 1) * sizeof(size_t));
	if (!f->by_name) {
		rc = eht_err(ENOMEM, "%s: out of memory", f->path);
		goto out;
	}
	for (size_t i = 0; i < f->nt; i++)
		f->by_name[i] = i;
	sort_base = f->t;
	qsort(f->by_name, f->nt, sizeof(size_t), cmp_name);
out:
	json_decref(root);
	return rc;
}

static int st_new(const char *path, struct eht_st_file **out)
{
	struct eht_st_file *f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(path))) {
		free(f);
		return eht_err(ENOMEM, "%s: out of memory", path);
	}
	*out = f;
	return 0;
}

int eht_st_open_memory(const void *buf, size_t len, uint32_t flags, eht_st_file **out)
{
	struct eht_st_file *f = NULL;
	int rc;
	if (!out || (!buf && len))
		return eht_err(EINVAL, "eht_st_open_memory: NULL argument");
	*out = NULL;
	if (flags)
		return eht_err(EINVAL, "eht_st_open_memory: unknown flags 0x%x", flags);
	if ((rc = st_new(MEMORY_PATH, &f)))
		return rc;
	f->base = buf;
	f->len = len;
	if ((rc = st_parse(f))) {
		st_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

int eht_st_open(const char *path, uint32_t flags, eht_st_file **out)
{
	struct eht_st_file *f = NULL;
	struct stat st;
	int rc, fd = -1;
	if (!path || !out)
		return eht_err(EINVAL, "eht_st_open: NULL argument");
	*out = NULL;
	if (flags)
		return eht_err(EINVAL, "eht_st_open %s: unknown flags 0x%x", path, flags);
	if ((rc = st_new(path, &f)))
		return rc;
	/* The file rule (util/file.h): a FIFO (or device) named as a checkpoint fails, never blocks. */
	fd = eht_file_open_read(path, "checkpoint", &st);
	if (fd < 0) {
		rc = fd;
		goto fail;
	}
	f->len = (uint64_t)st.st_size;
	if (f->len >= 8) {
		f->map = mmap(NULL, (size_t)f->len, PROT_READ, MAP_SHARED, fd, 0);
		if (f->map == MAP_FAILED) {
			f->map = NULL;
			rc = eht_err_sys(errno, "%s: mmap of %llu bytes", path, (unsigned long long)f->len);
			goto fail;
		}
		f->base = f->map;
	}
	close(fd);
	fd = -1;
	if ((rc = st_parse(f)))
		goto fail;
	*out = f;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (f->map)
		munmap(f->map, (size_t)f->len);
	st_free(f);
	return rc;
}

int eht_st_close(eht_st_file *f)
{
	int rc = 0;
	if (!f)
		return 0;
	if (f->map && munmap(f->map, (size_t)f->len) != 0)
		rc = eht_err_sys(errno, "%s: munmap", f->path);
	st_free(f);
	return rc;
}

size_t eht_st_count(const eht_st_file *f) { return f ? f->nt : 0; }

int st_fill_info(const struct eht_st_file *f, size_t i, struct eht_st_tensor_info *info)
{
	if (!info || info->size == 0)
		return eht_err(EINVAL, "tensor info: NULL or size 0 (set info.size = sizeof(info))");
	const struct st_tensor *t = &f->t[i];
	struct eht_st_tensor_info x = {0};
	x.size = info->size;
	x.ndim = t->ndim;
	x.name = t->name;
	x.dtype = t->dtype;
	x.shape = t->shape;
	x.elements = t->elements;
	x.nbytes = t->nbytes;
	x.data_begin = t->begin;
	x.data_end = t->end;
	x.file_offset = 8 + f->header_len + t->begin;
	x.alignment = EHT_ST_MAX_ALIGN;
	while (x.alignment > 1 && x.file_offset % x.alignment)
		x.alignment >>= 1;
	int bits = eht_dtype_bits(t->dtype);
	x.misaligned = bits >= 8 && x.file_offset % (uint64_t)(bits / 8) != 0;
	x.data = f->base + x.file_offset;
	x.path = f->path;
	x.file_index = f->file_index;
	x.size = sizeof(x);
	return eht_opts_out(info, &x, sizeof(x), "tensor info");
}

int eht_st_tensor(const eht_st_file *f, size_t index, struct eht_st_tensor_info *info)
{
	if (!f || index >= f->nt)
		return eht_err(EINVAL, "eht_st_tensor: index %zu out of range (%zu tensors)", index, f ? f->nt : 0);
	return st_fill_info(f, index, info);
}

long st_lookup(const struct eht_st_file *f, const char *name)
{
	size_t lo = 0, hi = f->nt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(f->t[f->by_name[mid]].name, name);
		if (c == 0)
			return (long)f->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int eht_st_find(const eht_st_file *f, const char *name, struct eht_st_tensor_info *info)
{
	char q[160];
	if (!f || !name)
		return eht_err(EINVAL, "eht_st_find: NULL argument");
	long i = st_lookup(f, name);
	if (i < 0)
		return eht_err(ENOENT, "%s: no tensor '%s'", f->path, st_quote(name, q, sizeof(q)));
	return st_fill_info(f, (size_t)i, info);
}

size_t eht_st_metadata_count(const eht_st_file *f) { return f ? f->nmeta : 0; }

int eht_st_metadata_at(const eht_st_file *f, size_t index, const char **key, const char **value)
{
	if (!f || index >= f->nmeta)
		return eht_err(EINVAL, "eht_st_metadata_at: index %zu out of range", index);
	if (key)
		*key = f->meta[2 * index];
	if (value)
		*value = f->meta[2 * index + 1];
	return 0;
}

const char *eht_st_metadata_get(const eht_st_file *f, const char *key)
{
	if (!f || !key)
		return NULL;
	for (size_t i = 0; i < f->nmeta; i++)
		if (strcmp(f->meta[2 * i], key) == 0)
			return f->meta[2 * i + 1];
	return NULL;
}

const char *eht_st_path(const eht_st_file *f) { return f ? f->path : NULL; }
uint64_t eht_st_file_size(const eht_st_file *f) { return f ? f->len : 0; }
uint64_t eht_st_data_start(const eht_st_file *f) { return f ? 8 + f->header_len : 0; }
