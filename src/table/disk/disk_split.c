/* SPDX-License-Identifier: Apache-2.0 */
/* disk_split.c: the disk tier's default read: each gather splits its rows into page-cache resident
 * (copied from the mapping) and not (read with io_uring at depth, weight and scale of a row submitted
 * together; pread where io_uring is unavailable).
 *
 * Residency is asked with mincore(2) on the row's pages: measured on the development VM at ~0.9 us a
 * row whether resident or not, where preadv2(RWF_NOWAIT) costs ~0.85 us on a resident row (copy
 * included) but ~7.8 us on an uncached one, because the kernel starts readahead I/O from the caller
 * before answering EAGAIN. To keep warm steps at copy speed, pages seen resident (or just read) are
 * remembered in a bitmap of hints and not asked again; a hint that went stale (the kernel evicted the
 * page) costs one synchronous page fault, so the bitmap is cleared whenever it claims more pages than
 * the memory budget can hold (half the smaller of the cgroup's memory limit and the machine's RAM;
 * EHT_DISK_HINT_PAGES overrides) and by eht_disk_drop_cache. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "table/disk/disk_impl.h"
#include "util/err.h"
#include "util/log.h"
#include "util/settings.h"

/* Rows handled per round (bounded stack use; with two parts, up to 2x reads in flight). */
#define SPLIT_ROWS 1024u
/* Rows spanning more pages are not asked about: they are read (correct, only slower when cached). */
#define MAX_PROBE_PAGES 8u

struct disk_split {
	bool uring;       /* uncached rows with io_uring (else pread) */
	bool uring_fail;  /* EHT_TEST_DISK_URING_FAIL: ring set-up fails, as on a kernel forbidding io_uring */
	uint64_t page;
	unsigned shift;   /* log2(page) */
	uint64_t cap;     /* hints kept at most before the bitmap is cleared */
	_Atomic uint64_t nset;
	_Atomic bool uring_broken; /* a ring failed to start: pread from then on */
	struct {
		_Atomic uint64_t *bits;
		uint64_t nwords;
		uintptr_t base; /* page-aligned address of the part's first row */
	} part[2];
};

/* ------------------------------------------------------------------- memory budget */
/* The memory limit of this process's cgroup (v2 memory.max or v1 memory.limit_in_bytes), or 0. */
static uint64_t cgroup_limit(void)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	if (!f)
		return 0;
	char line[1024], path[1400];
	uint64_t lim = 0;
	while (!lim && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctl = c1 + 1, *cg = c2 + 1;
		if (!strcmp(ctl, "")) {
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max", cg);
		} else if (!strcmp(ctl, "memory")) {
			snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", cg);
		} else {
			continue;
		}
		FILE *g = fopen(path, "r");
		if (!g)
			continue;
		unsigned long long v = 0;
		if (fscanf(g, "%llu", &v) == 1 && v < (1ull << 60))
			lim = v;
		fclose(g);
	}
	fclose(f);
	return lim;
}

/* ------------------------------------------------------------------- hints */
static inline void page_range(const struct disk_split *s, const struct disk *d, unsigned k, uint64_t row,
			      uint64_t *first, uint64_t *count)
{
	const struct disk_part *p = &d->part[k];
	uintptr_t a = (uintptr_t)(p->data + (row - d->first_row) * p->row_bytes);
	uint64_t f = (a - s->part[k].base) >> s->shift, l = (a + p->row_bytes - 1 - s->part[k].base) >> s->shift;
	*first = f;
	*count = l - f + 1;
}

static inline bool hinted(const struct disk_split *s, unsigned k, uint64_t first, uint64_t count)
{
	for (uint64_t q = first; q < first + count; q++)
		if (!(atomic_load_explicit(&s->part[k].bits[q / 64], memory_order_relaxed) >> (q % 64) & 1))
			return false;
	return true;
}

void disk_split_forget(struct disk *d)
{
	struct disk_split *s = d->split;
	if (!s)
		return;
	for (unsigned k = 0; k < d->nparts; k++)
		for (uint64_t w = 0; w < s->part[k].nwords; w++)
			atomic_store_explicit(&s->part[k].bits[w], 0, memory_order_relaxed);
	atomic_store(&s->nset, 0);
}

static void hint_set(struct disk *d, unsigned k, uint64_t first, uint64_t count)
{
	struct disk_split *s = d->split;
	uint64_t added = 0;
	for (uint64_t q = first; q < first + count; q++) {
		uint64_t bit = 1ull << (q % 64);
		if (!(atomic_fetch_or_explicit(&s->part[k].bits[q / 64], bit, memory_order_relaxed) & bit))
			added++;
	}
	if (added && atomic_fetch_add_explicit(&s->nset, added, memory_order_relaxed) + added > s->cap)
		disk_split_forget(d); /* more than the budget can hold: some are stale for sure */
}

/* True when every page of the range is resident (mincore), and then remembered. */
static bool probe(struct disk *d, unsigned k, uint64_t first, uint64_t count)
{
	struct disk_split *s = d->split;
	unsigned char vec[MAX_PROBE_PAGES];
	if (count > MAX_PROBE_PAGES)
		return false;
	if (mincore((void *)(s->part[k].base + first * s->page), count * s->page, vec) != 0)
		return false; /* cannot tell: read it */
	for (uint64_t i = 0; i < count; i++)
		if (!(vec[i] & 1))
			return false;
	hint_set(d, k, first, count);
	return true;
}

/* ------------------------------------------------------------------- uncached reads */
struct rd {
	uint64_t row;
	uint32_t idx; /* destination slot */
	unsigned k;   /* part */
};

static int pread_rows(struct disk *d, const struct rd *r, size_t nr, uint8_t *dst)
{
	for (size_t j = 0; j < nr; j++) {
		const struct disk_part *p = &d->part[r[j].k];
		uint64_t off = p->file_offset + (r[j].row - d->first_row) * p->row_bytes, done = 0;
		uint8_t *out = dst + (size_t)r[j].idx * d->rb + p->dst_off;
		while (done < p->row_bytes) {
			ssize_t n = pread(p->fd, out + done, p->row_bytes - done, (off_t)(off + done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return disk_read_error(d, p, r[j].row, off, n < 0 ? errno : EIO,
						       n < 0 ? "reading" : "short read (end of file) of");
			done += (uint64_t)n;
		}
	}
	return 0;
}

#if EHT_HAVE_URING
/* The reads r[0..nr) with io_uring; -ENOSYS-style errors of set-up are returned as is (the caller
 * falls back), read errors as disk_read_error. */
static int uring_rows(struct disk *d, struct io_uring *ring, const struct rd *r, size_t nr, uint8_t *dst)
{
	size_t submitted = 0, completed = 0, bad = SIZE_MAX;
	int err = 0;
	bool err_short = false;
	/* After an error nothing more is submitted, but everything in flight is reaped: the kernel
	 * writes into dst until each read completes. */
	while (completed < submitted || (submitted < nr && !err)) {
		while (submitted < nr && !err) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			if (!sqe)
				break;
			const struct rd *q = &r[submitted];
			const struct disk_part *p = &d->part[q->k];
			io_uring_prep_read(sqe, p->fd, dst + (size_t)q->idx * d->rb + p->dst_off, (unsigned)p->row_bytes,
					   p->file_offset + (q->row - d->first_row) * p->row_bytes);
			io_uring_sqe_set_data64(sqe, submitted);
			submitted++;
		}
		int sr = io_uring_submit_and_wait(ring, 1);
		if (sr < 0 && sr != -EINTR && sr != -EAGAIN && !err) {
			err = -sr;
			bad = completed;
			if (completed == submitted)
				break;
		}
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(ring, head, cqe)
		{
			size_t j = (size_t)io_uring_cqe_get_data64(cqe);
			if ((uint64_t)cqe->res != d->part[r[j].k].row_bytes && !err) {
				err = cqe->res < 0 ? -cqe->res : EIO;
				err_short = cqe->res >= 0;
				bad = j;
			}
			seen++;
		}
		io_uring_cq_advance(ring, seen);
		completed += seen;
	}
	if (err) {
		const struct rd *q = &r[bad < nr ? bad : 0];
		const struct disk_part *p = &d->part[q->k];
		return disk_read_error(d, p, q->row, p->file_offset + (q->row - d->first_row) * p->row_bytes, err,
				       err_short ? "short read (end of file) of" : "reading (io_uring)");
	}
	return 0;
}
#endif

static int read_uncached(struct disk *d, const struct rd *r, size_t nr, uint8_t *dst)
{
	struct disk_split *s = d->split;
#if EHT_HAVE_URING
	if (s->uring && !atomic_load_explicit(&s->uring_broken, memory_order_relaxed)) {
		int rc = 0;
		/* uring_fail is checked first: the thread may hold a ring made for another table */
		struct io_uring *ring = s->uring_fail ? (rc = -ENOSYS, NULL) : disk_ring_get(&rc);
		if (ring)
			return uring_rows(d, ring, r, nr, dst);
		if (!atomic_exchange(&s->uring_broken, true))
			eht_warn("disk table %s: io_uring unavailable (%s); uncached rows are read with pread", d->t->name,
				 strerror(-rc));
	}
#else
	(void)s;
#endif
	return pread_rows(d, r, nr, dst);
}

/* ------------------------------------------------------------------- the gather */
int disk_read_split(struct disk *d, const uint64_t *miss, const uint32_t *idx, size_t m, uint8_t *dst)
{
	struct disk_split *s = d->split;
	const unsigned nparts = d->nparts; /* fixed while the table is open */
	uint64_t rrow[SPLIT_ROWS];
	uint32_t ridx[SPLIT_ROWS];
	struct rd rd[2 * SPLIT_ROWS];
	uint64_t resident = 0, uncached = 0, ubytes = 0;
	int rc = 0;
	for (size_t b = 0; b < m && !rc; b += SPLIT_ROWS) {
		size_t e = m - b < SPLIT_ROWS ? m : b + SPLIT_ROWS, nr = 0;
		uint8_t cached[SPLIT_ROWS][2], full[SPLIT_ROWS];
		size_t nfull = 0;
		for (size_t i = b; i < e; i++) {
			bool all = true;
			for (unsigned k = 0; k < nparts; k++) {
				uint64_t f, c;
				page_range(s, d, k, miss[i], &f, &c);
				cached[i - b][k] = hinted(s, k, f, c) || probe(d, k, f, c);
				if (!cached[i - b][k]) {
					rd[nr++] = (struct rd){.row = miss[i], .idx = idx[i], .k = k};
					ubytes += c * s->page;
					all = false;
				}
			}
			full[i - b] = all;
			nfull += full[i - b];
			resident += all;
			uncached += !all;
		}
		/* Uncached reads first, in flight while nothing else waits; then the resident copies. */
		if (nr && (rc = read_uncached(d, rd, nr, dst)))
			break;
		for (size_t j = 0; j < nr; j++) {
			uint64_t f, c;
			page_range(s, d, rd[j].k, rd[j].row, &f, &c);
			if (c <= MAX_PROBE_PAGES)
				hint_set(d, rd[j].k, f, c);
		}
		/* Rows resident in every part (all of them, warm): one pass over both parts, in runs of
		 * consecutive destination slots. */
		for (size_t i = b; i < e && !rc;) {
			if (!full[i - b]) {
				i++;
				continue;
			}
			size_t j = i + 1, fault = 0;
			unsigned fk = 0;
			while (j < e && full[j - b] && idx[j] == idx[j - 1] + 1)
				j++;
			if (disk_guarded_copy_packed(d, miss + i, j - i, dst + (size_t)idx[i] * d->rb, &fault, &fk)) {
				const struct disk_part *p = &d->part[fk];
				uint64_t row = miss[i + fault];
				rc = disk_read_error(d, p, row, p->file_offset + (row - d->first_row) * p->row_bytes, EIO,
						     "bus error (SIGBUS, caught) reading");
			}
			i = j;
		}
		/* Rows with one part resident and the other read: the resident part alone. */
		for (unsigned k = 0; k < nparts && !rc && nfull < e - b; k++) {
			const struct disk_part *p = &d->part[k];
			size_t n = 0;
			for (size_t i = b; i < e; i++)
				if (cached[i - b][k] && !full[i - b])
					rrow[n] = miss[i], ridx[n++] = idx[i];
			for (size_t i = 0; i < n;) { /* runs of consecutive destination slots */
				size_t j = i + 1, fault = 0;
				while (j < n && ridx[j] == ridx[j - 1] + 1)
					j++;
				if (disk_guarded_copy_rows(p->data, rrow + i, j - i, d->first_row, p->row_bytes,
							   dst + (size_t)ridx[i] * d->rb + p->dst_off, d->rb, &fault)) {
					uint64_t row = rrow[i + fault];
					rc = disk_read_error(d, p, row, p->file_offset + (row - d->first_row) * p->row_bytes,
							     EIO, "bus error (SIGBUS, caught) reading");
					break;
				}
				i = j;
			}
		}
	}
	disk_count(d->ctr, DC_RESIDENT, resident);
	disk_count(d->ctr, DC_UNCACHED, uncached);
	disk_count(d->ctr, DC_UNCACHED_BYTES, ubytes);
	return rc;
}

/* ------------------------------------------------------------------- set-up */
int disk_split_init(struct disk *d)
{
	if (!eht_setting_bool(EHT_SET_DISK_SPLIT))
		return 0; /* every row copied from the mapping, as before the split */
	struct disk_split *s = calloc(1, sizeof(*s));
	if (!s)
		return eht_err(ENOMEM, "disk: out of memory");
	s->uring = eht_setting_enum(EHT_SET_DISK_URING) != EHT_SET_DISK_URING_OFF;
	s->uring_fail = eht_setting_bool(EHT_SET_TEST_DISK_URING_FAIL);
	atomic_init(&s->uring_broken, !EHT_HAVE_URING);
	s->page = (uint64_t)sysconf(_SC_PAGESIZE);
	while ((1ull << s->shift) < s->page)
		s->shift++;
	uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * s->page, lim = cgroup_limit();
	uint64_t budget = lim && lim < ram ? lim : ram;
	s->cap = eht_setting_is_set(EHT_SET_DISK_HINT_PAGES) ? eht_setting_u64(EHT_SET_DISK_HINT_PAGES)
							     : budget / 2 / s->page;
	if (!s->cap)
		s->cap = 1;
	for (unsigned k = 0; k < d->nparts; k++) {
		const struct disk_part *p = &d->part[k];
		/* Reads of uncached rows fetch their pages only: no readahead around random rows. */
		(void)posix_fadvise(p->fd, 0, 0, POSIX_FADV_RANDOM);
		uintptr_t a = (uintptr_t)p->data;
		s->part[k].base = a - a % s->page;
		uint64_t pages = (a - s->part[k].base + d->local_rows * p->row_bytes + s->page - 1) / s->page;
		s->part[k].nwords = (pages + 63) / 64;
		s->part[k].bits = calloc(s->part[k].nwords ? s->part[k].nwords : 1, sizeof(*s->part[k].bits));
		if (!s->part[k].bits) {
			d->split = s;
			disk_split_free(d);
			return eht_err(ENOMEM, "disk: out of memory for the residency hints of %" PRIu64 " pages", pages);
		}
	}
	d->split = s;
	eht_debug("disk table: split reads (%s for uncached rows), hints kept up to %" PRIu64 " pages",
		  s->uring && EHT_HAVE_URING ? "io_uring" : "pread", s->cap);
	return 0;
}

void disk_split_free(struct disk *d)
{
	struct disk_split *s = d->split;
	if (!s)
		return;
	for (unsigned k = 0; k < 2; k++)
		free(s->part[k].bits);
	free(s);
	d->split = NULL;
}

int disk_split_mode(const struct disk *d)
{
	const struct disk_split *s = d->split;
	return !s ? 0 : (s->uring && !atomic_load(&s->uring_broken)) ? 2 : 1;
}
