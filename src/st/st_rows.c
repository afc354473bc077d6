/* SPDX-License-Identifier: Apache-2.0 */
/* st_rows.c: row ranges of 2-D tensors for tensor parallelism, as file offsets and mapped views. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "st/st_impl.h"
#include "util/err.h"
#include "util/file.h"
#include "util/opts.h"

struct eht_st_map {
	void *base;      /* page-aligned mapping */
	size_t len;
	const uint8_t *data;
	uint64_t nbytes;
	int fd;
};

int eht_rows_split(uint64_t rows, uint32_t rank, uint32_t nranks, uint64_t *first_row, uint64_t *count)
{
	if (!first_row || !count || nranks == 0 || rank >= nranks)
		return eht_err(EINVAL, "eht_rows_split: rank %u of %u ranks (or NULL output)", rank, nranks);
	uint64_t base = rows / nranks, extra = rows % nranks;
	*first_row = (uint64_t)rank * base + (rank < extra ? rank : extra);
	*count = base + (rank < extra ? 1 : 0);
	return 0;
}

/* Rows [first_row, first_row + count) of t; rank/nranks only label the result. */
static int rows_fill(const struct eht_st_tensor_info *t, uint32_t rank, uint32_t nranks, int split, uint64_t first_row,
		     uint64_t count, struct eht_st_rows *out)
{
	char q[160];
	if (!t || !out || out->size == 0)
		return eht_err(EINVAL, "eht_st_rows: NULL argument or out->size 0");
	const char *qn = st_quote(t->name, q, sizeof(q));
	if (t->ndim != 2)
		return eht_err(EINVAL, "%s: tensor '%s': row ranges need a 2-D tensor, it has %u dimensions", t->path,
			       qn, t->ndim);
	int bits = eht_dtype_bits(t->dtype);
	uint64_t rbits;
	if (bits < 0 || __builtin_mul_overflow(t->shape[1], (uint64_t)bits, &rbits) || rbits % 8)
		return eht_err(EINVAL, "%s: tensor '%s': a row of %llu %s elements is not a whole number of bytes",
			       t->path, qn, (unsigned long long)t->shape[1], eht_dtype_name(t->dtype));
	struct eht_st_rows r = {0};
	r.size = out->size;
	r.rank = rank;
	r.nranks = nranks;
	if (split) {
		int rc = eht_rows_split(t->shape[0], rank, nranks, &r.first_row, &r.count);
		if (rc)
			return rc;
	} else {
		if (first_row > t->shape[0] || count > t->shape[0] - first_row)
			return eht_err(EINVAL, "%s: tensor '%s': rows [%llu, +%llu) are not inside its %llu rows", t->path,
				       qn, (unsigned long long)first_row, (unsigned long long)count,
				       (unsigned long long)t->shape[0]);
		r.first_row = first_row;
		r.count = count;
	}
	r.rows = t->shape[0];
	r.row_bytes = rbits / 8;
	/* validated tensors hold rows x row_bytes bytes, so none of these overflow */
	r.file_offset = t->file_offset + r.first_row * r.row_bytes;
	r.nbytes = r.count * r.row_bytes;
	r.path = t->path;
	r.name = t->name;
	r.size = sizeof(r);
	return eht_opts_out(out, &r, sizeof(r), "eht_st_rows: out");
}

int eht_st_rows(const struct eht_st_tensor_info *t, uint32_t rank, uint32_t nranks, struct eht_st_rows *out)
{
	return rows_fill(t, rank, nranks, 1, 0, 0, out);
}

int eht_st_rows_range(const struct eht_st_tensor_info *t, uint64_t first_row, uint64_t count, struct eht_st_rows *out)
{
	return rows_fill(t, 0, 1, 0, first_row, count, out);
}

int eht_st_map_rows(const struct eht_st_rows *r, uint32_t flags, eht_st_map **out)
{
	struct stat st;
	struct eht_st_map *m;
	int rc;
	if (!r || !out || !r->path || r->size < sizeof(*r))
		return eht_err(EINVAL, "eht_st_map_rows: NULL argument or rows->size too small");
	*out = NULL;
	if (flags)
		return eht_err(EINVAL, "eht_st_map_rows %s: unknown flags 0x%x", r->path, flags);
	m = calloc(1, sizeof(*m));
	if (!m)
		return eht_err(ENOMEM, "out of memory");
	/* The file rule (util/file.h): a FIFO put in a shard's place must not block the open (and a
	 * reader past its deadline); O_NONBLOCK is cleared again (io_uring honours it). */
	m->fd = eht_file_open_read(r->path, "checkpoint shard", &st);
	if (m->fd < 0) {
		rc = m->fd;
		goto fail;
	}
	uint64_t end;
	if (__builtin_add_overflow(r->file_offset, r->nbytes, &end) || end > (uint64_t)st.st_size) {
		rc = eht_err(EINVAL, "%s: rows [%llu, +%llu) of '%s': bytes [%llu, %llu) not inside the file (%llu bytes)",
			     r->path, (unsigned long long)r->first_row, (unsigned long long)r->count,
			     r->name ? r->name : "?", (unsigned long long)r->file_offset, (unsigned long long)end,
			     (unsigned long long)st.st_size);
		goto fail;
	}
	m->nbytes = r->nbytes;
	if (r->nbytes) {
		uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
		uint64_t start = r->file_offset - r->file_offset % page;
		m->len = (size_t)(end - start);
		m->base = mmap(NULL, m->len, PROT_READ, MAP_SHARED, m->fd, (off_t)start);
		if (m->base == MAP_FAILED) {
			m->base = NULL;
			rc = eht_err_sys(errno, "%s: mmap of %zu bytes at %llu", r->path, m->len,
					 (unsigned long long)start);
			goto fail;
		}
		/* lookups touch scattered rows: read-ahead would only waste page cache */
		(void)madvise(m->base, m->len, MADV_RANDOM);
		m->data = (const uint8_t *)m->base + (r->file_offset - start);
	}
	*out = m;
	return 0;
fail:
	eht_st_unmap(m);
	return rc;
}

const void *eht_st_map_data(const eht_st_map *m) { return m ? m->data : NULL; }
uint64_t eht_st_map_bytes(const eht_st_map *m) { return m ? m->nbytes : 0; }
int eht_st_map_fd(const eht_st_map *m) { return m ? m->fd : -1; }

int eht_st_unmap(eht_st_map *m)
{
	int rc = 0;
	if (!m)
		return 0;
	if (m->base && munmap(m->base, m->len) != 0)
		rc = eht_err_sys(errno, "munmap");
	if (m->fd >= 0 && close(m->fd) != 0 && !rc)
		rc = eht_err_sys(errno, "close");
	free(m);
	return rc;
}
