/* SPDX-License-Identifier: Apache-2.0 */
/* eht.h: Engram host tables: one shared copy of huge read-only embedding tables per node, looked up
 * from every GPU worker at close to the host-to-GPU link's speed. The one public header of libeht.
 *
 * Conventions:
 * - Every function that can fail returns 0 (or a count) on success and a negative errno on failure;
 *   eht_last_error() then holds a message naming the file, tensor, byte offset or limit involved.
 * - Handles are opaque. Options structs start with a `size` field (set it to sizeof the struct) so
 *   they can grow; unknown flag bits are -EINVAL. A NULL options pointer means all defaults.
 *   Compatibility both ways: a smaller size (a program built against an older eht.h) is accepted,
 *   the fields it lacks taking their defaults; a larger size (a newer eht.h) is accepted when every
 *   byte past the fields this library knows is zero, else the call returns -E2BIG naming the byte;
 *   a size below 4 (not set) is -EINVAL. Output structs (infos, stats) are filled up to the
 *   caller's size, and bytes past what this library knows are zeroed.
 * - Exported functions are declared EHT_API (libeht.so exports nothing else, with symbol versions);
 *   results that report failures are EHT_MUST_CHECK (warn_unused_result).
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

/* EHT_API marks the exported functions: libeht is built with -fvisibility=hidden, so a function
 * declared here without it is not in the library (tests/test_abi_exports.py names it). Its symbols
 * carry the version node of src/eht.map. EHT_MUST_CHECK: a result that reports a failure
 * (0 / -errno) must be looked at; teardown calls (close, stop, detach, ...) are left unmarked. */
#if defined(__GNUC__) || defined(__clang__)
#define EHT_API __attribute__((visibility("default")))
#define EHT_MUST_CHECK __attribute__((warn_unused_result))
#else
#define EHT_API
#define EHT_MUST_CHECK
#endif

#define EHT_VERSION_MAJOR 0
#define EHT_VERSION_MINOR 1
#define EHT_VERSION_PATCH 0
#define EHT_VERSION "0.1.0"
#define EHT_VERSION_NUMBER (EHT_VERSION_MAJOR * 10000 + EHT_VERSION_MINOR * 100 + EHT_VERSION_PATCH)

/* The library's version string ("0.1.0"); compare with EHT_VERSION to catch header/library skew. */
EHT_API const char *eht_version(void);

/* The message of the last failed eht_ call on this thread; "" when there was none. Never NULL. */
EHT_API const char *eht_last_error(void);

/* Log levels for eht_log_set_level (EHT_LOG sets the initial one). */
enum { EHT_LOG_LEVEL_ERROR = 0, EHT_LOG_LEVEL_WARN, EHT_LOG_LEVEL_INFO, EHT_LOG_LEVEL_DEBUG, EHT_LOG_LEVEL_TRACE };
/* Sets the process-wide log level; out-of-range levels are ignored. */
EHT_API void eht_log_set_level(int level);
/* Where log lines go: fn(level, message, arg) for every line the level lets through, from whichever
 * thread logs (message without the "eht: LEVEL: " prefix; valid during the call only); NULL: stderr
 * again (the default). The Python module sends them to its `logging` logger "eht". */
typedef void (*eht_log_fn)(int level, const char *message, void *arg);
EHT_API void eht_log_set_callback(eht_log_fn fn, void *arg);
/* libeht reads its EHT_* environment settings (docs/ENVIRONMENT.md) once, at its first use. This
 * reads them again, for a test or a benchmark that changes one in a running process; what was made
 * before keeps what it read (an engine its threads and SM cap, a table its tier), what is made after
 * gets the new values. A malformed or out-of-bounds value gets one warning and its default.
 * Returns 0 or -ENOMEM. */
EHT_API int eht_settings_reload(void);

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
EHT_API const char *eht_dtype_name(int dtype);
/* The dtype named (exact, case-sensitive), or -EINVAL. */
EHT_API int eht_dtype_from_name(const char *name);
/* Bits per element (4, 6, 8, 16, 32 or 64), or -EINVAL for a value outside the enum. */
EHT_API int eht_dtype_bits(int dtype);

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
EHT_API EHT_MUST_CHECK int eht_st_open(const char *path, uint32_t flags, eht_st_file **out);
/* Validates a whole file image held in memory (same rules as eht_st_open); views point into buf,
 * which must outlive the handle. Returns as eht_st_open. */
EHT_API EHT_MUST_CHECK int eht_st_open_memory(const void *buf, size_t len, uint32_t flags, eht_st_file **out);
/* Unmaps and frees; NULL is a no-op. Returns 0 or -errno of munmap. */
EHT_API int eht_st_close(eht_st_file *file);
/* Number of tensors (0 for NULL). */
EHT_API size_t eht_st_count(const eht_st_file *file);
/* Tensor `index` in file order (sorted by data offset). Returns 0 or -EINVAL (bad index, info
 * NULL or info->size 0); fills at most info->size bytes. */
EHT_API EHT_MUST_CHECK int eht_st_tensor(const eht_st_file *file, size_t index,
		struct eht_st_tensor_info *info);
/* Tensor by name. Returns 0, -ENOENT (no such tensor) or -EINVAL. */
EHT_API EHT_MUST_CHECK int eht_st_find(const eht_st_file *file, const char *name,
		struct eht_st_tensor_info *info);
/* `__metadata__`: number of entries, entry `index` (keys in header order), value by key (NULL
 * when absent). eht_st_metadata_at returns 0 or -EINVAL. */
EHT_API size_t eht_st_metadata_count(const eht_st_file *file);
EHT_API EHT_MUST_CHECK int eht_st_metadata_at(const eht_st_file *file, size_t index, const char **key,
		const char **value);
EHT_API const char *eht_st_metadata_get(const eht_st_file *file, const char *key);
/* The file's path ("<memory>" for images), total size, and the offset where the data area starts
 * (8 + header length). */
EHT_API const char *eht_st_path(const eht_st_file *file);
EHT_API uint64_t eht_st_file_size(const eht_st_file *file);
EHT_API uint64_t eht_st_data_start(const eht_st_file *file);

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
EHT_API EHT_MUST_CHECK int eht_ckpt_open(const char *path, uint32_t flags, eht_ckpt **out);
/* Closes every file; NULL is a no-op. Returns 0 or the first error. */
EHT_API int eht_ckpt_close(eht_ckpt *ckpt);
/* enum eht_ckpt_kind, the path given to eht_ckpt_open, and the number of files. */
EHT_API int eht_ckpt_kind(const eht_ckpt *ckpt);
EHT_API const char *eht_ckpt_path(const eht_ckpt *ckpt);
EHT_API size_t eht_ckpt_file_count(const eht_ckpt *ckpt);
/* File `index` (shards in name order), or NULL. */
EHT_API const eht_st_file *eht_ckpt_file(const eht_ckpt *ckpt, size_t index);
/* Number of tensors over all files; tensor `index` (files in order, then by offset); tensor by
 * name. Return 0, -EINVAL (bad index/arguments) or -ENOENT (eht_ckpt_find: no such tensor). */
EHT_API size_t eht_ckpt_count(const eht_ckpt *ckpt);
EHT_API EHT_MUST_CHECK int eht_ckpt_tensor(const eht_ckpt *ckpt, size_t index,
		struct eht_st_tensor_info *info);
EHT_API EHT_MUST_CHECK int eht_ckpt_find(const eht_ckpt *ckpt, const char *name,
		struct eht_st_tensor_info *info);

/* Row ranges for tensor parallelism. Rows of a [rows, cols] tensor are split into nranks
 * contiguous ranges: every rank gets rows / nranks rows, and the first rows % nranks ranks get one
 * more; rank r starts at r * (rows / nranks) + min(r, rows % nranks). Ranks past the rows (when
 * rows < nranks) get count 0. Returns 0 or -EINVAL (nranks 0, rank >= nranks, NULL outputs). */
EHT_API EHT_MUST_CHECK int eht_rows_split(uint64_t rows, uint32_t rank, uint32_t nranks,
		uint64_t *first_row, uint64_t *count);

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
EHT_API EHT_MUST_CHECK int eht_st_rows(const struct eht_st_tensor_info *t, uint32_t rank,
		uint32_t nranks, struct eht_st_rows *out);
/* The same for an explicit range [first_row, first_row + count) (e.g. an Engram head range of a
 * tensor-parallel rank, eht_engram_shard); rank 0 of 1 in the result. -EINVAL when it is not inside
 * the tensor. */
EHT_API EHT_MUST_CHECK int eht_st_rows_range(const struct eht_st_tensor_info *t, uint64_t first_row,
		uint64_t count, struct eht_st_rows *out);
/* Maps the rows read-only (MAP_SHARED, PROT_READ, MADV_RANDOM): the mapping starts at the page
 * holding file_offset; eht_st_map_data points at row first_row inside it. flags must be 0.
 * Returns 0, -EINVAL (bad arguments, the range not inside the file), or -errno of open/mmap. A
 * range of 0 rows maps nothing (data NULL, 0 bytes). */
EHT_API EHT_MUST_CHECK int eht_st_map_rows(const struct eht_st_rows *rows, uint32_t flags, eht_st_map **out);
/* Row first_row (NULL for an empty range), its byte count, and the read-only fd the mapping came
 * from (owned by the map: for pread; closed by eht_st_unmap). */
EHT_API const void *eht_st_map_data(const eht_st_map *map);
EHT_API uint64_t eht_st_map_bytes(const eht_st_map *map);
EHT_API int eht_st_map_fd(const eht_st_map *map);
/* Unmaps and closes; NULL is a no-op. Returns 0 or the first -errno of munmap/close. */
EHT_API int eht_st_unmap(eht_st_map *map);

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
EHT_API EHT_MUST_CHECK int eht_st_write(const char *path, const struct eht_st_write_tensor *tensors, size_t n,
		 const char *const *metadata, uint32_t flags);

/* A small synthetic Engram-shaped checkpoint, deterministic from the seed, named as DeepSeek-V4.1's.
 * Table i (0-based) is layer L = 1 + 13 i: "layers.<L>.engram.embed.weight" F8_E4M3 [rows, 256]
 * (random e4m3 bytes, never the NaN patterns 0x7f/0xff) and "layers.<L>.engram.embed.scale"
 * F8_E8M0 [rows, 8] (exponents 120..134), plus "layers.0.attn.dummy" BF16 [64, 64]. With
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
	/* NULL, or `tables` row counts (each >= 1), one per table, overriding rows (e.g. an Engram
	 * layout's per-layer rows: eht_engram_layout_rows). */
	const uint64_t *table_rows;
};
#define EHT_SYNTH_DEFAULT_TABLES 2
#define EHT_SYNTH_DEFAULT_ROWS 5000
/* Returns 0, -EINVAL (unknown flags, too many shards, opts->size too small) or the errors of
 * eht_st_write and mkdir. opts NULL: the defaults with seed 0. */
EHT_API EHT_MUST_CHECK int eht_synth_checkpoint(const char *dir, const struct eht_synth_opts *opts);
/* Layer number of synthetic table i (1 + 13 i). */
EHT_API uint32_t eht_synth_layer(uint32_t table);


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
EHT_API const char *eht_tier_name(int tier);
/* The tiers this library has: values 1 .. eht_tier_count() (enum eht_tier), each named by
 * eht_tier_name (the names `eht serve --tier`, the benches, Python and the completion take; src/table/
 * tiers.c is their one list). eht_tier_by_name: the value of a name, or -EINVAL (NULL or unknown: the
 * message lists them). eht_tier_caps: what makes a tier (EHT_TIER_CAP_*), 0 for a value that is none. */
EHT_API int eht_tier_count(void);
EHT_API EHT_MUST_CHECK int eht_tier_by_name(const char *name);
EHT_API unsigned eht_tier_caps(int tier);
#define EHT_TIER_CAP_SHARE 0x1u    /* eht_table_share makes it (eht_share_opts.tier, eht serve --tier) */
#define EHT_TIER_CAP_IN_PLACE 0x2u /* eht serve opens a checkpoint in it where its rows lie (--tier) */
#define EHT_TIER_CAP_WRAP 0x4u     /* eht_table_wrap makes it of the caller's memory */

struct eht_table_info {
	uint32_t size;       /* sizeof(struct eht_table_info), set by the caller */
	int tier;            /* enum eht_tier */
	uint64_t rows;       /* rows in this table (for the disk tier: rows of the whole tensor) */
	uint64_t row_bytes;  /* bytes per row */
	uint64_t first_row;  /* first row this process holds (disk tier with ranks; else 0) */
	uint64_t local_rows; /* rows this process can read (ids outside are dead); rows when unsplit */
	void *host;          /* CPU address of row 0 (NULL for the disk tier and split tables) */
	uint64_t device_ptr; /* GPU address of row 0 for in-place GPU reads, 0 when not GPU-readable (and
			      * for a split table, whose two arrays the GPU reads: eht_table_wrap_split2) */
	int device;          /* CUDA device ordinal device_ptr belongs to, -1 when none */
	int numa_node;       /* NUMA node the memory sits on, -1 when unknown */
	uint64_t page_size;  /* page or granule size of the backing memory */
	const char *name;    /* table name (tensor or region name); valid while the table is open */
};

/* Fills *info (info->size must be set). Returns 0 or -EINVAL. */
EHT_API EHT_MUST_CHECK int eht_table_get_info(const eht_table *table, struct eht_table_info *info);

/* The CPU page size this process maps the table's rows with, as the kernel reports it now
 * (/proc/self/smaps over the rows' range): the hugetlb page size, 2 MiB when at least half of the
 * resident rows are on transparent huge pages, else the base page size. The disk tier: the page
 * size of the page cache its reads go through. Rows not touched yet in this process: the page size
 * of their mapping. 0: unknown (NULL table, nothing resident of a mapping THP may still make huge,
 * or a driver mapping smaps cannot see into). CPU gathers (HOST, AUTO) run about twice as fast on 2 MiB
 * pages as on 4 KiB. Reads smaps: for reports, not for every step. */
EHT_API uint64_t eht_table_page_size(const eht_table *table);

/* Wraps caller-owned memory as a table of the memory tier. With device >= 0 the memory is
 * registered for DMA to that GPU (in chunks of at most 64 GiB) so GPU strategies can read it
 * (read-only where the process can only read it, such as a PROT_READ mmap of a file); if
 * registration fails, one warning is logged and the table stays CPU-only. The memory must outlive
 * the table. Returns 0, -EINVAL (NULL memory, zero row size, size overflow) or -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_table_wrap(void *host, uint64_t rows, uint64_t row_bytes, int device,
		const char *name,
		   eht_table **out);

/* Wraps an engine's own storage in the split layout (vLLM's: weights [rows, weight_bytes] then
 * scales [rows, scale_bytes], one allocation or two; its /dev/shm mapping, THP memory or host-NUMA
 * cuMem mapping) as a table of the memory tier with rows of weight_bytes + scale_bytes, without a copy
 * or a re-layout: row r reads as weights[r] followed by scales[r]. This call makes a CPU-only table:
 * the CPU strategy (HOST; AUTO, which runs as HOST on it) gathers its rows into packed staging, both
 * ways of an engram layer included. eht_table_wrap_split2 with a device makes one the GPU's in-place
 * strategies serve too. The memory must outlive the table. Returns 0, -EINVAL (NULL pointers, zero
 * sizes, overlapping arrays), -EOVERFLOW, -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_table_wrap_split(const void *weights, uint64_t weight_bytes, const void *scales,
						uint64_t scale_bytes, uint64_t rows, const char *name, eht_table **out);

/* eht_wrap_split_opts.flags */
#define EHT_WRAP_SPLIT_CPU_FALLBACK 0x1u /* arrays the GPU cannot read: one warning and a CPU-only table
					  * (as eht_table_wrap does) instead of the error */
#define EHT_WRAP_SPLIT_FLAGS EHT_WRAP_SPLIT_CPU_FALLBACK

struct eht_wrap_split_opts {
	uint32_t size;    /* sizeof(struct eht_wrap_split_opts), set by the caller */
	uint32_t flags;   /* EHT_WRAP_SPLIT_* */
	int device;       /* GPU ordinal that reads both arrays in place; -1: none (the CPU only) */
	const char *name; /* table name (NULL: "memory-split") */
};

/* eht_table_wrap_split with options. With opts->device >= 0 both arrays become readable in place by
 * that GPU, so every strategy serves the table (DIRECT, SORTED, AUTO's GPU share, the hot set's
 * distinct rows; raw and bf16 rows bit for bit those of the packed table of the same rows): memory
 * the engine has GPU-mapped already (cuMemHostAlloc, cudaHostRegister, a cuMem host-NUMA mapping
 * that GPU may read, as vLLM's storages are) is read at its device address as it is; other memory is
 * registered for DMA (pinned, read-only where the process can only read it; one range where both
 * arrays share a page) until the table is closed. eht_table_info then has device set and device_ptr 0 (there are no packed rows to point at). bf16
 * in place needs weight_bytes 256, scale_bytes 8 and both arrays 8-byte aligned (else the engine
 * reads such a table with HOST). opts NULL: defaults (CPU only). Returns 0; -EINVAL (NULL out,
 * weights or scales, zero sizes, overlapping arrays, unknown flags, device below -1, opts->size
 * below 4), -E2BIG (opts from a newer eht.h with fields this library does not know), -EOVERFLOW,
 * -ENOMEM, -ENAMETOOLONG; without EHT_WRAP_SPLIT_CPU_FALLBACK, -ENODEV (no driver or no such GPU),
 * -EEXIST (part of an array registered already, not all of it) or the driver's error, each with a
 * message naming the table and the array. */
EHT_API EHT_MUST_CHECK int eht_table_wrap_split2(const void *weights, uint64_t weight_bytes, const void *scales,
						 uint64_t scale_bytes, uint64_t rows,
						 const struct eht_wrap_split_opts *opts, eht_table **out);

/* Releases this process's view of the table (unmaps, unpins, closes); NULL is a no-op. Returns 0
 * or the first error of the teardown steps, all of which are attempted. */
EHT_API int eht_table_close(eht_table *table);

/* The hot set a served table came with (`eht serve --hotset`, eht_serve_opts.hotsets): *rows
 * (absolute row ids, most useful first, distinct, each inside [0, info.rows); owned by the table,
 * valid until it is closed) and *n. The attach checked them against the descriptor they arrived in.
 * An engine on a GPU takes them by default (eht_lookup_opts.hotset; a disk table split over ranks:
 * only the rows inside [first_row, first_row + local_rows)). Returns 0; -ENOENT (the table has none: not
 * served, or served without one; *rows NULL, *n 0); -EINVAL (NULL argument). */
EHT_API EHT_MUST_CHECK int eht_table_hotset(const eht_table *table, const int64_t **rows, uint64_t *n);
/* Hot-set files (`eht hotset build` writes them, `eht serve --hotset` and engines read them): a
 * safetensors file with one I64 tensor "hotset" [count] of absolute row ids, most useful first
 * (metadata format=eht-hotset-1), which numpy, torch and the safetensors library read. Read also:
 * the first format, "EHTHOT1\n", a uint64 count, then count int64 row ids (little-endian).
 * eht_hotset_read: *rows (malloc'ed: free with eht_hotset_free) and *n; returns 0, -EINVAL (not a
 * hot-set file, a size not matching the count, a negative row, empty, a header counting more than
 * 2^31 - 1 entries: checked before anything is read or allocated), -ENOMEM, -errno of open/read.
 * `eht serve --hotset` checks the count against its table's rows the same way, first.
 * eht_hotset_write: 0, -EINVAL (no rows) or -errno. */
EHT_API EHT_MUST_CHECK int eht_hotset_read(const char *path, int64_t **rows, uint64_t *n);
EHT_API EHT_MUST_CHECK int eht_hotset_write(const char *path, const int64_t *rows, uint64_t n);
EHT_API void eht_hotset_free(int64_t *rows);

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
 * 64G), EHT_TEST_REGION_SKIP_CAPACITY_CHECK=1 (skip the free-space check; allocation still fails cleanly
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
#define EHT_REGION_GROUP 0x0080u      /* mode 0660 and group opts.gid instead of 0600 (openers then
				       * also trust a file of group opts.gid that another uid owns) */
#define EHT_REGION_HUGE 0x0100u       /* huge pages where the node has them (CPU gathers run about twice as
				       * fast on them): a hugetlbfs directory as is; else, when the huge page
				       * pool has room, a hugetlb memfd that has no name in the directory
				       * (other processes get it by descriptor: eht_table_share, eht serve);
				       * else EHT_REGION_THP where shmem THP allows it; else 4 KiB pages and
				       * one warning naming the fix (vm.nr_hugepages, shmem_enabled) */

struct eht_region_opts {
	uint32_t size;              /* sizeof(struct eht_region_opts) */
	uint32_t flags;             /* EHT_REGION_*: exactly one of KEEP and UNLINK_WHEN_MAPPED */
	const char *dir;            /* NULL: $EHT_SHM_DIR, else /dev/shm; a hugetlbfs mount works too */
	uint64_t rows, row_bytes;   /* geometry recorded by the creator and checked by openers; 0, 0:
				     * none asked (openers then accept any) */
	int numa_node;              /* with EHT_REGION_NUMA_NODE */
	int device;                 /* with EHT_REGION_NUMA_DEVICE */
	unsigned populate_threads;  /* creator's populate threads; 0: one per CPU it may use, at most 32 */
	double timeout_s;           /* how long openers wait for ready; <= 0: 60 s */
	gid_t gid;                  /* with EHT_REGION_GROUP */
	unsigned expected_peers;    /* with UNLINK_WHEN_MAPPED: processes that map it, creator included */
	const volatile int *cancel; /* may be NULL; the creator's populate stops with -EINTR soon after
				     * *cancel turns non-zero (a signal handler's flag). Added later. */
};

/* Creates or opens the region `name` ([A-Za-z0-9._-], 1..200 chars, no "..", not starting with
 * '.') of `bytes` data bytes. Without a region of that name, this process creates it: capacity is
 * checked first (free space of the directory, free memory of the NUMA node), pages are bound to the
 * node, allocated and populated with several threads, and the caller must fill the data and call
 * eht_region_mark_ready(). Otherwise it waits (opts->timeout_s) until the creator marks it ready
 * and maps it. bytes 0 is allowed with EHT_REGION_OPEN_ONLY (any size). A region whose creator died
 * before ready is reclaimed (this process becomes the creator) unless EHT_REGION_NO_RECLAIM.
 * An existing file under the name is mapped only when this user (euid) or root owns it (with
 * EHT_REGION_GROUP also a member of opts.gid) and it is not writable by group or others beyond the
 * mode asked for (0600; 0660 with EHT_REGION_GROUP); otherwise -EPERM at once, naming the file, its
 * owner uid and mode. A file that is not a region fails at once (-EINVAL, naming its owner and mode),
 * whoever holds a lock on it; a ready region whose write lock another process holds is waited for
 * at most 5 s (gc holds it for an instant), then -ETIMEDOUT.
 * Returns 0, -EINVAL (bad name, flags or options; a region of another size or geometry than asked,
 * naming both; not an eht region), -EPERM (another user's file, or a mode too open, as above),
 * -ENOSPC (does not fit: names the size, the space free and the fix), -ETIMEDOUT (not ready in
 * time, naming the region and its creator), -ENOENT (OPEN_ONLY), -EOWNERDEAD (NO_RECLAIM), -EACCES
 * or another -errno from the file system. */
EHT_API EHT_MUST_CHECK int eht_region_open(const char *name, uint64_t bytes,
		const struct eht_region_opts *opts,
		    eht_region **out);

/* Creator only: publishes the filled data; waiting openers proceed. Returns 0, -EINVAL (NULL, not
 * the creator) or -EALREADY. */
EHT_API EHT_MUST_CHECK int eht_region_mark_ready(eht_region *region);

/* Registers the data for DMA and in-place reads by GPU `device` (chunks of at most 64 GiB; one
 * device pointer for the whole range). Every process pins its own mapping. Failure is one warning
 * and the region stays usable unpinned. Returns 0 (also when already pinned), -ENODEV (no driver or
 * GPU) or the driver's error. Unpinned on close. */
EHT_API EHT_MUST_CHECK int eht_region_pin(eht_region *region, int device);

EHT_API void *eht_region_data(const eht_region *region);      /* first data byte (NULL for NULL) */
EHT_API uint64_t eht_region_bytes(const eht_region *region);  /* data bytes */
EHT_API uint64_t eht_region_rows(const eht_region *region);   /* recorded geometry (0 when none) */
EHT_API uint64_t eht_region_row_bytes(const eht_region *region);
EHT_API bool eht_region_is_creator(const eht_region *region);
EHT_API bool eht_region_is_ready(const eht_region *region);
EHT_API bool eht_region_is_pinned(const eht_region *region);
EHT_API uint64_t eht_region_device_ptr(const eht_region *region); /* 0 unless pinned */
EHT_API int eht_region_device(const eht_region *region);          /* GPU it is pinned for, -1 when not */
EHT_API int eht_region_numa_node(const eht_region *region);       /* node the pages are bound to,
		-1 unknown */
EHT_API uint64_t eht_region_page_size(const eht_region *region);  /* backing page size (4 KiB, 2 MiB, ...) */
EHT_API const char *eht_region_name(const eht_region *region);
/* The region's file ("<dir>/eht.<name>"; "memfd:<name>" for a memfd region, which has no name in
 * the directory); the name may have been removed since. "" for NULL. */
EHT_API const char *eht_region_path(const eht_region *region);

/* Releases this process's view: unpins, removes a half-built region (creator before ready),
 * unmaps, closes (dropping the lock) and sets *region to NULL. Every step is attempted even when
 * one fails; each failure is logged and the first is returned. NULL or *NULL is a no-op, so a
 * second close is safe. In a forked child (a handle the parent opened) it only unmaps and closes
 * the child's copy: it never unlinks and never unpins (the name and the pin are the parent's). */
EHT_API int eht_region_close(eht_region **region);

/* Removes the name now (the memory lives until the last mapping goes). dir as in the options.
 * Returns 0, -EINVAL (bad name) or -ENOENT. */
EHT_API EHT_MUST_CHECK int eht_region_unlink(const char *name, const char *dir);

/* The creator's removal of its own region: unlinks the region's name only when called by the
 * process that created it (a forked child's copy of the handle never removes it) and only while
 * the name still names this region's file (after the name was removed and another process made
 * the region again, that one is left alone). The mapping stays valid. Returns 0; -ESTALE (the name
 * names another file, or none: nothing removed); -EPERM (this process did not create it); -EINVAL
 * (NULL, or a memfd region, which has no name); or -errno from unlink. */
EHT_API EHT_MUST_CHECK int eht_region_unlink_if_same(const eht_region *region);

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
EHT_API const char *eht_region_state_name(int state);

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
EHT_API EHT_MUST_CHECK int eht_region_list(const char *dir, struct eht_region_entry **entries);
EHT_API void eht_region_list_free(struct eht_region_entry *entries);

#define EHT_REGION_GC_DRY_RUN 0x1u
/* Removes stale, orphaned, invalid and partial regions of dir that nobody uses (checked by taking
 * the region's lock, so a region in use is never removed; a partial one once EHT_REGION_GC_GRACE_S
 * old, or at once where the creator pid its name carries is gone). report, when given, is called for each
 * region removed (or, with EHT_REGION_GC_DRY_RUN, that would be). Returns the count or -errno. */
EHT_API EHT_MUST_CHECK int eht_region_gc(const char *dir, unsigned flags,
		  void (*report)(const struct eht_region_entry *entry, void *arg), void *arg);

/* ============================================================================== probe + group == */
/* Machine probes, node-local groups and host-NUMA sharing (src/gpu, src/group). */

/* ---- probe: what this machine offers (src/gpu/probe*.c) ---- */

/* Result of a real one-granule cuMemCreate + cuMemExportToShareableHandle for one handle kind. */
enum eht_probe_export {
	EHT_EXPORT_UNKNOWN = 0,     /* not tried (no driver, no host-NUMA VMM) */
	EHT_EXPORT_OK = 1,          /* created and exported */
	EHT_EXPORT_UNSUPPORTED = 2, /* refused here; `why` says which call and CUresult */
};

struct eht_probe_device {
	int ordinal;
	char name[128];
	int cc_major, cc_minor;
	int sm_count;
	uint64_t total_mem;       /* bytes of GPU memory */
	char pci_bus_id[32];      /* "0000:3b:00.0" style, lower case as sysfs spells it */
	int host_numa_id;         /* CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1 when unknown */
	int host_numa_vmm;        /* HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED (0/1, -1 unknown) */
	int fabric_attr;          /* HANDLE_TYPE_FABRIC_SUPPORTED attribute (0/1, -1 unknown) */
	int posix_fd_attr;        /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED attribute */
	uint64_t granularity;     /* host-NUMA allocation granularity in bytes, 0 when unknown */
	int fabric_export;        /* enum eht_probe_export, from a real create + export */
	int posix_fd_export;      /* enum eht_probe_export */
	char fabric_why[192];     /* reason when fabric_export is not OK */
	char posix_fd_why[192];
	char pcie_speed[32];      /* current_link_speed as sysfs says it ("32.0 GT/s PCIe"), "" unreadable */
	int pcie_gen;             /* derived from the speed (1..6), 0 unreadable */
	int pcie_width;           /* current_link_width, 0 unreadable */
};

struct eht_probe_numa {
	int node;
	uint64_t total;     /* MemTotal of the node, bytes */
	uint64_t free;      /* MemFree of the node, bytes */
	uint64_t available; /* estimate of what the node can still give (see eht_probe_numa_mem) */
};

struct eht_probe {
	uint32_t size;           /* sizeof(struct eht_probe) */
	int driver_version;      /* cuDriverGetVersion (13000 = 13.0), 0 without a driver */
	char gpu_status[256];    /* "" when the driver loaded with devices; else why there is no GPU */
	int ndevices;
	struct eht_probe_device *devices;
	int imex_channels;       /* entries in /dev/nvidia-caps-imex-channels/, -1 when the folder is missing */
	int nnuma;
	struct eht_probe_numa *numa;
	char shm_path[64];       /* "/dev/shm" */
	uint64_t shm_total, shm_free; /* statvfs of shm_path, 0 when missing */
	char thp_enabled[32];    /* selected value of transparent_hugepage/enabled ("madvise"), "" unreadable */
	char thp_shmem_enabled[32]; /* selected value of shmem_enabled ("never") */
	uint64_t hugepages_total, hugepages_free, hugepage_size; /* /proc/meminfo HugePages_*, Hugepagesize (bytes) */
};

/* Probes GPUs, NUMA nodes, /dev/shm, huge pages and handle support. Works without a GPU or driver
 * (ndevices 0, gpu_status says why). Export support is found by a real one-granule allocation and
 * export per device, cached for the process. Returns 0 or -ENOMEM; free with eht_probe_free. */
EHT_API EHT_MUST_CHECK int eht_probe(struct eht_probe **out);
EHT_API void eht_probe_free(struct eht_probe *probe);
/* The probe as a JSON object (malloc'd, NUL-terminated; free() it). Returns 0 or -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_probe_json(char **out);

/* ---- group: the ranks of one node that share tables (src/group) ---- */

typedef struct eht_group eht_group;

/* Collectives supplied by a host framework (torch.distributed, MPI). Each returns 0 or -errno and
 * must be called by every rank in the same order. File descriptors still travel over eht's own
 * Unix sockets, named by a key rank 0 sends through `broadcast`. */
struct eht_group_adapter {
	uint32_t size;  /* sizeof(struct eht_group_adapter) */
	void *user;
	int rank, nranks;
	/* Copies len bytes of rank 0's buf into every other rank's buf. */
	int (*broadcast)(void *user, void *buf, size_t len);
	/* Gathers len bytes from every rank into out (nranks * len bytes, rank order) on every rank. */
	int (*allgather)(void *user, const void *in, size_t len, void *out);
	/* Optional (NULL: an all-gather of one byte). */
	int (*barrier)(void *user);
};

/* Also accept peers whose gid is opts.allowed_gid; the socket is then named "\0eht.g<gid>.<key>"
 * so that ranks of several users meet. */
#define EHT_GROUP_ALLOW_GID 0x1u

struct eht_group_opts {
	uint32_t size;       /* sizeof(struct eht_group_opts) */
	uint32_t flags;      /* EHT_GROUP_* */
	uint32_t timeout_ms; /* connect and per-operation deadline; 0: EHT_GROUP_TIMEOUT_MS or 300000 */
	gid_t allowed_gid;   /* with EHT_GROUP_ALLOW_GID */
	const struct eht_group_adapter *adapter; /* NULL: built-in Unix sockets */
};

/* Joins the node-local group named by key ([A-Za-z0-9._-], 1..64 chars) as rank of size ranks.
 * Built in: rank 0 listens on the abstract Unix socket "\0eht.<uid>.<key>", the others connect,
 * retrying until the timeout; peers must have our uid (or the allowed gid). With opts->adapter
 * the adapter's rank and size are used (rank and size must match them or be -1/0).
 * Returns 0, -EINVAL, -EADDRINUSE (another group holds the key), -ETIMEDOUT, -EACCES (peer of
 * another user), -EPROTO (peers disagree on size or rank), -ECONNRESET or -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_group_create(const char *key, int rank, int size,
		const struct eht_group_opts *opts,
		     eht_group **out);
/* A group of one rank (every collective is a no-op). Returns 0 or -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_group_create_single(eht_group **out);
/* Leaves the group and closes its sockets; NULL is a no-op. */
EHT_API void eht_group_destroy(eht_group *group);
EHT_API int eht_group_rank(const eht_group *group);
EHT_API int eht_group_size(const eht_group *group);

/* Collectives: every rank calls them in the same order. On any failure (a peer died: -ECONNRESET;
 * a peer stalled past the timeout: -ETIMEDOUT; a mismatched call: -EPROTO) the built-in group is
 * broken: its sockets are shut so that every other rank fails promptly too, and every later call
 * returns -ECONNRESET. */
EHT_API EHT_MUST_CHECK int eht_group_barrier(eht_group *group);
/* Sends len bytes of rank 0's buf to every rank's buf (len must agree: else -EPROTO). */
EHT_API EHT_MUST_CHECK int eht_group_broadcast(eht_group *group, void *buf, size_t len);
/* Gathers len bytes (at most 1 MiB) from every rank into out (size * len bytes) on every rank. */
EHT_API EHT_MUST_CHECK int eht_group_allgather(eht_group *group, const void *in, size_t len, void *out);
/* Passes n file descriptors from rank 0 to every rank (SCM_RIGHTS): rank 0's fds are read, the
 * other ranks' fds[] are filled with new descriptors (O_CLOEXEC) they must close. n must agree.
 * Returns 0 or -errno; on failure no received descriptor stays open. */
EHT_API EHT_MUST_CHECK int eht_group_broadcast_fds(eht_group *group, int *fds, size_t n);

/* ---- sharing a table across a group (src/table/host_numa*.c, share*.c) ---- */

#define EHT_SHARE_NO_RESERVE 0x1u   /* host-NUMA: no NUMA reserve check */
#define EHT_SHARE_FABRIC 0x2u       /* host-NUMA: FABRIC handles only (fail if unsupported here) */
#define EHT_SHARE_POSIX_FD 0x4u     /* host-NUMA: POSIX fd handles only */
#define EHT_SHARE_NUMA_NODE 0x8u    /* place the table on NUMA node opts.numa_node, not the GPU's */
/* eht_table_share: one copy per NUMA node that has ranks of the group (each rank's node: its GPU's
 * host NUMA node, else the node of the CPU it runs on), each on its node's memory, and each rank
 * maps its node's copy. When the copies do not all fit (every node's available memory, less the
 * host-NUMA reserve, must hold one) there is one copy, with one warning saying why. Which copy a
 * rank holds and whether it must fill it: eht_table_copy. */
#define EHT_SHARE_PER_NUMA 0x10u

struct eht_share_opts {
	uint32_t size;          /* sizeof(struct eht_share_opts) */
	uint32_t flags;         /* EHT_SHARE_* */
	int tier;               /* eht_table_share: 0 tries host-numa, region-pinned, region in order
				 * (region-pinned first on a GPU node whose huge page pool has room for
				 * the table: 2 MiB CPU pages, faster CPU gathers);
				 * EHT_TIER_HOST_NUMA / _REGION_PINNED / _REGION forces one */
	int device;             /* CUDA device ordinal; -1: the current context's device, else 0 */
	uint64_t row_bytes;     /* row size for the table's geometry; 0: 1 (bytes) */
	uint64_t chunk_bytes;   /* host-NUMA allocation chunk; 0: EHT_SHARE_CHUNK or 1 GiB */
	uint64_t reserve_bytes; /* host-NUMA: keep this much of the node available; 0: EHT_NUMA_RESERVE
				 * or 10% of the node's total */
	const char *name;       /* table name (and region name for the region tiers); NULL: "table" */
	const volatile int *cancel; /* may be NULL; a tier's long step (the region's populate) stops with
				 * -EINTR soon after *cancel turns non-zero. Added later. */
	int numa_node;          /* with EHT_SHARE_NUMA_NODE. Added later: a size without it is accepted */
};

/* Collective: maps one table of `bytes` on every rank of the group as cuMem host-NUMA memory on the
 * GPU's host NUMA node, created by rank 0 in chunks and shared by exported handles (FABRIC where
 * permitted, else POSIX fds). All ranks return the same result: 0 and a table of tier
 * EHT_TIER_HOST_NUMA (info.host == info.device_ptr, the same bytes from CPU and GPU, writable), or
 * the same -errno (with the failing rank's cause in the message; rank 0 logs one warning):
 * -ENODEV (no GPU), -EOPNOTSUPP (host-NUMA VMM or the handle kind unsupported here), -ENOMEM
 * ("NUMA node N fell below its X GiB reserve after A of B GiB"), -EINVAL, or a driver error.
 * EHT_TEST_FAULT=<step>:rank=<r> (step: create, export, import, reserve, map, access) injects a failure. */
EHT_API EHT_MUST_CHECK int eht_host_table_share(uint64_t bytes, eht_group *group,
		const struct eht_share_opts *opts,
			 eht_table **out);

/* Collective: the one call users make. Tries host-NUMA, then a pinned shared region, then an
 * unpinned one (or only opts->tier), every rank ending in the same tier. With a GPU and a huge page
 * pool (vm.nr_hugepages) whose available pages hold the whole table, rank 0 has the group try the
 * pinned region first: on 2 MiB pages, where host-NUMA's CPU mapping has the driver's 4 KiB ones, the
 * CPU gathers of HOST and AUTO run faster and the GPU reads it as fast. Returns 0 and a table
 * whose info gives the CPU pointer, the GPU pointer (0 for the unpinned region), tier, NUMA node and
 * page size; or the last tier's -errno. EHT_TEST_FAULT=region:rank=<r> (r > 0) fails rank r's attach to
 * the region, for tests of the all-or-none fallback. */
EHT_API EHT_MUST_CHECK int eht_table_share(uint64_t bytes, eht_group *group,
		const struct eht_share_opts *opts,
		eht_table **out);

/* Which copy of a table this process maps: one per NUMA node with EHT_SHARE_PER_NUMA or
 * `eht serve --per-numa`, else the only one. */
struct eht_table_copy {
	uint32_t size;         /* sizeof(struct eht_table_copy), set by the caller */
	int index;             /* this copy, 0..count-1 */
	int count;             /* copies of the table on this node (1: one for every process) */
	int numa_node;         /* the node the copy was placed for, -1 when unknown */
	int writer;            /* 1 on the one rank of a share that fills this copy (lowest rank of its
				* node; rank 0 with one copy); 0 elsewhere and for served tables */
	unsigned pool_threads; /* served tables: the CPU threads the server budgets for this worker's
				* lookup pool (eht serve --cpu-budget / --workers), 0 when none */
};
/* Fills *copy (copy->size must be set). Returns 0 or -EINVAL. */
EHT_API EHT_MUST_CHECK int eht_table_copy(const eht_table *table, struct eht_table_copy *copy);

/* ======================================================================= node identity == */
/* Jobs spanning nodes (src/group/node_id.c): a job's ranks are split into node-local groups by this
 * identity, and each node makes its own copy of a table (see docs/MULTI_NODE.md). */

#define EHT_NODE_ID_MAX 128 /* bytes that always hold eht_node_id's answer */

/* Writes this process's node identity (NUL-terminated) to buf: "sim.<id>" when $EHT_NODE_ID is set
 * (1..64 characters of [A-Za-z0-9._-]; it splits one machine into simulated nodes whose ranks never
 * share a table or a descriptor), else "host.<hostname>.<boot id>". Ranks with equal identities are
 * on one node. Returns the identity's length, -EINVAL (NULL buf, bad EHT_NODE_ID) or -ENOSPC (len
 * too small). */
EHT_API int eht_node_id(char *buf, size_t len);

/* ===================================================================================== lookup == */
/* Ids in, rows out (src/lookup). */

/* A lookup engine bound to one table: row ids in, rows out (in GPU memory, or host memory for
 * CPU-only use), with every buffer allocated once at eht_lookup_create (GPU addresses stay fixed,
 * so lookups can sit beside CUDA-graph replays).
 *
 * Ids. Each id (int32 or int64) plus the call's id_offset names an absolute row r. r < 0, r >= rows,
 * or r outside [first_row, first_row + local_rows) (rows this process holds) is "dead": its output row
 * is all zero bytes (raw) or all +0.0 (bf16), and the call counts it; EHT_LOOKUP_RUN_DEAD_ERROR makes
 * dead ids an error (-ERANGE) instead. No strategy ever reads outside the table.
 *
 * Strategies (all produce bit-identical output):
 * - DIRECT: one GPU kernel reads each row in place from pinned host memory, in the given order (what
 *   engines do today; limited by the GPU's address-translation misses on large tables).
 * - SORTED: GPU radix sort of (row, position) pairs, dedup, gather of the distinct rows in address
 *   order into a fixed GPU buffer, then an expand kernel writes them in the requested order. Needs
 *   local_rows < 2^32 - 1.
 * - HOST: a persistent pool of NUMA-local CPU threads copies rows into pinned staging, chunk by chunk,
 *   each chunk sent with cuMemcpyHtoDAsync as soon as it is ready (request order, no sort: measured
 *   faster on the CPU for uniform ids). Tiers without a host pointer (disk) give their rows through
 *   the tier's read_rows, also in request order. With EHT_LOOKUP_HOST_SORT (and for bf16 output
 *   into host memory from such a tier), ids are sorted and deduplicated on the CPU, the distinct
 *   rows gathered in address order and an expand kernel (or the CPU, for host output) writes the
 *   requested order: fewer reads where ids repeat a lot. Without a GPU, HOST writes into host memory.
 *   An eager batch of 16,384 host ids or more into GPU memory (a table with a host pointer, not a
 *   background engine, no EHT_LOOKUP_HOST_SORT) is copied into pinned memory and goes the way of
 *   ids in GPU memory (below): the calling thread no longer gathers, and each chunk moves as soon as
 *   it is ready.
 * - AUTO: with a GPU-readable table and GPU output, a short calibration in
 *   eht_lookup_create (opts strategy AUTO; tens of ms) times DIRECT alone, HOST alone, and both at
 *   once (the batch split between the GPU's in-place gather on an internal stream and the CPU
 *   pool) at four batch sizes (128, 1,024, 6,144 and 196,608 or max_batch: tiny, small, decode- and
 *   prefill-sized), with ids in host memory and with ids in GPU memory, and AUTO then uses the
 *   fastest per place and size class (below 512, 4,096, 32,768 ids, above).
 *   When it splits with host ids, the GPU's share follows each call's measured times so both sides
 *   finish together. EHT_LOOKUP_AUTO_SPLIT=0 in the environment turns the split off. Host output or
 *   no GPU: HOST.
 *
 * Ordering rule (asynchronous on the stream): the call reads ids that are host memory before it
 * returns (they may be reused afterwards); ids in GPU memory must be valid when the stream reaches
 * the call. Outputs are valid once the stream passes the point after the call. Host output (CPU
 * use) is complete when the call returns. Host ids given to a GPU strategy are copied through
 * pinned memory.
 *
 * Ids in GPU memory, HOST and AUTO: the call only enqueues work on the stream, with no host
 * synchronization. A stage-in kernel copies the ids to pinned memory and rings a doorbell in
 * host-mapped memory; the process's poller thread sees it and the CPU pool gathers the rows into
 * pinned staging chunk by chunk; the kernel copies each chunk into out as soon as it is ready (BF16:
 * raw into the engine's GPU scratch, dequantized by one kernel after it). AUTO
 * runs DIRECT on its calibrated share of the ids at the same time (calibrated separately for ids in
 * GPU memory). The kernel keeps at most one block per SM waiting on the CPU.
 *
 * CUDA graphs: every strategy can be captured (cuStreamIsCapturing) with ids in GPU memory,
 * dead_count == NULL and no EHT_LOOKUP_RUN_DEAD_ERROR (those return -EOPNOTSUPP on a capturing
 * stream); HOST and AUTO also with host ids in pinned or pageable memory, which the CPU then reads
 * at each replay. A captured graph requires: the same id and output buffers at every replay (write
 * new ids into the captured id buffer before the replay; the count, id type and offset are fixed at
 * capture), the engine alive and not destroyed while the graph may replay, replays on a stream of
 * the engine's device (the context current at capture), and no two replays of graphs that captured
 * the same ids buffer of one engine in flight at once. Each distinct captured (ids buffer, count,
 * id type, offset) keeps a small descriptor in the engine for HOST and AUTO (at most 1,024 per engine,
 * enough for a graph per batch size as engines capture them: -ENOSPC beyond; DIRECT and SORTED keep
 * none).
 *
 * Dead count: for HOST and AUTO with host ids it is known when the call returns (below 16,384 ids into
 * GPU memory; any count into host memory). Where the GPU counts (DIRECT, SORTED, and HOST / AUTO with
 * GPU ids, larger eager host-id batches, or under capture), a non-NULL dead_count
 * makes the call synchronize the stream to read it (not capturable); pass NULL to stay asynchronous
 * and read eht_lookup_last_dead_count() after the stream has passed the call or a replay.
 *
 * CPU threads: one pool per process, shared by every engine and table, created by the first engine:
 * opts.threads threads, else EHT_THREADS, else the budget a served table's server handed this worker
 * (eht serve --cpu-budget / --workers: eht_table_copy's pool_threads), else the CPUs of the table's
 * NUMA node divided by the GPUs attached to that node (one GPU process each), less two (the thread
 * feeding the pool and the process's own). While jobs come back to back pool threads spin after each
 * (at least spin_us, EHT_POOL_SPIN_US, 50; up to 1 ms); after a job long after the last they sleep on
 * a futex at once; a job wakes only as many as it has tasks. The doorbell poller spins
 * EHT_BELL_SPIN_US (100; up to 1 ms while requests come back to back) after the last request, then
 * sleeps: until an eager call wakes it, in naps of 50 us while captured lookups exist. A captured
 * lookup that has rung at a steady period (1 ms to 1 s: a replayed step graph) is due again in a
 * window of 3 % of that period either side (0.1 to 2 ms), which the poller spins through.
 * Between model steps milliseconds apart no pool thread of eht spins.
 * A read error of a stream-triggered gather (disk tier) zero-fills the chunk and is returned by the
 * engine's next eht_lookup_run.
 *
 * Output format BF16 (packed Engram rows of EHT_ENGRAM_ROW_BYTES only): 256 bf16 per row (512 bytes).
 * Weight w (FP8 e4m3fn byte) of group g = w_index / 32 with scale byte s (ue8m0) becomes
 *   value = e4m3(w) * scale(s), scale(s) = the float whose bits are s << 23 (2^(s - 127) for
 *   1 <= s <= 254, +0.0 for s = 0, +inf for s = 255: as the kernel the model was validated with reads
 *   ue8m0), computed exactly in float (e4m3 has 3 mantissa bits, so the product is exact, float
 *   subnormals included, unless it overflows to +-inf, which needs s >= 247), then rounded to bf16
 *   round-to-nearest-even (bits + 0x7fff + lsb) >> 16; values below 2^-133 lose bits there (bf16
 *   subnormals). Special cases: e4m3 0x7f / 0xff (NaN) -> 0x7fc0; s = 0 -> +-0 (0x0000 / 0x8000);
 *   s = 0xff -> +-inf (0x7f80 / 0xff80), and a zero weight under it -> NaN (0 * inf, 0x7fc0);
 *   e4m3 -0 (0x80) -> -0 (0x8000); overflow -> +-inf; dead rows -> 0x0000. eht_engram_dequant_row()
 *   is the CPU reference; the GPU kernels
 *   match it bit for bit. */

typedef struct eht_lookup eht_lookup;

enum eht_lookup_strategy {
	EHT_LOOKUP_AUTO = 0,
	EHT_LOOKUP_DIRECT = 1,
	EHT_LOOKUP_SORTED = 2,
	EHT_LOOKUP_HOST = 3,
};
enum eht_lookup_format {
	EHT_LOOKUP_RAW = 0,  /* row_bytes per row, bit copies */
	EHT_LOOKUP_BF16 = 1, /* 256 bf16 per packed Engram row (row_bytes must be 264) */
};
enum eht_id_type { EHT_ID_INT32 = 0, EHT_ID_INT64 = 1 };

/* eht_lookup_opts.flags */
#define EHT_LOOKUP_CPU_ONLY 0x1u  /* never touch the GPU: HOST into host memory only */
#define EHT_LOOKUP_HOST_SORT 0x2u /* HOST sorts and deduplicates ids before gathering */
/* GPU output: ids are deduplicated on the GPU first, so each distinct row of a run is read and sent
 * once, whatever the strategy (always so with a hot set; see eht_lookup_set_hotset). Wins where ids
 * repeat (real text: 55-66 % distinct per prefill step); costs two light kernels where they do not. */
#define EHT_LOOKUP_GPU_DEDUP 0x4u
/* No hot set unless the options give one: not even the table's (eht_table_hotset), which an engine
 * with a GPU and the kernels otherwise loads at create when opts.hotset is NULL. */
#define EHT_LOOKUP_NO_HOTSET 0x8u
/* Background mode, for lookups that overlap the model's kernels (a side stream forked at the step's
 * start): what the model loses counts, not the lookup's own latency. HOST lookups of GPU output with
 * ids in GPU memory or under capture hold no SM while the CPU gathers: the stream rings the doorbell
 * and waits for each group of rows with stream memory operations (cuStreamWriteValue32 /
 * cuStreamWaitValue32) and the copy engine moves it; BF16 is dequantized by a small kernel (for big
 * runs per group, on a stream of the engine's own beside the next groups' copies; once after the
 * last copy for decode-sized ones).
 * AUTO runs as HOST (no in-place GPU share); every kernel is capped at sm_cap SMs (default half
 * the GPU's) and launched at the device's greatest priority (its blocks are scheduled ahead of the
 * model's waiting ones; where the driver has cuLaunchKernelEx). The distinct misses of a hot set or
 * GPU dedup go the background way too (their count exists only on the GPU: the stream copies it to
 * the CPU, which gathers that many and marks the groups past them ready at once; the copies move
 * every group of the bound whole).
 * Runs over max_batch ids keep the kernel path.
 * Also set by EHT_LOOKUP_BACKGROUND=1. Falls back to the default mode where the driver lacks stream
 * memory operations. */
#define EHT_LOOKUP_BACKGROUND 0x10u
/* How EHT_LOOKUP_BACKGROUND requests reach the GPU. By default the CPU pushes each request's rows itself
 * (its own copies, a bf16 prefill's dequant per group too, an eager bf16 call's one dequant after its
 * last copy, then a word the stream waits for), so the stream's part of a request is two nodes (a
 * small ring kernel, one wait) instead of a wait and a copy per group, an ids copy, a write and a
 * memset. A graph's launch call pays about 1.7 us per copy node that touches host memory and 1.3 us
 * per memory op, and an eager call's thread about 2 us per node. On the lent H200, a decode step of
 * two tables (eht bench step, medians of 3 rounds) paid pushed +35 / +50 us synced (two machines)
 * against +69 / +61 us the stream's way, and back to back +38 / +48 against +26 / +65 us; a prefill
 * step -0.06 / +0.22 ms synced against +0.32 / +0.37 ms, its graph's launch 120 us shorter.
 * EHT_LOOKUP_BG_STREAM keeps captured requests the stream's way (for an engine that launches steps
 * far ahead and measures that better); eager requests are always pushed. EHT_LOOKUP_BG_PUSH is the
 * default, kept for the callers that set it. EHT_LOOKUP_BG_PUSH=1 / 0 in the environment overrides
 * both flags for every engine. */
#define EHT_LOOKUP_BG_PUSH 0x20u
#define EHT_LOOKUP_BG_STREAM 0x40u
#define EHT_LOOKUP_OPTS_FLAGS                                                                                   \
	(EHT_LOOKUP_CPU_ONLY | EHT_LOOKUP_HOST_SORT | EHT_LOOKUP_GPU_DEDUP | EHT_LOOKUP_NO_HOTSET | EHT_LOOKUP_BACKGROUND | \
	 EHT_LOOKUP_BG_PUSH | EHT_LOOKUP_BG_STREAM)

struct eht_lookup_opts {
	uint32_t size;         /* sizeof(struct eht_lookup_opts) */
	uint32_t flags;        /* EHT_LOOKUP_* above */
	int strategy;          /* enum eht_lookup_strategy: the default for runs (AUTO) */
	int format;            /* enum eht_lookup_format (RAW) */
	int device;            /* CUDA device; -1: the table's device, or none (CPU only) */
	unsigned threads;      /* CPU gather threads of the process's one pool (the first engine sets it);
				* 0: EHT_THREADS, else the server's budget (served tables), else the
				* node's CPUs per GPU on it, less two (min 1) */
	uint64_t max_batch;    /* ids per internal step; larger calls are split (0: 196608) */
	uint64_t staging_bytes;/* pinned staging for HOST (0: max_batch rows, at most 256 MiB) */
	int numa_node;         /* node for the CPU threads; -1: the table's node (or unbound) */
	unsigned spin_us;      /* how long idle CPU threads spin before sleeping (0: EHT_POOL_SPIN_US, 50 us) */
	/* A GPU hot set loaded at create (as eht_lookup_set_hotset after the calibration):
	 * hotset[0..hotset_rows), most frequent first (e.g. a file of `eht hotset build`), of which only
	 * the first rows that fit hotset_max_bytes of GPU memory (row_bytes + 48 a row, see
	 * eht_lookup_set_hotset; 0: no cap) are taken. NULL: the table's own hot set (eht_table_hotset:
	 * the one its server handed over; of it the rows this process holds, under the same cap) on an
	 * engine with a GPU and the kernels, unless EHT_LOOKUP_NO_HOTSET or EHT_LOOKUP_BACKGROUND (beside
	 * the model a hot set's kernel cost the step more than it saved); it is skipped with a warning
	 * where it cannot be loaded, and eht_lookup_set_hotset before the first run replaces it. */
	const int64_t *hotset;
	uint64_t hotset_rows;
	uint64_t hotset_max_bytes;
	/* At most this many SMs for each of the engine's kernels (a grid of at most sm_cap blocks where a
	 * kernel would use more), leaving the rest to the model's kernels beside a side-stream lookup
	 * (vLLM gives its lookup SMs / 2). 0: EHT_LOOKUP_SM_CAP, else no cap. */
	unsigned sm_cap;
};

/* Creates a lookup engine for `table` (which must outlive it): CPU thread pool, pinned staging, GPU
 * buffers and kernels. opts NULL = defaults. Returns 0; -EINVAL (bad options, unknown flags, BF16 on
 * rows that are not 264 bytes, a GPU strategy on a table the GPU cannot read, a hot set that
 * eht_lookup_set_hotset refuses or one given to a CPU-only engine); -ENODEV (GPU strategy without a
 * GPU); -ENOTSUP (GPU strategy in a build without kernels); -ENOMEM; driver errors. */
EHT_API EHT_MUST_CHECK int eht_lookup_create(eht_table *table, const struct eht_lookup_opts *opts,
		eht_lookup **out);

/* eht_lookup_run flags */
#define EHT_LOOKUP_RUN_DEAD_ERROR 0x1u /* dead ids are -ERANGE instead of zero rows */
#define EHT_LOOKUP_RUN_IDS_HOST 0x2u   /* ids are host memory (skip pointer detection) */
#define EHT_LOOKUP_RUN_IDS_DEVICE 0x4u /* ids are GPU memory */
#define EHT_LOOKUP_RUN_OUT_HOST 0x8u   /* out is host memory (CPU use; HOST strategy only) */
#define EHT_LOOKUP_RUN_OUT_DEVICE 0x10u /* out is GPU memory */
/* strategy for this call in bits 8..11 (0 = the engine's default), e.g. EHT_LOOKUP_RUN_STRATEGY(EHT_LOOKUP_SORTED) */
#define EHT_LOOKUP_RUN_STRATEGY(s) ((unsigned)(s) << 8)
#define EHT_LOOKUP_RUN_STRATEGY_MASK 0xf00u

/* Looks up count ids into out (count x row_bytes bytes for RAW, count x 512 for BF16). Where ids and
 * out live is detected with cuPointerGetAttribute unless a flag says (no GPU: both are host memory).
 * stream is a CUstream (NULL: the legacy default stream). Splits batches over max_batch internally.
 * *dead_count (may be NULL) gets the number of dead ids, see above. Returns 0; -EINVAL (NULL
 * pointers, bad id_type or flags, GPU output for a CPU-only engine, host output for a GPU strategy);
 * -ERANGE (a dead id with EHT_LOOKUP_RUN_DEAD_ERROR; dead rows are still zero-filled); -EOPNOTSUPP
 * (dead_count or EHT_LOOKUP_RUN_DEAD_ERROR on a capturing stream, DIRECT / SORTED with host ids there,
 * or HOST / AUTO there in a build without the GPU kernels); -ENOSPC (too many distinct captured
 * calls); the table's read error (also one from an earlier stream-triggered gather); driver errors.
 * Threads may share an engine: its calls run one at a time (a second caller waits for the first),
 * so *dead_count and -ERANGE are always about the call's own ids (eht_lookup_last_dead_count is the
 * engine's last call, whichever thread made it). On the GPU an engine's work runs in the order of its
 * calls and replays: calls on several streams must not run at the same time on the device (order the
 * streams with events, or give each stream its engine), because the engine's staging, slots and GPU
 * counters serve one run at a time. */
EHT_API EHT_MUST_CHECK int eht_lookup_run(eht_lookup *lk, const void *ids, int id_type,
		int64_t id_offset, uint64_t count, void *out, void *stream, unsigned flags,
		uint64_t *dead_count);

/* Hot rows: copies rows[0..n) (absolute row ids of the engine's table, distinct, each inside the rows
 * this process holds; most useful most frequent first, e.g. a file of `eht hotset build`) into GPU
 * memory with a GPU-side open-addressing index. From then on every run with GPU output serves those
 * ids from GPU memory and deduplicates the rest on the GPU (as EHT_LOOKUP_GPU_DEDUP): a mark kernel
 * sorts the ids into hits, dead ids and misses and lists the distinct misses; the strategy reads only
 * those (DIRECT / SORTED in place on the GPU, HOST by the CPU pool, AUTO as calibrated), so hits and
 * repeats never cross the link; an expand kernel writes every position. Output and dead counts are
 * bit-identical to a run without it. Runs into host memory do not use it. GPU memory: n x row_bytes
 * (the rows) + at most 48 x n (the index, at most half full) + about 32 x max_batch bytes (the dedup
 * table, codes and distinct rows). The table must hold fewer than 2^31 local rows. Set once, before
 * the first eht_lookup_run, from the thread that runs the engine; one stream at a time per engine
 * (the per-piece buffers are the engine's). Captures need ids in GPU memory. n == 0 does nothing.
 * Returns 0; -EINVAL (NULL engine or rows, a row outside the held rows or repeated (the message names
 * it and its entry), a CPU-only engine or one without the kernels, n >= 2^31); -EBUSY (set already,
 * or the engine has run); -ENOMEM; driver errors. */
EHT_API EHT_MUST_CHECK int eht_lookup_set_hotset(eht_lookup *lk, const int64_t *rows, uint64_t n);
/* Rows of the engine's hot set (0: none; after a refresh, the rows of the set applied). */
EHT_API uint64_t eht_lookup_hotset_rows(const eht_lookup *lk);

/* Refreshing the hot set while the engine serves (e.g. from hit counts of recent traffic): prepares
 * rows[0..n) (as eht_lookup_set_hotset; n at most the n it was set with, which fixed the GPU memory)
 * as the next set: rows already cached keep their slots, the others are read from the table into
 * pinned memory now (on the calling thread, any thread, also while another thread runs the engine;
 * one refresh of the full size needs n x row_bytes + 24 x n bytes of pinned memory, allocated at the
 * first). The set goes in at a step boundary: the next eht_lookup_run outside a capture, or
 * eht_lookup_hotset_apply; both only enqueue copies on their stream (the index, then the new rows),
 * and no GPU address changes, so CUDA graphs captured before keep replaying and see the new set from
 * their next replay after it. A newer call replaces a refresh not applied yet. Returns 0; -EINVAL (no
 * hot set, NULL rows, a row out of range or repeated, n too large: the message names it; a pending
 * refresh is kept); the table's read error (a pending refresh is dropped); -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_lookup_update_hotset(eht_lookup *lk, const int64_t *rows, uint64_t n);
/* Applies a pending refresh on stream (between graph replays, which run no eht_lookup_run): 1
 * applied, 0 nothing pending (or a refresh is being prepared right now: try at the next boundary);
 * -EOPNOTSUPP on a capturing stream; driver errors. The run thread's call, like eht_lookup_run. */
EHT_API EHT_MUST_CHECK int eht_lookup_hotset_apply(eht_lookup *lk, void *stream);
/* Lets the traffic choose the hot set: from now on the mark kernel samples every 16th id of a run (a
 * hit counts into its slot, a miss's row goes into a 64 Ki-entry ring; a few atomics per thousand
 * ids), and a thread of the engine reads the samples every period_ms, decays them into scores
 * (frequency with memory: a row must keep coming back) and, when a missed row scores twice the coldest
 * hot row, prepares a refresh that swaps them (eht_lookup_update_hotset; applied at the next step
 * boundary). Needs a hot set (its size is the cache's); start it before capturing graphs (a graph
 * captured earlier does not sample). period_ms 0 stops it. From the thread that runs the engine,
 * between runs. Returns 0; -EINVAL (no hot set); -ENOMEM, driver errors. */
EHT_API EHT_MUST_CHECK int eht_lookup_hotset_adapt(eht_lookup *lk, unsigned period_ms);
/* While adapting: the sampled hit fraction of the last period (-1 when not adapting); and the number
 * of refreshes applied so far (adapting or eht_lookup_update_hotset). */
EHT_API double eht_lookup_hotset_hit_rate(const eht_lookup *lk);
EHT_API uint64_t eht_lookup_hotset_refreshes(const eht_lookup *lk);

/* Dead ids of the last run (or of a replay of a graph that captured a run, if that was the last
 * call), complete once the stream has passed it (a pinned word the GPU writes asynchronously). */
EHT_API uint64_t eht_lookup_last_dead_count(const eht_lookup *lk);

/* The strategy the last run used (AUTO resolved), and the name of a strategy ("direct", ...). */
EHT_API int eht_lookup_last_strategy(const eht_lookup *lk);
/* 1 when the engine runs in the background mode (EHT_LOOKUP_BACKGROUND or the environment's
 * EHT_LOOKUP_BACKGROUND=1, on a GPU whose driver has stream memory operations); 0 otherwise, also
 * where it was asked for and could not be had (no GPU, CPU_ONLY, a driver without them). */
EHT_API int eht_lookup_background(const eht_lookup *lk);
/* Dequantizes count raw rows of lk's table (packed Engram rows of EHT_ENGRAM_ROW_BYTES, in GPU memory,
 * as a lookup of format RAW writes them) into bf16 rows (2 x EHT_ENGRAM_DIM bytes each, GPU memory,
 * 16-byte aligned; the same values as a BF16 lookup) on stream, with one of the engine's kernels over
 * the whole GPU (no SM cap). Asynchronous and capturable. For engines that hold looked-up rows raw
 * (half the bytes of bf16) until the layer that consumes them and dequantize there, on the model's
 * stream; a raw lookup in the background mode then runs no kernel beside the model, only the copy
 * engine. (On the lent H200's simulated decode step this did not cost the step less than the
 * background mode's own dequant beside the model: docs/BENCHMARKS.md.) Returns 0, -EINVAL (NULL or host pointers,
 * a misaligned out, rows that are not packed Engram rows), -ENOTSUP (no GPU kernels) or -ENODEV. */
EHT_API int eht_lookup_dequant(eht_lookup *lk, const void *raw, uint64_t count, void *out, void *stream);
EHT_API const char *eht_lookup_strategy_name(int strategy);
/* The strategies this library has: ids 0 .. eht_lookup_strategy_count() - 1 (enum
 * eht_lookup_strategy), each named by eht_lookup_strategy_name (the names the CLI and Python take).
 * eht_lookup_strategy_by_name: the id of a name, or -EINVAL (NULL or unknown: the message lists them). */
EHT_API int eht_lookup_strategy_count(void);
EHT_API EHT_MUST_CHECK int eht_lookup_strategy_by_name(const char *name);

/* Frees everything the engine allocated (after synchronizing its streams); NULL is a no-op. */
EHT_API void eht_lookup_destroy(eht_lookup *lk);

/* The process's lookup counters since it started, over every engine (relaxed atomics where the work
 * happens: cheap enough to leave on). Graph replays make no call: their rows show in rows_gathered
 * and bytes_staged (the CPU pool's work), not in calls. */
struct eht_metrics {
	uint32_t size;          /* sizeof(struct eht_metrics), set by the caller */
	uint64_t calls;         /* eht_lookup_run calls (eager, and each capture) */
	uint64_t ids;           /* ids those calls looked up */
	uint64_t calls_cpu, calls_gpu, calls_hot; /* by path: the CPU piece, the GPU piece, the hot set's */
	uint64_t errors;        /* calls that returned an error */
	uint64_t call_ns;       /* time the calling threads spent in those calls */
	uint64_t dead_cpu;      /* dead ids counted by the CPU (the GPU's own count stays on the GPU) */
	uint64_t rows_gathered; /* rows the CPU pool copied (every graph replay included) */
	uint64_t bytes_staged;  /* bytes of those rows */
};
/* Fills *m (m->size must be set). Returns 0 or -EINVAL. */
EHT_API EHT_MUST_CHECK int eht_metrics_read(struct eht_metrics *m);

/* CPU reference of the BF16 format: one packed Engram row (264 bytes) into 256 bf16 (as uint16). */
EHT_API void eht_engram_dequant_row(const uint8_t *row, uint16_t *out);

/* ======================================================================================= disk == */
/* The disk tier: rows stay in safetensors files (src/table).
 *
 * eht_disk_open opens a checkpoint (a .safetensors file, a sharded directory with its index, or a
 * directory of files: see eht_ckpt_open) and joins a weight tensor [rows, W] and an optional scale
 * tensor [rows, S] (same rows, any dtypes with whole-byte rows, any files) per row into packed rows
 * of W + S bytes: the weight row then the scale row (Engram: 256 + 8 = 264 bytes,
 * EHT_ENGRAM_ROW_BYTES). The result is an eht_table of tier EHT_TIER_DISK: info.host is NULL,
 * info.rows is the whole tensor's rows, and eht_lookup serves it like any other tier (its HOST
 * strategy sorts and deduplicates the ids on the CPU, the pool gathers the distinct rows into pinned
 * staging, the DMA goes to a fixed GPU buffer and the expand kernel writes the requested order).
 *
 * Tensor parallelism: rank r of R holds rows [first_row, first_row + local_rows) of eht_rows_split
 * and maps only that range of each tensor, read-only with MADV_RANDOM (readahead would read hundreds
 * of times the bytes a random row needs). An id outside the range is that rank's dead id: its
 * output row is zeros (and counted as dead by eht_lookup_run). The R ranges are disjoint and cover
 * every row, so the R ranks' outputs for the same ids sum (add, or bytewise OR) to the full
 * table's lookup: exactly one rank writes each live row, the others write zeros (use the lookups'
 * dead count only per rank; every id is dead on R - 1 ranks).
 *
 * Reads. By default each gather splits its rows: those whose pages are in the page cache (asked with
 * mincore, then remembered until the hints exceed half the memory budget, i.e. the smaller of the
 * cgroup's memory limit and RAM) are copied from the mapping; the others are read with io_uring at
 * depth, weight and scale of a row submitted together (pread where the build lacks liburing or the
 * kernel refuses a ring). EHT_DISK_URING=0 reads uncached rows with pread, EHT_DISK_SPLIT=0 copies
 * every row from the mapping (page faults do the reads). EHT_DISK_PREAD / EHT_DISK_URING read every
 * row with pread / io_uring. All through the page cache. A file truncated, rewritten or replaced while open never kills the process with SIGBUS:
 * each gather first compares the files' size and mtime with those seen at open (at most every
 * millisecond), and copies from the mapping run under a SIGBUS guard (a process-wide handler,
 * installed on first open, that only acts for faults inside an eht disk copy and passes every other
 * SIGBUS to the handler that was there before). Any failure (-EIO for a fault, EIO or short read,
 * -ESTALE for a file changed since open) names the file, the tensor, the row and the byte offset,
 * and says whether the file shrank, was modified (mtime) or replaced (the path now names another
 * inode).
 *
 * Hot-row cache (cache_bytes, default 16 MiB): a direct-mapped cache of recently read rows in
 * process memory, one slot per row hash, each slot guarded by its own try-lock (a busy slot counts
 * as a miss; no global lock, nothing written on a hit besides the slot's lock word). Direct-mapped
 * because it is O(1) and lock-free across the gather threads, and because a 264-byte row in it costs
 * 264 bytes where the page cache holds the row's whole 4 KiB page: Engram ids are hashed n-grams
 * whose frequent rows recur step after step, so a small row cache keeps those hot when the page
 * cache cannot hold the table. One-time rows of a large prefill step can evict hot rows; the page
 * cache stays the large tier.
 *
 * Prefetch. The ids of a step depend only on the input tokens, so its reads can start before the
 * GPU reaches the layer: eht_disk_prefetch copies the ids, and a dispatcher thread of the table
 * sorts and deduplicates them and gathers the distinct local rows with io_threads reader threads
 * (a deeper queue than the lookup's pool: a drive reaches its IOPS only with many reads in flight) into one of
 * prefetch_slots buffers of prefetch_rows rows, allocated at open. eht_lookup_run on the table then
 * serves the rows of the OLDEST unreleased ticket from that buffer (waiting for its reads to finish
 * if needed) and reads any other row as usual, so a ticket never changes results, only where the
 * bytes come from. Typical double-buffered loop: prefetch(step k+1); run(step k); release(ticket k).
 * A prefetch of more distinct rows than prefetch_rows stages the first prefetch_rows of them (in
 * row order); the lookup reads the rest itself. */

typedef struct eht_disk_ticket eht_disk_ticket;

/* eht_disk_opts.flags */
#define EHT_DISK_PREAD 0x1u /* gather with pread(2) instead of copies from the mapping */
#define EHT_DISK_URING 0x2u /* gather with io_uring reads, up to 512 in flight per thread (buffered:
			     * the tier lives on the page cache); -EOPNOTSUPP in a build without
			     * liburing. EHT_DISK_URING=1 in the environment sets it. For cold data:
			     * faster than mapped copies, but a read per row makes warm steps several
			     * times slower (docs/DISK.md). The default read already uses
			     * io_uring for uncached rows only. */
#define EHT_DISK_OPTS_FLAGS (EHT_DISK_PREAD | EHT_DISK_URING)

struct eht_disk_opts {
	uint32_t size;           /* sizeof(struct eht_disk_opts) */
	uint32_t flags;          /* EHT_DISK_* above */
	const char *weight;      /* weight tensor name (required) */
	const char *scale;       /* scale tensor name, or NULL: rows are the weight rows alone */
	uint32_t rank, nranks;   /* this process's share (nranks 0: rank 0 of 1) */
	uint64_t cache_bytes;    /* hot-row cache (0: 16 MiB; EHT_DISK_NO_CACHE: none) */
	unsigned io_threads;     /* prefetch reader threads (0: 32) */
	uint64_t prefetch_rows;  /* distinct rows per prefetch buffer (0: 196608) */
	unsigned prefetch_slots; /* tickets in flight at once (0: 2) */
	const char *name;        /* table name (0: the weight tensor's name) */
	/* row_count > 0: this process holds exactly rows [first_row, first_row + row_count) (e.g. its
	 * Engram head range from eht_engram_shard) instead of the rank / nranks split; ids outside are
	 * dead. Only that range is mapped. */
	uint64_t first_row, row_count;
};
#define EHT_DISK_NO_CACHE UINT64_MAX
#define EHT_DISK_DEFAULT_CACHE_BYTES (16ull << 20)

/* Opens rank's rows of the tensors as a disk-tier table (closed with eht_table_close). Returns 0;
 * -EINVAL (NULL path or weight name, unknown flags, rank >= nranks, a tensor that is not 2-D or whose
 * rows are not whole bytes, weight and scale rows differ, a row over 1 GiB); -ENOENT (no such
 * checkpoint or tensor); -ENOMEM; or the errors of eht_ckpt_open and eht_st_map_rows. */
EHT_API EHT_MUST_CHECK int eht_disk_open(const char *ckpt_path, const struct eht_disk_opts *opts,
		eht_table **out);

/* Starts gathering the rows of count ids (int32 or int64 as in eht_lookup_run, each id + id_offset
 * an absolute row; dead ids are skipped) and returns at once; ids may be reused when it returns.
 * flags must be 0. Returns 0; -EINVAL (not a disk table, bad arguments); -EBUSY (every prefetch
 * slot holds an unreleased ticket). */
EHT_API EHT_MUST_CHECK int eht_disk_prefetch(eht_table *table, const void *ids, int id_type,
		int64_t id_offset, uint64_t count,
		      uint32_t flags, eht_disk_ticket **out);
/* Waits until the ticket's reads are done. Returns 0 or the first read error (the lookup then reads
 * those rows itself and reports the error again).
 * A ticket outlives its table's eht_table_close: close finishes it (reads in flight complete, queued
 * ones are dropped, a thread waiting on it wakes), and from then on eht_disk_wait and eht_disk_release
 * return -EBADF naming the table and eht_disk_ticket_rows 0. Each ticket is still released once: that
 * release frees it (the last one also frees what the table kept for its tickets). */
EHT_API EHT_MUST_CHECK int eht_disk_wait(eht_disk_ticket *ticket);
/* Distinct rows the ticket staged (after it is done). */
EHT_API uint64_t eht_disk_ticket_rows(const eht_disk_ticket *ticket);
/* Waits for the ticket's reads and frees its slot; NULL is a no-op. Returns as eht_disk_wait
 * (-EINVAL for a ticket released already while its table is open; after its table's close a released
 * ticket is freed memory, as any released handle). */
EHT_API int eht_disk_release(eht_disk_ticket *ticket);

/* Compares every file of the table with what was seen at open: size, mtime, and the inode the path
 * names now. Returns 0 or -ESTALE with a message naming the file and what changed. */
EHT_API EHT_MUST_CHECK int eht_disk_check(eht_table *table);

/* Drops the table's rows from this process's mapping and the kernel's page cache
 * (MADV_DONTNEED + POSIX_FADV_DONTNEED on the row ranges) and empties the hot-row cache, so the
 * next reads are cold (benchmarks). Returns 0 or -EINVAL (not a disk table). */
EHT_API EHT_MUST_CHECK int eht_disk_drop_cache(eht_table *table);

struct eht_disk_stats {
	uint32_t size;          /* sizeof(struct eht_disk_stats), set by the caller */
	uint64_t rows_read;     /* rows copied from the files */
	uint64_t cache_hits;    /* rows served by the hot-row cache */
	uint64_t prefetch_hits; /* rows served from a prefetch buffer */
	uint64_t cache_slots;   /* rows the hot-row cache holds at most */
	/* The default read's split (0 under EHT_DISK_PREAD, EHT_DISK_URING or EHT_DISK_SPLIT=0): */
	uint64_t resident_rows;  /* rows whose pages were in the page cache: copied from the mapping */
	uint64_t uncached_rows;  /* rows with a page not in the page cache: read from the drive */
	uint64_t uncached_bytes; /* bytes of those pages (what the drive reads, at least) */
	uint32_t split_mode;     /* 0 no split, 1 uncached rows read with pread, 2 with io_uring */
};
/* Counters since open. Returns 0 or -EINVAL. */
EHT_API EHT_MUST_CHECK int eht_disk_stats(const eht_table *table, struct eht_disk_stats *stats);

/* ====================================================================================== serve == */
/* Serving a checkpoint's tables to a node's workers (src/serve): one process (`eht serve`, or any
 * program calling eht_serve_start) loads the tables once into shared memory; workers attach by key
 * at any time and map the same pages (host-NUMA chunks or region pages arrive as file descriptors
 * over a Unix socket in the abstract namespace "eht.serve.<uid>.<key>", checked with SO_PEERCRED).
 * Nothing is left in /dev/shm: region files are unlinked as soon as they are ready, so their pages
 * live exactly as long as some process maps them. A worker keeps its connection; when the server
 * exits (or is killed), the worker's next lookup fails with -ECONNRESET instead of reading tables
 * nobody serves any more. */

typedef struct eht_server eht_server;
typedef struct eht_client eht_client;

/* Default tensors: every Engram table, DeepSeek-V4.1's "layers.<L>.engram.embed.weight" (and the older
 * "*.engram.embedding.weight" naming), each joined with its ".scale". A pattern is fnmatch globs
 * separated by '|'. */
#define EHT_SERVE_DEFAULT_PATTERN "*engram.embed.weight|*.engram.embedding.weight"

/* Progress of loading, for progress bars: bytes done of total, table index and name. */
typedef void (*eht_serve_progress_fn)(void *arg, uint64_t done, uint64_t total, const char *table);

/* eht_serve_opts.flags: one copy of every table per NUMA node (numa_nodes, else the nodes of the
 * node's GPUs), each worker attaching to the copy of its GPU's node (its CPU's node without a GPU);
 * one copy, with a warning saying why, when they do not all fit or there is one node. */
#define EHT_SERVE_PER_NUMA 0x1u

struct eht_serve_opts {
	uint32_t size;         /* sizeof(struct eht_serve_opts) */
	uint32_t flags;        /* EHT_SERVE_* */
	const char *key;       /* attach key ([A-Za-z0-9._-], 1..64 chars); NULL: "default" */
	const char *pattern;   /* fnmatch pattern of weight tensors; NULL: EHT_SERVE_DEFAULT_PATTERN.
				* A matched tensor NAME.weight with a NAME.scale beside it (same rows)
				* becomes table NAME with packed rows (weight row bytes + scale row
				* bytes: 264 for Engram); any other matched 2-D tensor becomes a table
				* of its own rows, named after the tensor. */
	int tier;              /* 0 (auto: host-numa, then pinned region, then region; the pinned
				* region first when the huge page pool has room: eht_table_share), or
				* EHT_TIER_HOST_NUMA, EHT_TIER_REGION_PINNED, EHT_TIER_REGION or
				* EHT_TIER_DISK (rows stay in the files; workers read them themselves) */
	int device;            /* GPU whose host NUMA node gets the tables; -1: 0 when there is a GPU */
	unsigned threads;      /* loading threads; 0: one per CPU */
	eht_serve_progress_fn progress; /* may be NULL */
	void *progress_arg;
	const volatile int *cancel; /* may be NULL; loading stops with -EINTR soon after *cancel turns
				     * non-zero (read with __atomic_load_n: set it with __atomic_store_n
				     * from another thread, or plainly from a signal handler). Added
				     * later: a size without it is accepted. */
	const char *const *hotsets; /* NULL, or nhotsets hot-set files (`eht hotset build`), each "FILE"
				     * or "NAME=FILE": see eht_serve_start. Added later, as cancel. */
	size_t nhotsets;
	/* Added later, as cancel. With EHT_SERVE_PER_NUMA: the NUMA nodes to hold a copy (NULL: every
	 * node with a GPU). */
	const int *numa_nodes;
	size_t nnuma_nodes;
	/* The node's CPU budget for lookup pools, handed to each worker at attach (eht_table_copy's
	 * pool_threads): cpu_budget cores (0: the cores this process may use, by affinity and cgroup
	 * cpu.max, less 2 per worker for the engine's own threads) shared by `workers` worker
	 * processes (0: one per GPU of the node, at least 1), at least 1 each. A worker's
	 * eht_lookup_opts.threads or EHT_THREADS overrides it. */
	unsigned workers;
	unsigned cpu_budget;
};

/* Loads the tables of the checkpoint at path (file or directory, see eht_ckpt_open) and starts
 * serving attaches on a background thread.
 * Hot sets (opts->hotsets): each entry is "NAME=FILE" when it holds a '=' with no '/' before it (NAME:
 * a served table's name, as `eht serve` lists it), else a FILE for the only table served (with
 * several tables, name it; write ./a=b.hot for a file whose name holds '='). Each file is read and
 * checked once, before any table is loaded: every row inside the table's [0, rows), no row twice,
 * at most one file per table. Its rows travel to every worker at attach in a sealed read-only memfd
 * beside the table's descriptors (nothing in /dev/shm); the worker checks size, count and rows again
 * and finds them with eht_table_hotset.
 * Returns 0; -ENOENT (no tensor matches; names the pattern; a hot set naming a table not served),
 * -EINVAL (bad key, options, a weight and scale of different rows, a tensor that is not 2-D, a bad
 * hot-set file: names the file, the entry and the table's range), -EADDRINUSE (the key is being served already, or bound by another user: names its uid),
 * -ENOSPC / -ENOMEM (no tier could hold a table), -EINTR (opts->cancel), -EIO (the checkpoint
 * shrank or failed while loading), or the errors of eht_ckpt_open. */
EHT_API EHT_MUST_CHECK int eht_serve_start(const char *path, const struct eht_serve_opts *opts,
		eht_server **out);
/* Number of tables, and what table i is (tier, rows, row bytes, NUMA node, page size; for the disk
 * tier host and device_ptr are 0: workers read the files). info->size must be set. Returns 0 or
 * -EINVAL. */
EHT_API size_t eht_serve_table_count(const eht_server *server);
EHT_API EHT_MUST_CHECK int eht_serve_table_info(const eht_server *server, size_t i,
		struct eht_table_info *info);
/* Attaches served so far, and workers attached now. */
EHT_API uint64_t eht_serve_attaches(const eht_server *server);
EHT_API unsigned eht_serve_clients(const eht_server *server);
/* What the running servers of this user on this node hold, as JSON (malloc'd, free() it): for key,
 * one object {"key", "checkpoint", "pid", "uid", "device", "state" ("loading" or "ready"), "ready",
 * "uptime_s", "bytes" (in memory, once ready), "loaded_bytes" and "load_bytes" (loading progress),
 * "tables": [{"name", "tier", "rows", "row_bytes", "bytes", "numa_node", "page_size"}], "workers":
 * [{"pid", "uid", "gid", "device" (null: the attach protocol does not carry it), "attached_s"}]};
 * for key NULL, an array of them (servers found from /proc/net/unix). Asks each server over its
 * status socket ("eht.status.<uid>.<key>"), within 2 s. Returns 0; -ENOENT (no server holds key),
 * -EINVAL (bad key), -EPROTO, -ETIMEDOUT, -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_serve_status(const char *key, char **json);
/* Stops serving: closes every worker connection (their next lookup fails), then the tables.
 * Returns 0 or the first teardown error; NULL is a no-op. */
EHT_API int eht_serve_stop(eht_server *server);

struct eht_attach_opts {
	uint32_t size;       /* sizeof(struct eht_attach_opts) */
	uint32_t flags;      /* 0 or EHT_ATTACH_WAIT (EHT_ATTACH_FAIL_FAST: the default) */
	int device;          /* GPU this worker looks up from (tables are mapped/pinned for it); -1: none */
	uint32_t timeout_ms; /* wait for the server (it may still be loading); 0: 60000 */
	uint32_t rank, nranks; /* tiers that split a table's rows among workers (the disk tier): this
				* worker's share of the rows (0 and 1: all rows) */
	/* Tiers that split a table's rows among workers (today the disk tier, hence the field's name,
	 * kept for the ABI): the rows this worker maps of each such served table, instead of the even
	 * rank / nranks split (SGLang's rule), e.g. its Engram head range (eht_engram_shard, vLLM's
	 * rule). Called during eht_attach once per such table with its name and rows; returns 0 and sets
	 * [*first_row, *first_row + *row_count) inside [0, rows) (row_count 0: the even split), or a
	 * negative errno, which fails the attach. NULL: the even split for every table. */
	int (*disk_rows)(void *arg, const char *name, uint64_t rows, uint64_t *first_row, uint64_t *row_count);
	void *disk_rows_arg;
};

/* eht_attach_opts.flags. By default, when no server holds the key eht_attach fails at once with
 * -ENOENT (as Python's eht.attach): a server that holds it is still waited for while it loads.
 * EHT_ATTACH_WAIT: wait up to timeout_ms for a server to start serving the key. EHT_ATTACH_FAIL_FAST
 * (the default now) is accepted as before. */
#define EHT_ATTACH_FAIL_FAST 0x1u
#define EHT_ATTACH_WAIT 0x2u

/* Attaches to the tables served under key. Returns 0; -ENOENT (no server holds the key, without
 * EHT_ATTACH_WAIT), -ETIMEDOUT (no server answered in time, naming the key), -ECONNRESET (the server went away), -EPROTO (another version of eht serves
 * the key), -EACCES, or the errors of mapping a tier. */
EHT_API EHT_MUST_CHECK int eht_attach(const char *key, const struct eht_attach_opts *opts, eht_client **out);
/* The tables, in the server's order; owned by the client (valid until eht_detach). */
EHT_API size_t eht_client_table_count(const eht_client *client);
EHT_API EHT_MUST_CHECK int eht_client_table(eht_client *client, size_t i, eht_table **table);
/* Table by name; -ENOENT when the server has no such table. */
EHT_API EHT_MUST_CHECK int eht_client_find(eht_client *client, const char *name, eht_table **table);
/* 0 while the server is alive; -ECONNRESET once it is gone. Every lookup on a client's table
 * checks this first. */
EHT_API EHT_MUST_CHECK int eht_client_check(eht_client *client);
/* Unmaps every table and closes the connection; NULL is a no-op. Returns 0 or the first error. */
EHT_API int eht_detach(eht_client *client);

/* Engram n-gram hashing, its layout and per-request state: eht_engram.h. */
#include "eht_engram.h"

#ifdef __cplusplus
}
#endif
#endif
