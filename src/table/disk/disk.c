/* SPDX-License-Identifier: Apache-2.0 */
/* disk.c: the disk tier: a rank's rows of a weight (+ scale) tensor read in place from the
 * checkpoint's files, joined per row into packed rows; reads, file checks and errors. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "os/mem_guard.h"
#include "table/disk/disk_impl.h"
#include "table/disk/disk_tier.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/settings.h"

#define DEFAULT_IO_THREADS 32u
#define DEFAULT_PREFETCH_ROWS 196608u
#define DEFAULT_PREFETCH_SLOTS 2u
#define MAX_ROW_BYTES (1ull << 30)
/* Rows handled per block of read_direct (bounded stack use). */
#define BLOCK 1024
/* Rows per consultation of the prefetch ticket. */
#define SERVE_BLOCK 1024

static const struct eht_table_ops disk_ops;

static struct disk *disk_of(const eht_table *t)
{
	return (t && t->tier_ops == &disk_ops) ? t->impl : NULL;
}

/* ------------------------------------------------------------------- file checks and errors */
static bool same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* What changed about part p since open, as text into buf ("" when nothing). */
static void describe_change(const struct disk_part *p, char *buf, size_t len, bool *changed)
{
	struct stat st;
	size_t o = 0;
	buf[0] = '\0';
	*changed = false;
	if (fstat(p->fd, &st) == 0) {
		if ((uint64_t)st.st_size != p->size) {
			o += (size_t)snprintf(buf + o, len - o, "; the file %s from %llu to %llu bytes since open",
					      (uint64_t)st.st_size < p->size ? "shrank" : "grew",
					      (unsigned long long)p->size, (unsigned long long)st.st_size);
			*changed = true;
		} else if (!same_time(st.st_mtim, p->mtime) && o < len) {
			o += (size_t)snprintf(buf + o, len - o, "; the file was modified since open (mtime changed)");
			*changed = true;
		}
	}
	if (o < len) {
		if (stat(p->path, &st) != 0)
			o += (size_t)snprintf(buf + o, len - o, "; the path no longer exists (%s)", strerror(errno));
		else if (st.st_ino != p->ino || st.st_dev != p->dev)
			o += (size_t)snprintf(buf + o, len - o, "; the path now names another file (replaced since open)");
	}
	(void)o;
}

int disk_read_error(struct disk *d, const struct disk_part *p, uint64_t row, uint64_t off, int err,
		    const char *what)
{
	char change[512];
	bool changed;
	describe_change(p, change, sizeof(change), &changed);
	if (err < 0)
		err = -err;
	return eht_err(err, "disk table %s: %s row %llu of '%s' at byte offset %llu of %s: %s%s", d->t->name, what,
		       (unsigned long long)row, p->tensor, (unsigned long long)off, p->path, strerror(err), change);
}

/* Checks the files against what open saw (size and mtime by fstat; with check_path also the inode
 * the path names now). Returns 0 or -ESTALE naming the file. */
static int disk_check_files(struct disk *d, bool check_path)
{
	for (unsigned i = 0; i < d->nparts; i++) {
		const struct disk_part *p = &d->part[i];
		struct stat st;
		bool bad = false;
		if (fstat(p->fd, &st) != 0)
			return eht_err_sys(errno, "disk table %s: fstat of %s", d->t->name, p->path);
		bad = (uint64_t)st.st_size != p->size || !same_time(st.st_mtim, p->mtime);
		if (!bad && check_path)
			bad = stat(p->path, &st) != 0 || st.st_ino != p->ino || st.st_dev != p->dev;
		if (bad) {
			char change[512];
			bool changed;
			describe_change(p, change, sizeof(change), &changed);
			return eht_err(ESTALE, "disk table %s: tensor '%s' in %s (rows at byte offset %llu) changed while open%s",
				       d->t->name, p->tensor, p->path, (unsigned long long)p->file_offset, change);
		}
	}
	return 0;
}

/* fstat check at most every check interval, whichever thread comes first. */
static int maybe_check(struct disk *d)
{
	uint64_t now = eht_now_ns(), last = atomic_load_explicit(&d->last_check_ns, memory_order_relaxed);
	if (now <= last || now - last < d->check_ns) /* another thread may have stored a later time */
		return 0;
	if (!atomic_compare_exchange_strong(&d->last_check_ns, &last, now))
		return 0;
	return disk_check_files(d, false);
}

/* ------------------------------------------------------------------- reads */
static int pread_full(const struct disk_part *p, uint8_t *dst, uint64_t len, uint64_t off, int *short_read)
{
	uint64_t done = 0;
	*short_read = 0;
	while (done < len) {
		ssize_t r = pread(p->fd, dst + done, len - done, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0) {
			*short_read = 1;
			return -EIO;
		}
		done += (uint64_t)r;
	}
	return 0;
}

/* Reads rows miss[0..m) of every part into dst slots idx[0..m). */
static int read_files(struct disk *d, const uint64_t *miss, const uint32_t *idx, size_t m, uint8_t *dst)
{
	if (d->flags & EHT_DISK_URING)
		return disk_read_uring(d, miss, idx, m, dst);
	if (d->split)
		return disk_read_split(d, miss, idx, m, dst);
	for (unsigned k = 0; k < d->nparts; k++) {
		const struct disk_part *p = &d->part[k];
		if (d->flags & EHT_DISK_PREAD) {
			for (size_t i = 0; i < m; i++) {
				uint64_t off = p->file_offset + (miss[i] - d->first_row) * p->row_bytes;
				int shrt;
				int rc = pread_full(p, dst + (size_t)idx[i] * d->rb + p->dst_off, p->row_bytes, off, &shrt);
				if (rc)
					return disk_read_error(d, p, miss[i], off, rc,
							       shrt ? "short read (end of file) of" : "reading");
			}
			continue;
		}
		/* Copies from the mapping, under the guard, in runs of consecutive destination slots. */
		for (size_t i = 0; i < m;) {
			size_t e = i + 1;
			while (e < m && idx[e] == idx[e - 1] + 1)
				e++;
			size_t fault = 0;
			int rc = disk_guarded_copy_rows(p->data, miss + i, e - i, d->first_row, p->row_bytes,
							dst + (size_t)idx[i] * d->rb + p->dst_off, d->rb, &fault);
			if (rc) {
				uint64_t row = miss[i + fault];
				return disk_read_error(d, p, row, p->file_offset + (row - d->first_row) * p->row_bytes,
						       EIO, "bus error (SIGBUS, caught) reading");
			}
			i = e;
		}
	}
	return 0;
}

int disk_read_direct(struct disk *d, const uint64_t *rows, size_t n, uint8_t *dst)
{
	uint64_t miss[BLOCK];
	uint32_t idx[BLOCK];
	uint64_t hits = 0, nread = 0;
	int rc = maybe_check(d);
	for (size_t b = 0; b < n && !rc; b += BLOCK) {
		size_t e = n - b < BLOCK ? n : b + BLOCK, m = 0;
		for (size_t i = b; i < e; i++) {
			if (disk_cache_get(&d->cache, rows[i], dst + i * d->rb)) {
				hits++;
				continue;
			}
			miss[m] = rows[i];
			idx[m++] = (uint32_t)(i - b);
		}
		if (!m)
			continue;
		if ((rc = read_files(d, miss, idx, m, dst + b * d->rb)))
			break;
		for (size_t i = 0; i < m; i++)
			disk_cache_put(&d->cache, miss[i], dst + (b + idx[i]) * d->rb);
		nread += m;
	}
	disk_count(d->ctr, DC_CACHE_HITS, hits);
	disk_count(d->ctr, DC_ROWS_READ, nread);
	return rc;
}

/* The table's read_rows: the oldest prefetch ticket first, then cache and files; into host memory
 * only (no GPU-direct reads: a GPU engine stages through its pinned buffer). */
static int disk_read_rows(eht_table *t, const uint64_t *rows, size_t n, void *dst, unsigned flags)
{
	struct disk *d = t->impl;
	uint8_t *out = dst;
	if (flags & EHT_ROWS_TO_DEVICE)
		return eht_err(EOPNOTSUPP, "disk table %s: rows are read into host memory only (no GPU-direct "
					   "storage here: stage through host memory)", t->name);
	for (size_t i = 0; i < n; i++)
		if (rows[i] < d->first_row || rows[i] - d->first_row >= d->local_rows)
			return eht_err(ERANGE, "disk table %s: row %llu is outside this rank's rows [%llu, %llu)", t->name,
				       (unsigned long long)rows[i], (unsigned long long)d->first_row,
				       (unsigned long long)(d->first_row + d->local_rows));
	if (!d->nslots)
		return disk_read_direct(d, rows, n, out);
	uint8_t done[SERVE_BLOCK];
	uint64_t rest[SERVE_BLOCK];
	for (size_t b = 0; b < n; b += SERVE_BLOCK) {
		size_t m = n - b < SERVE_BLOCK ? n - b : SERVE_BLOCK;
		size_t served = disk_prefetch_serve(d, rows + b, m, out + b * d->rb, done);
		if (served == m)
			continue;
		if (!served) { /* no ticket (the usual case): the block as it is */
			int rc = disk_read_direct(d, rows + b, m, out + b * d->rb);
			if (rc)
				return rc;
			continue;
		}
		/* Runs of rows the ticket did not have. */
		for (size_t i = 0; i < m;) {
			if (done[i]) {
				i++;
				continue;
			}
			size_t e = i, k = 0;
			while (e < m && !done[e])
				rest[k++] = rows[b + e++];
			int rc = disk_read_direct(d, rest, k, out + (b + i) * d->rb);
			if (rc)
				return rc;
			i = e;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------- open / close */
static void parts_close(struct disk *d)
{
	for (unsigned i = 0; i < d->nparts; i++)
		eht_st_unmap(d->part[i].map);
	d->nparts = 0;
}

static int disk_close(eht_table *t)
{
	struct disk *d = t->impl;
	if (!d)
		return 0;
	const bool free_now = disk_prefetch_fini(d);
	int rc = 0;
	for (unsigned i = 0; i < d->nparts; i++) {
		int r = eht_st_unmap(d->part[i].map);
		if (r && !rc)
			rc = r;
	}
	d->nparts = 0;
	disk_cache_free(&d->cache);
	disk_split_free(d);
	d->t = NULL;
	if (free_now)
		free(d); /* else the release of its last ticket frees it */
	t->impl = NULL;
	return rc;
}

static void disk_describe(const eht_table *t, struct eht_table_info *info)
{
	info->tier = EHT_TIER_DISK;
	info->host = NULL; /* rows come through read_rows */
	info->device_ptr = 0;
	info->device = -1;
	info->numa_node = -1;
	info->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
}

static const struct eht_table_ops disk_ops = {.describe = disk_describe, .read_rows = disk_read_rows,
					      .export_to = disk_export_desc, .close = disk_close};

/* Maps rank's range of one tensor as part k of the packed rows. */
static int open_part(struct disk *d, eht_ckpt *ck, const char *name, const struct eht_disk_opts *o, unsigned k,
		     uint64_t *rows_out)
{
	struct eht_st_tensor_info ti = {.size = sizeof(ti)};
	struct eht_st_rows r = {.size = sizeof(r)};
	struct disk_part *p = &d->part[k];
	int rc = eht_ckpt_find(ck, name, &ti);
	if (rc)
		return eht_err_prefix(rc, "disk: checkpoint %s", eht_ckpt_path(ck));
	if ((rc = o->row_count ? eht_st_rows_range(&ti, o->first_row, o->row_count, &r)
			       : eht_st_rows(&ti, o->rank, o->nranks, &r)))
		return rc;
	if (r.row_bytes == 0 || r.row_bytes > MAX_ROW_BYTES)
		return eht_err(EINVAL, "disk: tensor '%s' in %s: rows of %llu bytes are not supported", name, ti.path,
			       (unsigned long long)r.row_bytes);
	snprintf(p->path, sizeof(p->path), "%s", r.path);
	snprintf(p->tensor, sizeof(p->tensor), "%s", name);
	p->row_bytes = r.row_bytes;
	p->file_offset = r.file_offset;
	p->dst_off = k ? d->part[0].row_bytes : 0;
	p->fd = -1;
	if ((rc = eht_st_map_rows(&r, 0, &p->map)))
		return rc;
	d->nparts = k + 1;
	p->data = eht_st_map_data(p->map);
	p->fd = eht_st_map_fd(p->map);
	struct stat st;
	if (fstat(p->fd, &st) != 0)
		return eht_err_sys(errno, "disk: fstat of %s", p->path);
	p->size = (uint64_t)st.st_size;
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	p->mtime = st.st_mtim;
	d->first_row = r.first_row;
	d->local_rows = r.count;
	*rows_out = r.rows;
	return 0;
}

/* eht_disk_open, in a checkpoint already open (shared: the caller's, left open) or opened here. */
static int disk_open(const char *path, eht_ckpt *shared, const struct eht_disk_opts *opts, eht_table **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_disk_open: NULL out");
	*out = NULL;
	if (!path || !opts || !opts->weight)
		return eht_err(EINVAL, "eht_disk_open: NULL %s", !path ? "path" : "weight tensor name");
	struct eht_disk_opts o = {0};
	int orc = eht_opts_in(&o, sizeof(o), opts, "eht_disk_open: opts");
	if (orc)
		return orc;
	if (o.flags & ~EHT_DISK_OPTS_FLAGS)
		return eht_err(EINVAL, "eht_disk_open: unknown flags 0x%x", o.flags & ~EHT_DISK_OPTS_FLAGS);
	if (o.nranks == 0)
		o.nranks = 1;
	if (o.rank >= o.nranks)
		return eht_err(EINVAL, "eht_disk_open: rank %u of %u ranks", o.rank, o.nranks);
	if (o.prefetch_rows >= (1ull << 31))
		return eht_err(EINVAL, "eht_disk_open: prefetch_rows %llu is over 2^31", (unsigned long long)o.prefetch_rows);
	int rc = 0;
	if (eht_setting_enum(EHT_SET_DISK_URING) == EHT_SET_DISK_URING_ALL)
		o.flags |= EHT_DISK_URING;
	if ((o.flags & EHT_DISK_URING) && (o.flags & EHT_DISK_PREAD))
		return eht_err(EINVAL, "eht_disk_open: EHT_DISK_URING and EHT_DISK_PREAD together");
	if ((o.flags & EHT_DISK_URING) && !disk_uring_available())
		return eht_err(EOPNOTSUPP, "eht_disk_open: EHT_DISK_URING in a libeht built without liburing "
					   "(install liburing-dev and rebuild)");
	if (!(o.flags & (EHT_DISK_PREAD | EHT_DISK_URING)) && (rc = eht_guard_install()))
		return rc;

	/* Aligned: the counter shards are a cache line each (sizeof is a multiple of the alignment). */
	struct disk *d = aligned_alloc(_Alignof(struct disk), sizeof(*d));
	eht_ckpt *ck = shared;
	eht_table *t = NULL;
	if (!d)
		return eht_err(ENOMEM, "disk: out of memory");
	memset(d, 0, sizeof(*d));
	d->flags = o.flags;
	if (!realpath(path, d->ckpt))
		snprintf(d->ckpt, sizeof(d->ckpt), "%s", path);
	d->check_ns = eht_setting_u64(EHT_SET_DISK_CHECK_US) * 1000ull;
	atomic_init(&d->last_check_ns, eht_now_ns());
	if (!ck && (rc = eht_ckpt_open(path, 0, &ck)))
		goto fail;
	uint64_t rows = 0, srows = 0;
	if ((rc = open_part(d, ck, o.weight, &o, 0, &rows)))
		goto fail;
	if (o.scale) {
		if ((rc = open_part(d, ck, o.scale, &o, 1, &srows)))
			goto fail;
		if (srows != rows) {
			rc = eht_err(EINVAL, "disk: weight '%s' has %llu rows but scale '%s' has %llu", o.weight,
				     (unsigned long long)rows, o.scale, (unsigned long long)srows);
			goto fail;
		}
	}
	/* The views of the checkpoint map whole files; only the row ranges stay mapped. */
	rc = ck != shared ? eht_ckpt_close(ck) : 0;
	ck = NULL;
	if (rc)
		goto fail;
	d->rb = d->part[0].row_bytes + (d->nparts > 1 ? d->part[1].row_bytes : 0);
	if (d->rb > MAX_ROW_BYTES) {
		rc = eht_err(EINVAL, "disk: packed rows of %llu bytes are not supported", (unsigned long long)d->rb);
		goto fail;
	}
	if ((rc = disk_cache_init(&d->cache, o.cache_bytes ? o.cache_bytes : EHT_DISK_DEFAULT_CACHE_BYTES, d->rb)))
		goto fail;
	if (!(d->flags & (EHT_DISK_PREAD | EHT_DISK_URING)) && (rc = disk_split_init(d)))
		goto fail;
	d->io_threads = o.io_threads ? o.io_threads : DEFAULT_IO_THREADS;
	d->prefetch_rows = o.prefetch_rows ? o.prefetch_rows : DEFAULT_PREFETCH_ROWS;
	d->nslots = o.prefetch_slots ? o.prefetch_slots : DEFAULT_PREFETCH_SLOTS;

	struct eht_table_info info = {
		.size = sizeof(info), .rows = rows, .row_bytes = d->rb, .first_row = d->first_row,
		.local_rows = d->local_rows, .name = o.name ? o.name : o.weight,
	};
	if ((rc = eht_table_new(&info, &disk_ops, d, &t)))
		goto fail;
	d->t = t;
	if ((rc = disk_prefetch_init(d))) {
		eht_table_close(t); /* frees d */
		return rc;
	}
	eht_debug("disk table %s: rows [%llu, +%llu) of %llu, %llu-byte rows, %s, cache %llu rows", t->name,
		  (unsigned long long)d->first_row, (unsigned long long)d->local_rows, (unsigned long long)rows,
		  (unsigned long long)d->rb, (d->flags & EHT_DISK_PREAD) ? "pread" : (d->flags & EHT_DISK_URING) ? "io_uring" : "mapped",
		  (unsigned long long)d->cache.nslots);
	*out = t;
	return 0;
fail:
	if (ck != shared)
		eht_ckpt_close(ck);
	parts_close(d);
	disk_cache_free(&d->cache);
	disk_split_free(d);
	free(d);
	return rc;
}

int eht_disk_open(const char *path, const struct eht_disk_opts *opts, eht_table **out)
{
	return disk_open(path, NULL, opts, out);
}

int eht_disk_open_ckpt(eht_ckpt *ck, const struct eht_disk_opts *opts, eht_table **out)
{
	if (!ck) {
		if (out)
			*out = NULL;
		return eht_err(EINVAL, "eht_disk_open: NULL checkpoint");
	}
	return disk_open(eht_ckpt_path(ck), ck, opts, out);
}

/* ------------------------------------------------------------------- public helpers */
int eht_disk_check(eht_table *t)
{
	struct disk *d = disk_of(t);
	if (!d)
		return eht_err(EINVAL, "eht_disk_check: not a disk table");
	return disk_check_files(d, true);
}

int eht_disk_drop_cache(eht_table *t)
{
	struct disk *d = disk_of(t);
	if (!d)
		return eht_err(EINVAL, "eht_disk_drop_cache: not a disk table");
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	for (unsigned i = 0; i < d->nparts; i++) {
		const struct disk_part *p = &d->part[i];
		uint64_t bytes = d->local_rows * p->row_bytes;
		if (!bytes)
			continue;
		/* Our own page-table entries first: the kernel does not drop pages still mapped. */
		uintptr_t a = (uintptr_t)p->data, a0 = a - a % page;
		(void)madvise((void *)a0, (size_t)(a + bytes - a0), MADV_DONTNEED);
		(void)posix_fadvise(p->fd, (off_t)p->file_offset, (off_t)bytes, POSIX_FADV_DONTNEED);
	}
	disk_cache_clear(&d->cache);
	disk_split_forget(d);
	return 0;
}

int eht_disk_stats(const eht_table *t, struct eht_disk_stats *s)
{
	struct disk *d = disk_of(t);
	if (!d || !s)
		return eht_err(EINVAL, "eht_disk_stats: %s", d ? "NULL stats" : "not a disk table");
	struct eht_disk_stats x = {.size = sizeof(x)};
	x.rows_read = disk_counter(d->ctr, DC_ROWS_READ);
	x.cache_hits = disk_counter(d->ctr, DC_CACHE_HITS);
	x.prefetch_hits = disk_counter(d->ctr, DC_PREFETCH_HITS);
	x.cache_slots = d->cache.nslots;
	x.resident_rows = disk_counter(d->ctr, DC_RESIDENT);
	x.uncached_rows = disk_counter(d->ctr, DC_UNCACHED);
	x.uncached_bytes = disk_counter(d->ctr, DC_UNCACHED_BYTES);
	x.split_mode = (uint32_t)disk_split_mode(d);
	return eht_opts_out(s, &x, sizeof(x), "eht_disk_stats: stats");
}

struct disk *disk_from_table(eht_table *t) { return disk_of(t); }

static _Atomic unsigned next_shard;
static _Thread_local unsigned tl_shard; /* 1 + this thread's shard, 0 before its first count */

void disk_count(struct disk_ctr_shard *ctr, unsigned c, uint64_t v)
{
	if (!v)
		return;
	if (!tl_shard)
		tl_shard = 1 + atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) % DISK_SHARDS;
	atomic_fetch_add_explicit(&ctr[tl_shard - 1].v[c], v, memory_order_relaxed);
}

uint64_t disk_counter(const struct disk_ctr_shard *ctr, unsigned c)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < DISK_SHARDS; i++)
		sum += atomic_load_explicit(&ctr[i].v[c], memory_order_relaxed);
	return sum;
}
