/* SPDX-License-Identifier: Apache-2.0 */
/* table_impl.h: what every tier provides behind an eht_table. */
#ifndef EHT_TABLE_TABLE_IMPL_H
#define EHT_TABLE_TABLE_IMPL_H

#include "eht.h"

struct eht_table_ops {
	/* Copies rows[0..n) (absolute row numbers inside [first_row, first_row + local_rows)) into
	 * dst, n * row_bytes bytes, in the given order. Needed only by tiers without a host pointer
	 * (disk); NULL elsewhere. Returns 0 or -errno naming the file and offset. */
	int (*read_rows)(eht_table *t, const uint64_t *rows, size_t n, void *dst);
	/* Tier teardown: every step attempted, first error returned. May be NULL. */
	int (*close)(eht_table *t);
};

struct eht_table {
	struct eht_table_info info;
	const struct eht_table_ops *ops;
	void *impl; /* the tier's own state */
	/* Optional liveness hook, whatever the tier: 0 while the table may be used, else -errno (a
	 * served table whose server is gone: -ECONNRESET). eht_lookup_run calls it first. */
	int (*alive)(void *arg);
	void *alive_arg;
	char name[256];
};

/* 0, or the alive hook's error (with its message). */
int eht_table_check(eht_table *t);

/* Allocates a table with the given info (copied; name copied) and tier ops. Returns 0 or -ENOMEM. */
int eht_table_new(const struct eht_table_info *info, const struct eht_table_ops *ops, void *impl,
		  eht_table **out);

#endif
