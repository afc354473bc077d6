/* SPDX-License-Identifier: Apache-2.0 */
/* st_write.c: the safetensors writer, laid out as the reference writer lays files out. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "st/st_impl.h"
#include "util/err.h"

#define CHUNK (1u << 20)

struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_printf(struct sbuf *b, const char *fmt, ...) EHT_PRINTF(2, 3);
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		sb_put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A JSON string as serde_json writes it: UTF-8 kept, quotes, backslashes and controls escaped. */
static void sb_json_str(struct sbuf *b, const char *s)
{
	sb_put(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char e[8];
		switch (c) {
		case '"': sb_put(b, "\\\"", 2); break;
		case '\\': sb_put(b, "\\\\", 2); break;
		case '\b': sb_put(b, "\\b", 2); break;
		case '\f': sb_put(b, "\\f", 2); break;
		case '\n': sb_put(b, "\\n", 2); break;
		case '\r': sb_put(b, "\\r", 2); break;
		case '\t': sb_put(b, "\\t", 2); break;
		default:
			if (c < 0x20) {
				snprintf(e, sizeof(e), "\\u%04x", c);
				sb_put(b, e, 6);
			} else {
				sb_put(b, (const char *)&c, 1);
			}
		}
	}
	sb_put(b, "\"", 1);
}

struct wt {
	const struct eht_st_write_tensor *t;
	uint64_t nbytes;
};

static int cmp_wt(const void *a, const void *b)
{
	const struct wt *x = a, *y = b;
	if (x->t->dtype != y->t->dtype)
		return x->t->dtype > y->t->dtype ? -1 : 1; /* larger dtypes first */
	return strcmp(x->t->name, y->t->name);
}

static int cmp_pair(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int write_all(int fd, const void *p, size_t len, const char *path)
{
	const char *c = p;
	while (len) {
		ssize_t n = write(fd, c, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return eht_err_sys(errno, "%s: write", path);
		}
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

static int check_tensor(const struct eht_st_write_tensor *t, size_t i, uint64_t *nbytes)
{
	char q[160];
	if (!t->name || !st_utf8_valid(t->name, strlen(t->name)) || !strcmp(t->name, "__metadata__"))
		return eht_err(EINVAL, "eht_st_write: tensor %zu: name missing, not UTF-8, or \"__metadata__\"", i);
	const char *qn = st_quote(t->name, q, sizeof(q));
	int bits = eht_dtype_bits(t->dtype);
	if (bits < 0)
		return eht_err(EINVAL, "eht_st_write: tensor '%s': unknown dtype %d", qn, t->dtype);
	if (t->ndim && !t->shape)
		return eht_err(EINVAL, "eht_st_write: tensor '%s': shape NULL with %u dimensions", qn, t->ndim);
	if (!t->data && !t->fill)
		return eht_err(EINVAL, "eht_st_write: tensor '%s': neither data nor fill given", qn);
	uint64_t n = 1;
	for (uint32_t d = 0; d < t->ndim; d++)
		if (__builtin_mul_overflow(n, t->shape[d], &n) || n > INT64_MAX)
			return eht_err(EOVERFLOW, "eht_st_write: tensor '%s': element count overflow", qn);
	if (__builtin_mul_overflow(n, (uint64_t)bits, &n))
		return eht_err(EOVERFLOW, "eht_st_write: tensor '%s': byte count overflow", qn);
	if (n % 8)
		return eht_err(EINVAL, "eht_st_write: tensor '%s': bit count not a multiple of 8 (%" PRIu64 " bits)", qn, n);
	*nbytes = n / 8;
	return 0;
}

/* Checks every tensor (sizes into w[i].nbytes), sorts w into file order, refuses duplicate names. */
static int check_tensors(const char *path, const struct eht_st_write_tensor *tensors, size_t n, struct wt *w)
{
	int rc;
	for (size_t i = 0; i < n; i++) {
		w[i].t = &tensors[i];
		if ((rc = check_tensor(&tensors[i], i, &w[i].nbytes)))
			return rc;
	}
	qsort(w, n, sizeof(*w), cmp_wt);
	/* names are checked in their own order: equal names with different dtypes sort apart */
	const char **names = malloc((n ? n : 1) * sizeof(char *));
	if (!names)
		return eht_err(ENOMEM, "eht_st_write %s: out of memory", path);
	for (size_t i = 0; i < n; i++)
		names[i] = w[i].t->name;
	qsort(names, n, sizeof(char *), cmp_pair);
	rc = 0;
	for (size_t i = 1; i < n && !rc; i++)
		if (!strcmp(names[i - 1], names[i]))
			rc = eht_err(EINVAL, "eht_st_write %s: duplicate tensor name '%s'", path, names[i]);
	free(names);
	return rc;
}

/* The metadata pairs (NULL-key terminated), checked and sorted by key into *meta (malloc'ed). */
static int check_metadata(const char *path, const char *const *metadata, const char ***meta, size_t *nmeta)
{
	*nmeta = 0;
	while (metadata[2 * *nmeta])
		(*nmeta)++;
	size_t nm = *nmeta;
	const char **m = *meta = malloc((nm ? nm : 1) * 2 * sizeof(char *));
	if (!m)
		return eht_err(ENOMEM, "eht_st_write %s: out of memory", path);
	for (size_t i = 0; i < nm; i++) {
		m[2 * i] = metadata[2 * i];
		m[2 * i + 1] = metadata[2 * i + 1];
		if (!m[2 * i + 1] || !st_utf8_valid(m[2 * i], strlen(m[2 * i])) ||
		    !st_utf8_valid(m[2 * i + 1], strlen(m[2 * i + 1])))
			return eht_err(EINVAL, "eht_st_write %s: metadata entry %zu: value missing or not UTF-8", path, i);
	}
	/* sort key/value pairs by key (pairs are adjacent, so sort 2-pointer records) */
	qsort(m, nm, 2 * sizeof(char *), cmp_pair);
	for (size_t i = 1; i < nm; i++)
		if (!strcmp(m[2 * i - 2], m[2 * i]))
			return eht_err(EINVAL, "eht_st_write %s: duplicate metadata key '%s'", path, m[2 * i]);
	return 0;
}

/* The JSON header into h, padded to 8 bytes (meta NULL: no __metadata__). */
static int build_header(const char *path, const struct wt *w, size_t n, const char **meta, size_t nmeta,
			struct sbuf *h)
{
	sb_puts(h, "{");
	if (meta) {
		sb_puts(h, "\"__metadata__\":{");
		for (size_t i = 0; i < nmeta; i++) {
			if (i)
				sb_puts(h, ",");
			sb_json_str(h, meta[2 * i]);
			sb_puts(h, ":");
			sb_json_str(h, meta[2 * i + 1]);
		}
		sb_puts(h, "}");
	}
	uint64_t off = 0;
	for (size_t i = 0; i < n; i++) {
		const struct eht_st_write_tensor *t = w[i].t;
		if (i || meta)
			sb_puts(h, ",");
		sb_json_str(h, t->name);
		sb_printf(h, ":{\"dtype\":\"%s\",\"shape\":[", eht_dtype_name(t->dtype));
		for (uint32_t d = 0; d < t->ndim; d++)
			sb_printf(h, d ? ",%" PRIu64 : "%" PRIu64, t->shape[d]);
		if (__builtin_add_overflow(off, w[i].nbytes, &off))
			return eht_err(EOVERFLOW, "eht_st_write %s: data area larger than 2^64 bytes", path);
		sb_printf(h, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off - w[i].nbytes, off);
	}
	sb_puts(h, "}");
	while (!h->oom && h->len % 8)
		sb_puts(h, " ");
	if (h->oom)
		return eht_err(ENOMEM, "eht_st_write %s: out of memory for the header", path);
	if (h->len > EHT_ST_MAX_HEADER)
		return eht_err(EFBIG, "eht_st_write %s: header of %zu bytes over the limit", path, h->len);
	return 0;
}

/* The header's length, the header, then each tensor's bytes (its data, or fill in CHUNK pieces). */
static int write_body(int fd, const char *path, const char *tmp, const struct sbuf *h, const struct wt *w, size_t n)
{
	uint8_t le[8], *chunk = NULL;
	int rc;
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)((uint64_t)h->len >> (8 * i));
	if ((rc = write_all(fd, le, 8, tmp)) || (rc = write_all(fd, h->p, h->len, tmp)))
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		const struct eht_st_write_tensor *t = w[i].t;
		if (t->data) {
			rc = write_all(fd, t->data, (size_t)w[i].nbytes, tmp);
			continue;
		}
		if (!chunk && !(chunk = malloc(CHUNK))) {
			rc = eht_err(ENOMEM, "eht_st_write %s: out of memory", path);
			break;
		}
		for (uint64_t o = 0; o < w[i].nbytes && !rc; o += CHUNK) {
			size_t len = w[i].nbytes - o < CHUNK ? (size_t)(w[i].nbytes - o) : CHUNK;
			if ((rc = t->fill(t->ctx, o, chunk, len)) < 0) {
				eht_err_prefix(rc, "eht_st_write %s: tensor '%s': fill", path, t->name);
				break;
			}
			rc = write_all(fd, chunk, len, tmp);
		}
	}
	free(chunk);
	return rc;
}

int eht_st_write(const char *path, const struct eht_st_write_tensor *tensors, size_t n,
		 const char *const *metadata, uint32_t flags)
{
	struct wt *w = NULL;
	const char **meta = NULL;
	struct sbuf h = {0};
	char *tmp = NULL;
	int fd = -1, rc = 0;
	size_t nmeta = 0;

	if (!path || (n && !tensors))
		return eht_err(EINVAL, "eht_st_write: NULL argument");
	if (flags)
		return eht_err(EINVAL, "eht_st_write %s: unknown flags 0x%x", path, flags);
	w = calloc(n ? n : 1, sizeof(*w));
	if (!w)
		return eht_err(ENOMEM, "eht_st_write %s: out of memory", path);
	if ((rc = check_tensors(path, tensors, n, w)) || (metadata && (rc = check_metadata(path, metadata, &meta, &nmeta))) ||
	    (rc = build_header(path, w, n, metadata ? meta : NULL, nmeta, &h)))
		goto out;
	if (asprintf(&tmp, "%s.tmp", path) < 0) {
		tmp = NULL;
		rc = eht_err(ENOMEM, "eht_st_write %s: out of memory", path);
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = eht_err_sys(errno, "%s: open", tmp);
		goto out;
	}
	if ((rc = write_body(fd, path, tmp, &h, w, n)))
		goto out;
	/* Durable before it is visible: after a crash, path is the old file or the whole new one. */
	if (fsync(fd) != 0) {
		rc = eht_err_sys(errno, "%s: fsync", tmp);
		goto out;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = eht_err_sys(errno, "%s: close", tmp);
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		rc = eht_err_sys(errno, "rename %s -> %s", tmp, path);
out:
	if (fd >= 0)
		close(fd);
	if (rc && tmp)
		unlink(tmp);
	free(tmp);
	free(h.p);
	free(meta);
	free(w);
	return rc;
}
