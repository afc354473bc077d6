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
