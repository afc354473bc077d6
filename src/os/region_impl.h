/* SPDX-License-Identifier: Apache-2.0 */
/* region_impl.h: the on-file header of a shared region and the per-process handle behind eht_region. */
#ifndef EHT_OS_REGION_IMPL_H
#define EHT_OS_REGION_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "eht.h"
#include "os/region_gpu.h"
#include "util/name.h"

#define REGION_MAGIC "EHTREGN"      /* 7 chars + NUL = 8 bytes */
#define REGION_VERSION 1u
#define REGION_PREFIX "eht."        /* file name = prefix + region name */
#define REGION_TMP_PREFIX ".eht-tmp." /* a creator's file before it is linked under its name */
#define REGION_NAME_MAX 200

/* Policy bits kept in the header (a subset of the open flags). */
#define REGION_HDR_POLICY (EHT_REGION_KEEP | EHT_REGION_UNLINK_WHEN_MAPPED | EHT_REGION_THP)
#define REGION_HDR_HUGETLB 0x10000u
/* Internal open flag (eht_region_share for a group of one, i.e. eht serve): the region is a memfd
 * with no name in the directory (nobody opens it by name; it goes out by descriptor), which
 * region_seal can seal once filled. On a hugetlbfs directory it stays a named file for now. */
#define REGION_MEMFD 0x40000000u
#define REGION_HDR_ANON 0x20000u /* a memfd (EHT_REGION_HUGE): no name in the directory, shared by descriptor */

/* The first bytes of the file. Shared by every process mapping it; ready and attached change after
 * creation and are accessed atomically (lock-free 32-bit atomics work across processes). */
struct region_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_size;
	uint64_t file_bytes;
	uint64_t data_offset;
	uint64_t data_bytes;
	uint64_t rows;
	uint64_t row_bytes;
	uint64_t page_size;
	uint32_t policy;         /* REGION_HDR_POLICY bits | REGION_HDR_HUGETLB */
	uint32_t expected_peers;
	int32_t numa_node;
	int32_t creator_pid;
	uint32_t creator_uid;
	uint32_t reserved0;
	uint64_t creator_start;  /* creator's start time, clock ticks after boot (/proc/PID/stat) */
	uint64_t created_ns;     /* CLOCK_REALTIME */
	uint64_t ready_ns;
	char boot_id[40];
	char name[208];
	_Atomic uint32_t ready;
	_Atomic uint32_t attached; /* processes that mapped the ready region (unlink-when-mapped) */
	uint8_t reserved[64];
};

struct eht_region {
	char name[REGION_NAME_MAX + 1];
	char path[4096];
	int fd;
	void *map;           /* whole file */
	size_t map_bytes;
	struct region_hdr *hdr;
	void *data;
	uint64_t bytes;
	uint64_t page_size;
	int numa_node;
	bool creator;
	bool ready;
	bool pinned;
	int device;
	uint64_t dptr;
	const struct region_gpu_ops *gpu; /* what pinned it, to unpin at close */
	dev_t dev;           /* identity of the file, to unlink only our own */
	ino_t ino;
	bool anon;           /* a memfd (REGION_MEMFD, or EHT_REGION_HUGE's hugetlb one): no name to unlink */
	pid_t pid;           /* the process that opened or created it: a forked child's close never
			      * unlinks and never calls the driver (its pins are the parent's) */
	bool sealed;         /* region_seal done: no descriptor can write the file any more */
};

/* Validates a region name (util/name.h, file-name rules). Returns 0 or -EINVAL naming the rule broken. */
#define region_name_check(name) eht_name_check("region name", (name), REGION_NAME_MAX, true)
/* eht_region_open with the GPU steps (the device's host NUMA node for EHT_REGION_NUMA_DEVICE) taken
 * from gpu, which may be NULL. The public eht_region_open passes the CUDA-backed ops of the region
 * tier (src/table), so this layer never calls the driver. */
int region_open(const char *name, uint64_t bytes, const struct eht_region_opts *opts,
		const struct region_gpu_ops *gpu, eht_region **out);
/* Seals a memfd region its creator has filled and marked ready: the mapping becomes read-only and
 * the file gets F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW, so no descriptor of it, reopened through
 * /proc with write access or not, root's included, can change a byte (write, shared writable maps,
 * hole punching and truncation all fail with EPERM); a fchmod cannot undo a seal. The region must
 * not be pinned (a pin holds page references that the write seal waits for). Returns 0, -ENOTSUP
 * (a named region: files in a directory cannot be sealed), -EBUSY (pinned) or -errno. */
int region_seal(eht_region *r);
#define REGION_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)
/* Opens the ready region behind fd (a memfd region another rank created, received by descriptor):
 * fd is dup'ed, the caller keeps its own. opts as for an opener (flags, geometry, expected_peers).
 * Returns 0 or -errno. */
int region_open_fd(const char *name, int fd, const struct eht_region_opts *opts, eht_region **out);
/* eht_region_pin through gpu (NULL: -ENODEV). The region keeps gpu to unpin itself at close. */
int region_pin(eht_region *r, int device, const struct region_gpu_ops *gpu);
/* OFD locks on the whole file: type F_RDLCK / F_WRLCK / F_UNLCK, never blocking. 0, -EAGAIN or -errno. */
int region_lock(int fd, short type);
/* The lock another open file holds (F_UNLCK when none), or -errno. */
int region_lock_probe(int fd);
/* Reads and checks the header of an open region file. Returns 0 or -EINVAL naming path. */
int region_hdr_read(int fd, const char *path, struct region_hdr *h);
/* Unlinks path only when it still names the file (dev, ino). Returns 0, -ESTALE when it names
 * another file (or none), or -errno. */
int region_unlink_if_same(const char *path, dev_t dev, ino_t ino);
/* This boot's id and a process's start time (0 when unknown or a zombie). */
void region_boot_id(char out[40]);
uint64_t region_proc_start(pid_t pid);
/* Removes this user's regions in dir that a dead creator left (killed while populating, or
 * orphaned), as the next creator does before making one. Returns how many; never fails. */
int region_reclaim_dead(const char *dir);
/* 64 unpredictable bits (getrandom; a clock-and-pid mix where it is unavailable). */
uint64_t region_random(void);
/* Maps the whole file read-write and shared; with align above the page size the mapping starts on an
 * align boundary. NULL with errno on failure. */
void *region_map_file(int fd, size_t len, size_t align);
/* b as "1.50 GiB", "3.0 MiB" or "12 bytes" in buf, for messages. Returns buf. */
char *region_fmt_bytes(uint64_t b, char *buf, size_t len);
/* Frees a handle that never left the library: its mapping and descriptor (no unlink, no unpin). */
void region_free(struct eht_region *r);

#endif
