/* SPDX-License-Identifier: Apache-2.0 */
/* region_req.h: one eht_region_open call's request, checked (region.c), and the two ways it ends:
 * this process creates the region (region_create.c) or attaches to one (region_attach.c). */
#ifndef EHT_OS_REGION_REQ_H
#define EHT_OS_REGION_REQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "os/fsinfo.h"
#include "os/region_impl.h"

#define THP_SIZE (2ull << 20)
#define RETRY 1 /* internal: start over (the name changed under us) */

/* What one eht_region_open call asked for, checked and with defaults filled in. */
struct req {
	const char *name;
	char dir[4096];
	char path[4096];
	uint32_t flags;
	uint64_t bytes, rows, row_bytes;
	unsigned expected_peers, threads;
	double timeout_s;
	int numa_node, device;
	gid_t gid;
	struct eht_fs_info fs;
	const struct region_gpu_ops *gpu; /* may be NULL: no GPU steps */
	const volatile int *cancel;       /* may be NULL: opts->cancel, read by populate */
	bool no_memfd; /* EHT_REGION_HUGE: a hugetlb memfd failed once; the directory's pages then */
};

/* Creates the region under a temporary name, then links it under its name so that the name only
 * ever shows a file with a full header whose creator holds the write lock; populates it. Returns 0,
 * RETRY (another creator won, or no hugetlb memfd: q->no_memfd set) or -errno. */
int region_create(struct req *q, struct eht_region **out);
/* Waits for the region behind fd to be ready and maps it. named: fd was opened by its name (its
 * owner and mode are checked first); else it came by descriptor from a peer. Returns 0 (fd now
 * owned by *out), RETRY or -errno. */
int region_attach(struct req *q, int fd, bool named, double deadline, struct eht_region **out);
/* Counts r as mapped by one more process; the last expected peer of an unlink-when-mapped region
 * unlinks its name. */
void region_count_attach(struct eht_region *r);

#endif
