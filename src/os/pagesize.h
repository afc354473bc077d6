/* SPDX-License-Identifier: Apache-2.0 */
/* pagesize.h: the CPU page size a range of this process's memory is mapped with (from /proc/self/smaps). */
#ifndef EHT_OS_PAGESIZE_H
#define EHT_OS_PAGESIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What /proc/self/smaps says about the mappings covering a range (a mapping only partly inside it
 * counts in proportion). */
struct eht_page_stat {
	uint64_t mapped;      /* bytes of the range inside mappings */
	uint64_t resident;    /* resident bytes (Rss, plus hugetlb pages, which Rss leaves out) */
	uint64_t huge;        /* resident bytes on huge pages: hugetlb, or PMD-mapped THP (anon, shmem, file) */
	uint64_t kernel_page; /* the largest KernelPageSize of those mappings (2 MiB+ for hugetlb) */
	bool hugetlb;         /* some mapping is hugetlb (hugetlbfs, memfd MFD_HUGETLB, MAP_HUGETLB) */
	bool thp_advised;     /* some mapping has MADV_HUGEPAGE (VmFlags hg) */
	bool pfnmap;          /* some mapping is a driver's (VmFlags pf / io): smaps cannot see its page size */
	bool thp_eligible;    /* some mapping may get transparent huge pages (THPeligible: 1) */
};

/* Fills *st for [addr, addr + len). Returns 0, or -errno (smaps unreadable: -ENOENT etc.). */
int eht_page_stat(const void *addr, size_t len, struct eht_page_stat *st);

/* The page size most of the range's resident bytes are mapped with: the hugetlb page size; 2 MiB
 * THP (the PMD size) when at least half of the resident bytes are PMD-mapped; else the base page
 * size; with nothing resident yet, the mapping's own page size (a fresh mapping of a 4 KiB file).
 * 0: unknown (nothing resident of a THP-eligible mapping, or a driver's PFN map). */
uint64_t eht_page_stat_size(const struct eht_page_stat *st);

/* "2 MiB (hugetlb)", "2 MiB (THP 97%)", "4 KiB (THP advised, 3% huge)", "unknown (driver mapping)",
 * "4 KiB" into buf; returns buf. */
const char *eht_page_stat_text(const struct eht_page_stat *st, char *buf, size_t len);

#endif
