/* SPDX-License-Identifier: Apache-2.0 */
/* map_aligned.h: mmap of a file at an address aligned to its huge pages (shared by region open and import). */
#ifndef EHT_OS_MAP_ALIGNED_H
#define EHT_OS_MAP_ALIGNED_H

#include <stddef.h>

/* mmap(NULL, len, prot, flags, fd, 0), at an address aligned to align (0: anywhere; else a power of
 * two): huge pages of a file map as huge pages only at an address aligned to them. MAP_FAILED with
 * errno on failure. */
void *eht_map_aligned(int fd, size_t len, int prot, int flags, size_t align);

#endif
