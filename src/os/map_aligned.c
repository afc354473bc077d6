/* SPDX-License-Identifier: Apache-2.0 */
/* map_aligned.c: mmap of a file at an aligned address (reserve len + align, map inside, trim the rest). */
#include "os/map_aligned.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

void *eht_map_aligned(int fd, size_t len, int prot, int flags, size_t align)
{
	if (!align)
		return mmap(NULL, len, prot, flags, fd, 0);
	char *res = mmap(NULL, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return MAP_FAILED;
	char *a = (char *)(((uintptr_t)res + align - 1) & ~(uintptr_t)(align - 1));
	void *p = mmap(a, len, prot, flags | MAP_FIXED, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		munmap(res, len + align);
		errno = e;
		return MAP_FAILED;
	}
	if (a > res)
		munmap(res, (size_t)(a - res));
	size_t tail = (size_t)((res + len + align) - (a + len));
	if (tail)
		munmap(a + len, tail);
	return a;
}
