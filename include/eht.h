/* SPDX-License-Identifier: Apache-2.0 */
/* eht.h: Engram host tables: one shared copy of huge read-only embedding tables per node, looked up
 * from every GPU worker at close to the host-to-GPU link's speed. The one public header of libeht.
 *
 * Conventions:
 * - Every function that can fail returns 0 (or a count) on success and a negative errno on failure;
 *   eht_last_error() then holds a message naming the file, tensor, byte offset or limit involved.
 * - Handles are opaque. Options structs start with a `size` field (set it to sizeof the struct) so
 *   they can grow; unknown flag bits are -EINVAL. A NULL options pointer means all defaults.
 * - libeht has no link-time dependency on CUDA: the driver is loaded at run time, and every CPU path
 *   works on a machine without a GPU (the GPU paths then return -ENODEV).
 * - Environment: EHT_LOG=error|warn|info|debug|trace sets the log level (default warn);
 *   EHT_NO_CUDA=1 makes libeht behave as on a machine without a GPU.
 */
#ifndef EHT_H
#define EHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EHT_VERSION_MAJOR 0
#define EHT_VERSION_MINOR 1
#define EHT_VERSION_PATCH 0
#define EHT_VERSION "0.1.0"
#define EHT_VERSION_NUMBER (EHT_VERSION_MAJOR * 10000 + EHT_VERSION_MINOR * 100 + EHT_VERSION_PATCH)

/* The library's version string ("0.1.0"); compare with EHT_VERSION to catch header/library skew. */
const char *eht_version(void);

/* The message of the last failed eht_ call on this thread; "" when there was none. Never NULL. */
const char *eht_last_error(void);

/* Log levels for eht_log_set_level (EHT_LOG sets the initial one). */
enum { EHT_LOG_LEVEL_ERROR = 0, EHT_LOG_LEVEL_WARN, EHT_LOG_LEVEL_INFO, EHT_LOG_LEVEL_DEBUG, EHT_LOG_LEVEL_TRACE };
/* Sets the process-wide log level; out-of-range levels are ignored. */
void eht_log_set_level(int level);

/* Packed Engram rows: 256 FP8-e4m3 weights followed by 8 ue8m0 scale bytes (one per 32 weights). */
#define EHT_ENGRAM_DIM 256
#define EHT_ENGRAM_GROUP 32
#define EHT_ENGRAM_ROW_BYTES (EHT_ENGRAM_DIM + EHT_ENGRAM_DIM / EHT_ENGRAM_GROUP)

/* ======================================================================================== st == */
/* safetensors files and sharded checkpoints (src/st). */

/* ====================================================================================== table == */
/* A table: rows x row_bytes of read-only data in one tier, shared across a node's processes. */

typedef struct eht_table eht_table;

enum eht_tier {
	EHT_TIER_NONE = 0,
	EHT_TIER_HOST_NUMA = 1,     /* cuMem host-NUMA allocation, shared by exported handles */
	EHT_TIER_REGION_PINNED = 2, /* shared /dev/shm (or hugetlbfs) region, registered for DMA */
	EHT_TIER_REGION = 3,        /* shared region, not registered (CPU gathers only) */
	EHT_TIER_DISK = 4,          /* rows stay in the checkpoint's safetensors files */
	EHT_TIER_MEMORY = 5,        /* caller-owned process memory (eht_table_wrap) */
};

/* Name of a tier ("host-numa", "region-pinned", "region", "disk", "memory"), "none" otherwise. */
const char *eht_tier_name(int tier);

struct eht_table_info {
	uint32_t size;       /* sizeof(struct eht_table_info), set by the caller */
	int tier;            /* enum eht_tier */
	uint64_t rows;       /* rows in this table (for the disk tier: rows of the whole tensor) */
	uint64_t row_bytes;  /* bytes per row */
	uint64_t first_row;  /* first row this process holds (disk tier with ranks; else 0) */
	uint64_t local_rows; /* rows this process can read (ids outside are dead); rows when unsplit */
	void *host;          /* CPU address of row 0 (NULL for the disk tier) */
	uint64_t device_ptr; /* GPU address of row 0 for in-place GPU reads, 0 when not GPU-readable */
	int device;          /* CUDA device ordinal device_ptr belongs to, -1 when none */
	int numa_node;       /* NUMA node the memory sits on, -1 when unknown */
	uint64_t page_size;  /* page or granule size of the backing memory */
	const char *name;    /* table name (tensor or region name); valid while the table is open */
};

/* Fills *info (info->size must be set). Returns 0 or -EINVAL. */
int eht_table_get_info(const eht_table *table, struct eht_table_info *info);

/* Wraps caller-owned memory as a table of the memory tier. With device >= 0 the memory is
 * registered for DMA to that GPU (in chunks of at most 64 GiB) so GPU strategies can read it; if
 * registration fails, one warning is logged and the table stays CPU-only. The memory must outlive
 * the table. Returns 0, -EINVAL (NULL memory, zero row size, size overflow) or -ENOMEM. */
int eht_table_wrap(void *host, uint64_t rows, uint64_t row_bytes, int device, const char *name,
		   eht_table **out);

/* Releases this process's view of the table (unmaps, unpins, closes); NULL is a no-op. Returns 0
 * or the first error of the teardown steps, all of which are attempted. */
int eht_table_close(eht_table *table);

/* ===================================================================================== region == */
/* Shared host regions in /dev/shm (src/os). */
/* A region is a named file in a tmpfs (default /dev/shm) or hugetlbfs directory, created once per
 * node and mapped MAP_SHARED by every worker: one copy of a table, never leaked. The file is
 * "<dir>/eht.<name>": a header page (magic, version, sizes, row geometry, ready flag, creator
 * identity) followed by the data. Exactly one process creates it (O_EXCL); it fills the data and
 * calls eht_region_mark_ready(); the others wait in eht_region_open() until then. The creator holds
 * an OFD write lock while building and every user a read lock while mapped, so a creator that dies
 * before ready is detected by the lock (not by a pid), and `eht regions gc` never removes a region
 * in use. Environment: EHT_SHM_DIR (default directory), EHT_PIN_CHUNK (pin chunk size, default
 * 64G), EHT_REGION_SKIP_CAPACITY_CHECK=1 (skip the free-space check; allocation still fails cleanly
 * with -ENOSPC), EHT_REGION_GC_GRACE_S (age before gc removes a creator's temporary file, 30). */

typedef struct eht_region eht_region;

/* eht_region_opts.flags */
#define EHT_REGION_KEEP 0x0001u /* lifecycle: keep the file for later attach (eht_region_unlink or gc) */
#define EHT_REGION_UNLINK_WHEN_MAPPED 0x0002u /* lifecycle: unlink once expected_peers have mapped it */
#define EHT_REGION_OPEN_ONLY 0x0004u  /* never create: -ENOENT when the region does not exist */
#define EHT_REGION_NO_RECLAIM 0x0008u /* a region whose creator died before ready: -EOWNERDEAD
				       * instead of reclaiming it (unlink and create anew) */
#define EHT_REGION_THP 0x0010u        /* ask for transparent huge pages (MADV_HUGEPAGE); data 2 MiB aligned */
#define EHT_REGION_NUMA_NODE 0x0020u  /* bind the pages to opts.numa_node (mbind, before first touch) */
#define EHT_REGION_NUMA_DEVICE 0x0040u /* bind the pages to GPU opts.device's host NUMA node when the
					* driver knows it (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID), else local */
#define EHT_REGION_GROUP 0x0080u      /* mode 0660 and group opts.gid instead of 0600 */

struct eht_region_opts {
	uint32_t size;              /* sizeof(struct eht_region_opts) */
	uint32_t flags;             /* EHT_REGION_*: exactly one of KEEP and UNLINK_WHEN_MAPPED */
	const char *dir;            /* NULL: $EHT_SHM_DIR, else /dev/shm; a hugetlbfs mount works too */
	uint64_t rows, row_bytes;   /* geometry recorded by the creator and checked by openers; 0, 0:
				     * none asked (openers then accept any) */
	int numa_node;              /* with EHT_REGION_NUMA_NODE */
	int device;                 /* with EHT_REGION_NUMA_DEVICE */
	unsigned populate_threads;  /* creator's populate threads; 0: one per CPU, at most 32 */
	double timeout_s;           /* how long openers wait for ready; <= 0: 60 s */
	gid_t gid;                  /* with EHT_REGION_GROUP */
	unsigned expected_peers;    /* with UNLINK_WHEN_MAPPED: processes that map it, creator included */
};

/* Creates or opens the region `name` ([A-Za-z0-9._-], 1..200 chars, no "..", not starting with
 * '.') of `bytes` data bytes. Without a region of that name, this process creates it: capacity is
 * checked first (free space of the directory, free memory of the NUMA node), pages are bound to the
 * node, allocated and populated with several threads, and the caller must fill the data and call
 * eht_region_mark_ready(). Otherwise it waits (opts->timeout_s) until the creator marks it ready
 * and maps it. bytes 0 is allowed with EHT_REGION_OPEN_ONLY (any size). A region whose creator died
 * before ready is reclaimed (this process becomes the creator) unless EHT_REGION_NO_RECLAIM.
 * Returns 0, -EINVAL (bad name, flags or options; a region of another size or geometry than asked,
 * naming both; not an eht region), -ENOSPC (does not fit: names the size, the space free and the
 * fix), -ETIMEDOUT (not ready in time, naming the region and its creator), -ENOENT (OPEN_ONLY),
 * -EOWNERDEAD (NO_RECLAIM), -EACCES or another -errno from the file system. */
int eht_region_open(const char *name, uint64_t bytes, const struct eht_region_opts *opts,
		    eht_region **out);

/* Creator only: publishes the filled data; waiting openers proceed. Returns 0, -EINVAL (NULL, not
 * the creator) or -EALREADY. */
int eht_region_mark_ready(eht_region *region);

/* Registers the data for DMA and in-place reads by GPU `device` (chunks of at most 64 GiB; one
 * device pointer for the whole range). Every process pins its own mapping. Failure is one warning
 * and the region stays usable unpinned. Returns 0 (also when already pinned), -ENODEV (no driver or
 * GPU) or the driver's error. Unpinned on close. */
int eht_region_pin(eht_region *region, int device);

void *eht_region_data(const eht_region *region);      /* first data byte (NULL for NULL) */
uint64_t eht_region_bytes(const eht_region *region);  /* data bytes */
uint64_t eht_region_rows(const eht_region *region);   /* recorded geometry (0 when none) */
uint64_t eht_region_row_bytes(const eht_region *region);
bool eht_region_is_creator(const eht_region *region);
bool eht_region_is_ready(const eht_region *region);
bool eht_region_is_pinned(const eht_region *region);
uint64_t eht_region_device_ptr(const eht_region *region); /* 0 unless pinned */
int eht_region_device(const eht_region *region);          /* GPU it is pinned for, -1 when not */
int eht_region_numa_node(const eht_region *region);       /* node the pages are bound to, -1 unknown */
uint64_t eht_region_page_size(const eht_region *region);  /* backing page size (4 KiB, 2 MiB, ...) */
const char *eht_region_name(const eht_region *region);

/* Releases this process's view: unpins, removes a half-built region (creator before ready),
 * unmaps, closes (dropping the lock) and sets *region to NULL. Every step is attempted even when
 * one fails; each failure is logged and the first is returned. NULL or *NULL is a no-op, so a
 * second close is safe. */
int eht_region_close(eht_region **region);

/* Removes the name now (the memory lives until the last mapping goes). dir as in the options.
 * Returns 0, -EINVAL (bad name) or -ENOENT. */
int eht_region_unlink(const char *name, const char *dir);

enum eht_region_state {
	EHT_REGION_STATE_READY = 0,    /* ready and mapped by someone */
	EHT_REGION_STATE_IDLE = 1,     /* ready, mapped by nobody, kept for later attach */
	EHT_REGION_STATE_BUILDING = 2, /* the creator is filling it */
	EHT_REGION_STATE_STALE = 3,    /* the creator died before ready: gc removes it */
	EHT_REGION_STATE_ORPHANED = 4, /* unlink-when-mapped, but nobody maps it any more: gc removes it */
	EHT_REGION_STATE_INVALID = 5,  /* not a readable eht region header: gc removes it when unused */
	EHT_REGION_STATE_PARTIAL = 6,  /* a creator's temporary file ("." name); gc removes it when unused */
};
/* "ready", "idle", "building", "stale", "orphaned", "invalid", "partial". */
const char *eht_region_state_name(int state);

struct eht_region_entry {
	char name[256];          /* region name (for PARTIAL: the temporary file's name) */
	int state;               /* enum eht_region_state */
	uint64_t bytes;          /* data bytes (0 when unknown) */
	uint64_t file_bytes;     /* file size */
	uint64_t allocated;      /* bytes actually allocated (st_blocks) */
	uint64_t rows, row_bytes;
	uint64_t page_size;
	int numa_node;
	int creator_pid;         /* 0 when unknown */
	bool creator_alive;      /* the creator process (pid + start time, same boot) still runs */
	bool unlink_when_mapped;
	unsigned attached, expected_peers;
	uint32_t mode;           /* permission bits */
	uint32_t uid, gid;
	double age_s;            /* since creation */
};

/* Lists the regions of dir (NULL: as in the options) without taking any lock. *entries is
 * malloc'ed (free with eht_region_list_free). Returns the count (>= 0) or -errno. */
int eht_region_list(const char *dir, struct eht_region_entry **entries);
void eht_region_list_free(struct eht_region_entry *entries);

#define EHT_REGION_GC_DRY_RUN 0x1u
/* Removes stale, orphaned, invalid and partial regions of dir that nobody uses (checked by taking
 * the region's lock, so a region in use is never removed). report, when given, is called for each
 * region removed (or, with EHT_REGION_GC_DRY_RUN, that would be). Returns the count or -errno. */
int eht_region_gc(const char *dir, unsigned flags,
		  void (*report)(const struct eht_region_entry *entry, void *arg), void *arg);

/* ============================================================================== probe + group == */
/* Machine probes, node-local groups and host-NUMA sharing (src/cuda, src/group). */

/* ===================================================================================== lookup == */
/* Ids in, rows out (src/lookup). */

/* ======================================================================================= disk == */
/* The disk tier: rows stay in safetensors files (src/table). */

/* ====================================================================================== serve == */
/* Attaching to tables served by `eht serve` (src/serve). */

#ifdef __cplusplus
}
#endif
#endif
