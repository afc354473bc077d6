/* SPDX-License-Identifier: Apache-2.0 */
/* disk_impl.h: the disk tier's private state, shared by its files (open/read, guard, cache, prefetch). */
#ifndef EHT_TABLE_DISK_IMPL_H
#define EHT_TABLE_DISK_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "eht.h"
#include "table/table_impl.h"
#include "util/pool.h"

/* One tensor's row range: the part of each packed row it provides. */
struct disk_part {
	char path[4096];
	char tensor[256];
	eht_st_map *map;
	const uint8_t *data; /* row first_row in the mapping */
	int fd;
	uint64_t row_bytes;   /* bytes this tensor gives each packed row */
	uint64_t dst_off;     /* where in the packed row */
	uint64_t file_offset; /* file offset of row first_row */
	/* What open saw, to tell truncation, modification and replacement apart. */
	uint64_t size;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
};

/* Hot-row cache: direct-mapped, one try-lock per slot (tag word: 0 empty, row + 1, or LOCKED). */
struct disk_cache {
	uint64_t nslots; /* power of two, or 0 for no cache */
	_Atomic uint64_t *tag;
	uint8_t *data;
	uint64_t rb;
};
#define DISK_CACHE_LOCKED UINT64_MAX

/* Read counters, in shards a cache line each: every gather thread adds to them on every call, and
 * one shared line bounced between the lookup pool's threads cost more than a warm decode step's
 * copies of a chunk. eht_disk_stats sums the shards. */
enum { DC_ROWS_READ, DC_CACHE_HITS, DC_PREFETCH_HITS, DC_RESIDENT, DC_UNCACHED, DC_UNCACHED_BYTES, DC_N };
#define DISK_SHARDS 16u
struct disk_ctr_shard {
	_Alignas(64) _Atomic uint64_t v[DC_N];
};
/* Adds v to counter c in this thread's shard (no-op for 0). */
void disk_count(struct disk_ctr_shard *ctr, unsigned c, uint64_t v);
uint64_t disk_counter(const struct disk_ctr_shard *ctr, unsigned c);

enum { TK_FREE = 0, TK_FILLING, TK_QUEUED, TK_READING, TK_READY };

struct eht_disk_ticket {
	struct disk *d;
	unsigned slot;
	uint64_t seq;     /* FIFO order of prefetch calls */
	int state;        /* TK_*, under d->mu */
	unsigned users;   /* read_rows calls serving from it, under d->mu */
	int err;          /* first read error (0) */
	char errmsg[512];
	size_t nids;
	uint64_t *rows;   /* the ids' live absolute rows, then sorted and distinct (nu) */
	uint64_t *tmp;    /* sort scratch (prefetch_rows) */
	uint8_t *buf;     /* nu x rb */
	size_t nu;
};

struct disk {
	eht_table *t;
	char ckpt[4096]; /* the checkpoint as opened (resolved), for another process to open it too */
	unsigned flags;
	uint64_t rb, first_row, local_rows;
	unsigned nparts;
	struct disk_part part[2];
	struct disk_cache cache;
	struct disk_split *split; /* resident/uncached split of the default reads (disk_split.c), or NULL */
	uint64_t check_ns; /* fstat the files at most this often (EHT_DISK_CHECK_US, default 1000) */
	_Atomic uint64_t last_check_ns;
	struct disk_ctr_shard ctr[DISK_SHARDS];

	/* Prefetch: slots, a dispatcher thread and the reader pool. */
	uint64_t prefetch_rows;
	unsigned nslots;
	struct eht_disk_ticket *tk;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t dispatcher;
	bool started, stop; /* buffers, dispatcher and pool exist (made on the first prefetch) */
	bool closed;        /* the table is closed: tickets still out fail (-EBADF); the last release frees d */
	_Atomic unsigned active; /* tickets not FREE */
	uint64_t next_seq;
	unsigned io_threads;
	eht_pool *io_pool;
};

/* Reads absolute rows (in the local range) into dst, packed: cache, then the files (mapping under the
 * SIGBUS guard, or pread). Inserts what it read into the cache. Thread-safe. Returns 0 or -errno
 * with a message naming the file and offset. */
int disk_read_direct(struct disk *d, const uint64_t *rows, size_t n, uint8_t *dst);

#if EHT_HAVE_URING
#include <liburing.h>
/* Entries of a thread's ring: the reads one thread keeps in flight. */
#define DISK_RING_DEPTH 512u
/* This thread's ring (disk_ring.c: made on first use, freed at thread exit), or NULL with *rc set to
 * -errno and a message. */
struct io_uring *disk_ring_get(int *rc);
#endif

/* Reads rows miss[0..m) of every part into dst slots idx[0..m) with io_uring (this thread's ring,
 * up to DISK_RING_DEPTH reads in flight). Returns 0 or -errno naming the file and offset; -EOPNOTSUPP in a build
 * without liburing. */
int disk_read_uring(struct disk *d, const uint64_t *miss, const uint32_t *idx, size_t m, uint8_t *dst);
/* True when this build has liburing. */
bool disk_uring_available(void);

/* The default read (disk_split.c): rows whose pages are resident are copied from the mapping, the
 * others read with io_uring (pread where unavailable). Same contract as disk_read_uring. */
int disk_read_split(struct disk *d, const uint64_t *miss, const uint32_t *idx, size_t m, uint8_t *dst);
/* Sets d->split up after the parts are mapped (leaves it NULL under EHT_DISK_SPLIT=0). 0 or -ENOMEM. */
int disk_split_init(struct disk *d);
void disk_split_free(struct disk *d);
/* Forgets the residency hints (after the page cache was dropped). */
void disk_split_forget(struct disk *d);
/* Counters; mode 0 no split, 1 pread for uncached rows, 2 io_uring. */
int disk_split_mode(const struct disk *d);

/* Builds the message for a failed read of part p at file offset off (errno-style err): names the
 * file, tensor, row and offset and what changed about the file. Returns -err (or -ESTALE). */
int disk_read_error(struct disk *d, const struct disk_part *p, uint64_t row, uint64_t off, int err,
		    const char *what);

/* disk_copy.c, under the SIGBUS guard (os/mem_guard.h, installed at open). Copies rows[0..n) of one
 * mapping at base to dst (dst_stride apart), turning a SIGBUS into -EIO. Returns 0 or -EIO. */
int disk_guarded_copy_rows(const uint8_t *base, const uint64_t *rows, size_t n, uint64_t first_row,
			   uint64_t row_bytes, uint8_t *dst, uint64_t dst_stride, size_t *fault_index);
/* Copies rows[0..n) of every part into consecutive packed rows at dst (stride d->rb) in one pass,
 * turning a SIGBUS into -EIO with the row's index and part. Returns 0 or -EIO. */
int disk_guarded_copy_packed(const struct disk *d, const uint64_t *rows, size_t n, uint8_t *dst,
			     size_t *fault_index, unsigned *fault_part);

int disk_cache_init(struct disk_cache *c, uint64_t bytes, uint64_t rb);
void disk_cache_free(struct disk_cache *c);
void disk_cache_clear(struct disk_cache *c);
/* Copies row into dst when cached. */
bool disk_cache_get(struct disk_cache *c, uint64_t row, uint8_t *dst);
void disk_cache_put(struct disk_cache *c, uint64_t row, const uint8_t *src);

/* Prefetch: set-up at open and teardown at close (disk_prefetch.c). At close, tickets still out are
 * finished (reads in flight completed, queued ones dropped) and fail from then on with -EBADF; they
 * keep the slots and their lock, and with them d, until their release. fini returns true when d can
 * be freed at once, false when the last eht_disk_release frees it (the rest of d must be torn down). */
int disk_prefetch_init(struct disk *d);
bool disk_prefetch_fini(struct disk *d);
/* Serves rows from the oldest unreleased ticket (waiting for its reads): rows found are copied and
 * marked done in `done` (n flags). Returns the number served. */
size_t disk_prefetch_serve(struct disk *d, const uint64_t *rows, size_t n, uint8_t *dst, uint8_t *done);

/* The disk state behind a table, or NULL when it is not a disk table. */
struct disk *disk_from_table(eht_table *t);

#endif
