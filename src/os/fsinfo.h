/* SPDX-License-Identifier: Apache-2.0 */
/* fsinfo.h: what a region directory is (tmpfs, hugetlbfs, other), its free space, huge page modes. */
#ifndef EHT_OS_FSINFO_H
#define EHT_OS_FSINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct eht_fs_info {
	bool tmpfs;
	bool hugetlbfs;
	uint64_t page_size;  /* the huge page size on hugetlbfs, else the base page size */
	uint64_t free_bytes; /* statvfs f_bavail (hugetlbfs without a size limit: free huge pages) */
	uint64_t total_bytes;
};

/* statfs/statvfs of dir. Returns 0 or -errno with a message naming dir. */
int eht_fs_info(const char *dir, struct eht_fs_info *fi);
/* Free huge pages of a size, on one node (node >= 0) or the whole machine, in bytes. */
uint64_t eht_hugetlb_free(uint64_t page_size, int node);
/* The default huge page size (/proc/meminfo Hugepagesize), 0 when the kernel has none. */
uint64_t eht_hugetlb_default_size(void);
/* The machine's pool of huge pages of one size (0: the default size), in pages. */
struct eht_hugetlb_pool {
	uint64_t page_size;
	uint64_t total, free, reserved; /* nr_hugepages, free_hugepages, resv_hugepages */
	uint64_t available;             /* free - reserved: what a new mapping can still get */
};
/* Returns 0, or -ENOENT (no huge pages of that size; *p zeroed but page_size). */
int eht_hugetlb_pool(uint64_t page_size, struct eht_hugetlb_pool *p);
/* The huge pages of page_size a region of `bytes` rows takes: a header page and the rows. */
static inline uint64_t eht_hugetlb_region_pages(uint64_t bytes, uint64_t page_size)
{
	return 1 + (bytes + page_size - 1) / page_size;
}
/* The active word of /sys/kernel/mm/transparent_hugepage/shmem_enabled ("never", "advise",
 * "always", "within_size", "deny", "force") into buf; "unknown" when unreadable. */
const char *eht_thp_shmem_mode(char *buf, size_t len);
/* The directory regions live in: dir, else $EHT_SHM_DIR, else /dev/shm. */
const char *eht_region_dir(const char *dir);

#endif
