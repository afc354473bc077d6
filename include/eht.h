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
/* safetensors files and sharded checkpoints (src/st).
 *
 * A file is mapped read-only and its header validated in full before eht_st_open returns: every
 * rule of the format and of the reference (Rust) reader is enforced, each failure returning
 * -EINVAL (-EFBIG for a header length over 100,000,000 bytes, -EOVERFLOW for element, bit or
 * byte counts that overflow 64 bits and for integers jansson cannot hold) with a message naming
 * the file, the tensor and the rule. Views returned by these functions stay valid until the file
 * or checkpoint they came from is closed. Handles do not change after open: any number of threads
 * may query one at once (closing it must wait for them). A file truncated by someone else while
 * mapped raises SIGBUS on access, as with any mapping. */

typedef struct eht_st_file eht_st_file; /* one safetensors file (or image in memory) */
typedef struct eht_ckpt eht_ckpt;       /* a checkpoint: one file, or a directory of shards */
typedef struct eht_st_map eht_st_map;   /* a mapped row range of one tensor */

/* The 22 safetensors dtypes, in the order of the reference implementation's enum (the writer
 * sorts tensors by it, as the reference writer does). */
enum eht_dtype {
	EHT_DTYPE_INVALID = 0,
	EHT_DTYPE_BOOL,
	EHT_DTYPE_F4,      /* 4 bits */
	EHT_DTYPE_F6_E2M3, /* 6 bits */
	EHT_DTYPE_F6_E3M2, /* 6 bits */
	EHT_DTYPE_U8,
	EHT_DTYPE_I8,
	EHT_DTYPE_F8_E5M2,
	EHT_DTYPE_F8_E4M3,
	EHT_DTYPE_F8_E8M0,
	EHT_DTYPE_F8_E4M3FNUZ,
	EHT_DTYPE_F8_E5M2FNUZ,
	EHT_DTYPE_I16,
	EHT_DTYPE_U16,
	EHT_DTYPE_F16,
	EHT_DTYPE_BF16,
	EHT_DTYPE_I32,
	EHT_DTYPE_U32,
	EHT_DTYPE_F32,
	EHT_DTYPE_C64,
	EHT_DTYPE_F64,
	EHT_DTYPE_I64,
	EHT_DTYPE_U64,
	EHT_DTYPE_COUNT
};

/* Name of a dtype as written in headers ("F8_E4M3"), or NULL for a value outside the enum. */
const char *eht_dtype_name(int dtype);
/* The dtype named (exact, case-sensitive), or -EINVAL. */
int eht_dtype_from_name(const char *name);
/* Bits per element (4, 6, 8, 16, 32 or 64), or -EINVAL for a value outside the enum. */
int eht_dtype_bits(int dtype);

/* One tensor. Pointers stay valid while the file or checkpoint is open. */
struct eht_st_tensor_info {
	uint32_t size;         /* sizeof(struct eht_st_tensor_info), set by the caller */
	uint32_t ndim;         /* 0 for a scalar */
	const char *name;
	int dtype;             /* enum eht_dtype */
	const uint64_t *shape; /* ndim dimensions */
	uint64_t elements;     /* product of the shape (1 for a scalar) */
	uint64_t nbytes;       /* elements x bits / 8 */
	uint64_t data_begin;   /* data_offsets as in the header: relative to the data area */
	uint64_t data_end;
	uint64_t file_offset;  /* absolute offset of the first data byte in the file */
	uint64_t alignment;    /* largest power of two dividing file_offset, at most 4096 */
	bool misaligned;       /* file_offset is not a multiple of the element size (dtypes of 8
				* bits or more): third-party writers do not promise alignment;
				* callers that need aligned elements copy */
	const void *data;      /* read-only view of the nbytes bytes */
	const char *path;      /* file holding the tensor ("<memory>" for eht_st_open_memory) */
	uint32_t file_index;   /* index of that file in its checkpoint (0 for a lone file) */
};

/* Opens and validates a safetensors file, mapped read-only (MAP_SHARED, PROT_READ). flags must be
 * 0. Returns 0, -EINVAL (a rule of the format, not a regular file; the message names the file,
 * tensor and rule), -EFBIG, -EOVERFLOW, -ENOMEM, or -errno of open/fstat/mmap. */
int eht_st_open(const char *path, uint32_t flags, eht_st_file **out);
/* Validates a whole file image held in memory (same rules as eht_st_open); views point into buf,
 * which must outlive the handle. Returns as eht_st_open. */
int eht_st_open_memory(const void *buf, size_t len, uint32_t flags, eht_st_file **out);
/* Unmaps and frees; NULL is a no-op. Returns 0 or -errno of munmap. */
int eht_st_close(eht_st_file *file);
/* Number of tensors (0 for NULL). */
size_t eht_st_count(const eht_st_file *file);
/* Tensor `index` in file order (sorted by data offset). Returns 0 or -EINVAL (bad index, info
 * NULL or info->size 0); fills at most info->size bytes. */
int eht_st_tensor(const eht_st_file *file, size_t index, struct eht_st_tensor_info *info);
/* Tensor by name. Returns 0, -ENOENT (no such tensor) or -EINVAL. */
int eht_st_find(const eht_st_file *file, const char *name, struct eht_st_tensor_info *info);
/* `__metadata__`: number of entries, entry `index` (keys in header order), value by key (NULL
 * when absent). eht_st_metadata_at returns 0 or -EINVAL. */
size_t eht_st_metadata_count(const eht_st_file *file);
int eht_st_metadata_at(const eht_st_file *file, size_t index, const char **key, const char **value);
const char *eht_st_metadata_get(const eht_st_file *file, const char *key);
/* The file's path ("<memory>" for images), total size, and the offset where the data area starts
 * (8 + header length). */
const char *eht_st_path(const eht_st_file *file);
uint64_t eht_st_file_size(const eht_st_file *file);
uint64_t eht_st_data_start(const eht_st_file *file);

/* Checkpoints. PATH is a .safetensors file; or a directory holding model.safetensors.index.json
 * ("weight_map" required: tensor name -> shard file name in the same directory, names with '/'
 * or ".." rejected; "metadata" informational; every listed tensor must be in its shard; tensors
 * of a shard that the map does not list are left out with a warning); or a directory of
 * *.safetensors files (all of them, in name order). Tensor names must be unique over the
 * checkpoint. */
enum eht_ckpt_kind { EHT_CKPT_FILE = 1, EHT_CKPT_INDEX = 2, EHT_CKPT_DIR = 3 };
/* Opens a checkpoint; flags must be 0. Returns 0, -ENOENT (no such path, shard missing, directory
 * without safetensors files, listed tensor missing from its shard), -EINVAL (bad index or a rule
 * of the format; duplicate tensor names over shards), or the errors of eht_st_open. */
int eht_ckpt_open(const char *path, uint32_t flags, eht_ckpt **out);
/* Closes every file; NULL is a no-op. Returns 0 or the first error. */
int eht_ckpt_close(eht_ckpt *ckpt);
/* enum eht_ckpt_kind, the path given to eht_ckpt_open, and the number of files. */
int eht_ckpt_kind(const eht_ckpt *ckpt);
const char *eht_ckpt_path(const eht_ckpt *ckpt);
size_t eht_ckpt_file_count(const eht_ckpt *ckpt);
/* File `index` (shards in name order), or NULL. */
const eht_st_file *eht_ckpt_file(const eht_ckpt *ckpt, size_t index);
/* Number of tensors over all files; tensor `index` (files in order, then by offset); tensor by
 * name. Return 0, -EINVAL (bad index/arguments) or -ENOENT (eht_ckpt_find: no such tensor). */
size_t eht_ckpt_count(const eht_ckpt *ckpt);
int eht_ckpt_tensor(const eht_ckpt *ckpt, size_t index, struct eht_st_tensor_info *info);
int eht_ckpt_find(const eht_ckpt *ckpt, const char *name, struct eht_st_tensor_info *info);

/* Row ranges for tensor parallelism. Rows of a [rows, cols] tensor are split into nranks
 * contiguous ranges: every rank gets rows / nranks rows, and the first rows % nranks ranks get one
 * more; rank r starts at r * (rows / nranks) + min(r, rows % nranks). Ranks past the rows (when
 * rows < nranks) get count 0. Returns 0 or -EINVAL (nranks 0, rank >= nranks, NULL outputs). */
int eht_rows_split(uint64_t rows, uint32_t rank, uint32_t nranks, uint64_t *first_row, uint64_t *count);

/* A rank's rows of one 2-D tensor, as file offsets (what the disk tier preads). */
struct eht_st_rows {
	uint32_t size;        /* sizeof(struct eht_st_rows), set by the caller */
	uint32_t rank, nranks;
	uint64_t rows;        /* rows of the whole tensor */
	uint64_t row_bytes;   /* cols x bits / 8 */
	uint64_t first_row;   /* first row of this rank */
	uint64_t count;       /* rows of this rank */
	uint64_t file_offset; /* absolute file offset of row first_row */
	uint64_t nbytes;      /* count x row_bytes */
	const char *path;     /* file to pread or map (from the tensor info: valid while it is open) */
	const char *name;     /* tensor name */
};
/* Fills *out with rank's rows of tensor t. Returns 0 or -EINVAL (not 2-D, a row that is not a
 * whole number of bytes, bad rank, out->size 0). */
int eht_st_rows(const struct eht_st_tensor_info *t, uint32_t rank, uint32_t nranks, struct eht_st_rows *out);
/* Maps the rows read-only (MAP_SHARED, PROT_READ, MADV_RANDOM): the mapping starts at the page
 * holding file_offset; eht_st_map_data points at row first_row inside it. flags must be 0.
 * Returns 0, -EINVAL (bad arguments, the range not inside the file), or -errno of open/mmap. A
 * range of 0 rows maps nothing (data NULL, 0 bytes). */
int eht_st_map_rows(const struct eht_st_rows *rows, uint32_t flags, eht_st_map **out);
/* Row first_row (NULL for an empty range), its byte count, and the read-only fd the mapping came
 * from (owned by the map: for pread; closed by eht_st_unmap). */
const void *eht_st_map_data(const eht_st_map *map);
uint64_t eht_st_map_bytes(const eht_st_map *map);
int eht_st_map_fd(const eht_st_map *map);
/* Unmaps and closes; NULL is a no-op. Returns 0 or the first -errno of munmap/close. */
int eht_st_unmap(eht_st_map *map);

/* Writer. Tensors are laid out as the reference writer does: sorted by dtype (descending, enum
 * order above) then name; the header is compact JSON ("__metadata__" first, keys sorted), padded
 * with spaces to a multiple of 8 bytes; data tiled in that order. */
struct eht_st_write_tensor {
	const char *name;      /* valid UTF-8, unique, not "__metadata__" */
	int dtype;             /* enum eht_dtype */
	uint32_t ndim;
	const uint64_t *shape;
	const void *data;      /* the tensor's bytes; or NULL and fill set */
	/* Produces the bytes [offset, offset + len) of the tensor into buf, called in increasing
	 * order; returns 0 or a negative errno (which aborts the write). */
	int (*fill)(void *ctx, uint64_t offset, void *buf, size_t len);
	void *ctx;
};
/* Writes a safetensors file at path (through path.tmp and a rename). metadata: NULL, or key,
 * value, key, value, ..., NULL (valid UTF-8 strings). flags must be 0. Returns 0, -EINVAL (bad
 * dtype, shape, name, duplicate name, data and fill both NULL, a bit count not a multiple of 8),
 * -EOVERFLOW, -ENOMEM, the error of a fill callback, or -errno of the file calls. */
int eht_st_write(const char *path, const struct eht_st_write_tensor *tensors, size_t n,
		 const char *const *metadata, uint32_t flags);

/* A small synthetic Engram-shaped checkpoint, deterministic from the seed. Table i (0-based) is
 * layer L = 1 + 13 i: "model.layers.<L>.engram.embedding.weight" F8_E4M3 [rows, 256] (random
 * e4m3 bytes, never the NaN patterns 0x7f/0xff) and "model.layers.<L>.engram.embedding.scale"
 * F8_E8M0 [rows, 8] (exponents 120..134), plus "model.layers.0.attn.dummy" BF16 [64, 64]. With
 * shards == 1: DIR/model.safetensors; else DIR/model-0000k-of-0000S.safetensors with the tensors
 * dealt round-robin in name order and DIR/model.safetensors.index.json. DIR is created if needed;
 * files of an earlier run are replaced. */
struct eht_synth_opts {
	uint32_t size;   /* sizeof(struct eht_synth_opts) */
	uint32_t flags;  /* 0 */
	uint32_t tables; /* Engram tables (default 2 when 0) */
	uint32_t shards; /* files (default 1 when 0); at most tables * 2 + 1 */
	uint64_t rows;   /* rows per table (default 5000 when 0) */
	uint64_t seed;   /* any value; the same seed gives the same bytes */
};
#define EHT_SYNTH_DEFAULT_TABLES 2
#define EHT_SYNTH_DEFAULT_ROWS 5000
/* Returns 0, -EINVAL (unknown flags, too many shards, opts->size too small) or the errors of
 * eht_st_write and mkdir. opts NULL: the defaults with seed 0. */
int eht_synth_checkpoint(const char *dir, const struct eht_synth_opts *opts);
/* Layer number of synthetic table i (1 + 13 i). */
uint32_t eht_synth_layer(uint32_t table);


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
