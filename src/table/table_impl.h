/* SPDX-License-Identifier: Apache-2.0 */
/* table_impl.h: the tier interface: what every tier provides behind an eht_table (describe, read
 * rows, export to another process, close), and the registry through which a process imports a table
 * by the tier id another process exported it under. Each tier lives in its own folder under
 * src/table and fills these in; nothing outside src/table names a tier. */
#ifndef EHT_TABLE_TABLE_IMPL_H
#define EHT_TABLE_TABLE_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "eht.h"

/* Where read_rows writes: host memory (0), or device memory of the table's GPU (a CUdeviceptr in
 * dst), for tiers that read storage straight into GPU memory (GPU-direct storage). */
#define EHT_ROWS_TO_DEVICE 0x1u

/* A tier's operations. eht_table_new fills every one a tier leaves NULL with a default (below), so
 * callers of t->ops never test for NULL; the exported description's "tier" is the registry's id of
 * the table's tier number (tiers.c), not named here. */
struct eht_table_ops {
	/* Fills the tier's fields of info from the tier's own state: tier, numa_node, page_size, host,
	 * device_ptr, device. eht_table_new calls it once, so the info users see is the tier's word.
	 * Default (test doubles only): the info given to eht_table_new stands. */
	void (*describe)(const eht_table *t, struct eht_table_info *info);
	/* Copies rows[0..n) (absolute row numbers inside [first_row, first_row + local_rows)) into
	 * dst, n * row_bytes bytes, in the given order; flags EHT_ROWS_TO_DEVICE: dst is device memory
	 * (a tier that cannot write there refuses with -EOPNOTSUPP, before reading anything). Needed
	 * by tiers without a host pointer (disk). Default: copies from info.host into host memory,
	 * refuses device memory (the GPU reads such tables through info.device_ptr, or the caller
	 * stages), and -EOPNOTSUPP where there is no host pointer. Returns 0 or -errno naming the file
	 * and offset. */
	int (*read_rows)(eht_table *t, const uint64_t *rows, size_t n, void *dst, unsigned flags);
	/* Exports t for another process of this node: adds the tier's fields to desc (a JSON object that
	 * already holds "name", "tier", "rows" and "row_bytes") and returns in *fds (malloc'ed, *nfds
	 * entries; the caller closes and frees them) the descriptors that process needs. On failure
	 * nothing is left open. Default: -ENOTSUP, the tier cannot be exported (caller-owned memory). */
	int (*export_to)(const eht_table *t, json_t *desc, int **fds, size_t *nfds);
	/* The owner has written the rows and will only read them from now on: the tier forbids writes
	 * by the processes it exports to where it can (the region: its file loses its write bits, so a
	 * read-only descriptor cannot be reopened writable). Best effort; default: nothing to do. */
	void (*seal)(eht_table *t);
	/* Tier teardown: every step attempted, first error returned. Default: nothing, 0. */
	int (*close)(eht_table *t);
};

/* A table over split storage (the memory tier's eht_table_wrap_split*): row r is its weights at
 * w + r * wb followed by its scales at s + r * sb, no packed row anywhere (info.host NULL,
 * info.device_ptr 0). dw, ds: the same two arrays as GPU info.device reads them in place (0: CPU
 * reads only). All zero for a table of packed rows. */
struct eht_table_split {
	const uint8_t *w, *s;
	uint64_t dw, ds;
	uint32_t wb, sb;
};

struct eht_table {
	struct eht_table_info info;
	const struct eht_table_ops *ops; /* &ops_full: every op set, call without testing */
	const struct eht_table_ops *tier_ops; /* as the tier gave them: which tier made t (identity) */
	struct eht_table_ops ops_full;
	void *impl; /* the tier's own state */
	/* Optional liveness hook, whatever the tier: 0 while the table may be used, else -errno (a
	 * served table whose server is gone: -ECONNRESET). eht_lookup_run calls it first. */
	int (*alive)(void *arg);
	void *alive_arg;
	char name[256];
	/* The hot set its server chose for it (absolute rows, checked distinct and inside [0, rows)),
	 * malloc'ed and freed with the table; NULL when none (eht_table_hotset). */
	int64_t *hot_rows;
	uint64_t hot_n;
	/* Which copy of the table this is (eht_table_copy): one per NUMA node with EHT_SHARE_PER_NUMA
	 * or eht serve --per-numa; eht_table_new sets one copy, writer, on info's node. */
	struct eht_table_copy copy;
	struct eht_table_split split; /* set by the split tier after eht_table_new; else zero */
};

/* Records which copy t is (see struct eht_table_copy). */
void eht_table_set_copy(eht_table *t, int index, int count, int numa_node, int writer);

/* Gives t the hot set rows[0..n) (malloc'ed; t frees it), replacing any it had. The caller has checked
 * the rows (src/serve/serve_hot.c). */
void eht_table_set_hotset(eht_table *t, int64_t *rows, uint64_t n);

struct eht_page_stat;
/* smaps' word on the CPU mapping of t's rows (os/pagesize.h). 0, or -ENOENT (no host pointer). */
int eht_table_page_stat(const eht_table *t, struct eht_page_stat *st);
/* eht_table_page_size in words for reports: "2 MiB (hugetlb)", "4 KiB (page cache)", "unknown". */
const char *eht_table_page_text(const eht_table *t, char *buf, size_t len);

/* 0, or the alive hook's error (with its message). */
int eht_table_check(eht_table *t);

/* Allocates a table with the given info (copied; name copied) and tier ops, then lets the tier
 * describe itself (ops->describe). Returns 0 or -ENOMEM. */
int eht_table_new(const struct eht_table_info *info, const struct eht_table_ops *ops, void *impl,
		  eht_table **out);

/* Reads rows of t (see eht_table_ops.read_rows); the lookup engine's HOST strategy and tools call
 * this. Returns 0, -EOPNOTSUPP (that destination is not one this tier writes) or the tier's error. */
int eht_table_read_rows(eht_table *t, const uint64_t *rows, size_t n, void *dst, unsigned flags);

/* Exports t for another process of this node: desc gets "name", "tier" (the registry's id), "rows",
 * "row_bytes" and the tier's own fields; *fds (malloc'ed or NULL, *nfds entries) the descriptors.
 * Returns 0, -ENOTSUP (a tier that cannot be exported) or the tier's error. */
int eht_table_export(const eht_table *t, json_t *desc, int **fds, size_t *nfds);

/* The tier's seal (see eht_table_ops.seal), if it has one. */
void eht_table_seal(eht_table *t);

/* What a tier keeps from one import of an attach to the next (the disk tier: the checkpoint, opened
 * once for all its tables); zeroed before the first, released by eht_table_import_end. */
struct eht_import_keep {
	eht_ckpt *ckpt;
};

/* What an importing process brings besides the description and the descriptors. */
struct eht_import_args {
	int device;           /* GPU to map or pin for, -1: none */
	uint32_t rank, nranks; /* this process's share, for tiers that split a table's rows */
	/* For tiers that split rows: the rows to map instead of the share (eht_attach_opts.disk_rows);
	 * NULL: the share */
	int (*rows_of)(void *arg, const char *name, uint64_t rows, uint64_t *first_row, uint64_t *row_count);
	void *rows_of_arg;
	struct eht_import_keep *keep; /* NULL, or the attach's: see struct eht_import_keep */
};

/* Imports a table that eht_table_export described: finds the tier by desc's "tier" and calls its
 * import. fds[0..nfds) are the descriptors exported with it; the tier takes those it keeps and sets
 * them to -1, the caller closes the rest. Sizes in desc are checked against the descriptors (fstat)
 * before anything is mapped. Returns 0, -EPROTO (unknown tier, inconsistent description) or the
 * tier's error. */
int eht_table_import(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a, eht_table **out);
/* Releases what the tiers kept across an attach's imports (keep zeroed after). */
void eht_table_import_end(struct eht_import_keep *keep);

/* One tier as the registry knows it: the one list of tier names. eht_tier_find / eht_tier_of return
 * the entry with every op set (a NULL one of eht_tiers[] filled with a default that refuses) and
 * caps saying which ops are the tier's own, so callers choose by caps and call without testing. */
struct eht_tier_def {
	const char *id;    /* in an exported description ("tier"); eht_tier_find's key */
	const char *label; /* for messages: "host-NUMA", "region" */
	int tiers[2];      /* EHT_TIER_* values it makes (0: unused slot) */
	const char *names[2]; /* eht_tier_name of tiers[0], tiers[1] */
	unsigned caps;     /* EHT_TIER_CAN_* (set by the registry from the ops given) */
	/* Shares bytes across group g in this tier (NULL: the tier cannot be shared), every rank ending
	 * with the same result. tier is the caller's request (0: any; one of tiers[] forces). With quiet
	 * no warning is printed (eht_table_share words the one warning). Returns 0 or -errno. */
	int (*share)(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, int tier, bool quiet,
		     eht_table **out);
	/* Opens a checkpoint's table where its rows lie, without copying them (NULL: the tier holds rows
	 * in memory and is filled by its user). ck: the checkpoint, open (the caller closes it). flags:
	 * EHT_OPEN_EXPORT_ONLY. */
	int (*open_in_place)(eht_ckpt *ck, const char *weight, const char *scale, const char *name,
			     uint32_t rank, uint32_t nranks, unsigned flags, eht_table **out);
	/* See eht_table_import (desc's "tier" already matched). */
	int (*import)(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a, eht_table **out);
	/* Appended to the fallback warning when eht_table_share lands on this tier ("" when none). */
	const char *fallback_note;
	bool wraps; /* eht_table_wrap makes it (EHT_TIER_CAP_WRAP) */
};

#define EHT_TIER_CAN_SHARE 0x1u  /* share is the tier's own */
#define EHT_TIER_IN_PLACE 0x2u   /* open_in_place is the tier's own */
#define EHT_TIER_CAN_IMPORT 0x4u /* import is the tier's own */

/* open_in_place flag: the opener only describes and exports the table (eht serve), never reads its
 * rows, so the tier keeps as little as it can (the disk tier: no row cache). */
#define EHT_OPEN_EXPORT_ONLY 0x1u

/* The registry (ops filled), in eht_table_share's order of preference, ending with an entry whose
 * id is NULL. */
const struct eht_tier_def *eht_tier_list(void);
/* The registry entry by id, or by EHT_TIER_* value; NULL when unknown. */
const struct eht_tier_def *eht_tier_find(const char *id);
const struct eht_tier_def *eht_tier_of(int tier);

/* Fault injection (fault.c) for the tiers' share steps: EHT_TEST_FAULT="<step>[:rank=<r>][,...]" makes
 * `step` fail on rank r (every rank when no rank is given). Returns 0, or -EIO with "injected
 * fault ..." as the message. */
int eht_fault(const char *step, int rank);

/* The JSON helpers tiers use to read a description: the value, or 0 / NULL when missing. */
static inline uint64_t eht_desc_u64(json_t *desc, const char *key)
{
	return (uint64_t)json_integer_value(json_object_get(desc, key));
}
static inline const char *eht_desc_str(json_t *desc, const char *key)
{
	return json_string_value(json_object_get(desc, key));
}

#endif
