/* SPDX-License-Identifier: Apache-2.0 */
/* region_util.c: OFD locks, header checks, creator identity and mapping helpers shared by open, create,
 * attach, list and gc. */
#include "os/region_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "os/map_aligned.h"
#include "util/err.h"
#include "util/clock.h"

_Static_assert(sizeof(struct region_hdr) <= 4096, "the region header must fit the first page");
_Static_assert(offsetof(struct region_hdr, ready) % 4 == 0, "ready must be 4-byte aligned");

int region_lock(int fd, short type)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	return (errno == EAGAIN || errno == EACCES) ? -EAGAIN : -errno;
}

int region_lock_probe(int fd)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
	if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
		return -errno;
	return fl.l_type;
}

int region_hdr_read(int fd, const char *path, struct region_hdr *h)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return eht_err_sys(errno, "region %s: fstat", path);
	ssize_t n = pread(fd, h, sizeof(*h), 0);
	if (n < 0)
		return eht_err_sys(errno, "region %s: reading the header", path);
	if ((size_t)n < sizeof(*h) || memcmp(h->magic, REGION_MAGIC, 8) != 0)
		return eht_err(EINVAL, "%s is not an eht region (%s)", path,
			       (size_t)n < sizeof(*h) ? "shorter than a header" : "bad magic");
	if (h->version != REGION_VERSION || h->hdr_size != sizeof(*h))
		return eht_err(EINVAL, "%s: region header version %u (size %u), this library reads version %u (size %zu)",
			       path, h->version, h->hdr_size, REGION_VERSION, sizeof(*h));
	if (h->data_offset < sizeof(*h) || h->data_offset > h->file_bytes ||
	    h->data_bytes > h->file_bytes - h->data_offset || (uint64_t)st.st_size != h->file_bytes ||
	    (h->rows && h->rows * h->row_bytes != h->data_bytes))
		return eht_err(EINVAL, "%s: inconsistent region header (file %lld bytes, header says %llu, data %llu at %llu)",
			       path, (long long)st.st_size, (unsigned long long)h->file_bytes,
			       (unsigned long long)h->data_bytes, (unsigned long long)h->data_offset);
	return 0;
}

int region_unlink_if_same(const char *path, dev_t dev, ino_t ino)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? -ESTALE : -errno;
	if (st.st_dev != dev || st.st_ino != ino)
		return -ESTALE;
	return unlink(path) == 0 ? 0 : -errno;
}

void region_boot_id(char out[40])
{
	memset(out, 0, 40);
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return;
	if (!fgets(out, 40, f))
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

uint64_t region_proc_start(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Field 22 (starttime); the command name (field 2) may hold spaces, so count after ')'. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0; /* a zombie has run its course: not alive */
	unsigned long long v = 0;
	int field = 2;
	char *save = NULL;
	for (char *tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		if (++field == 22) {
			v = strtoull(tok, NULL, 10);
			break;
		}
	return v;
}

uint64_t region_random(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	v = eht_now_ns() ^ ((uint64_t)getpid() << 16) ^ (uint64_t)(uintptr_t)&v;
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	return v ^ (v >> 33);
}

void *region_map_file(int fd, size_t len, size_t align)
{
	void *p = eht_map_aligned(fd, len, PROT_READ | PROT_WRITE, MAP_SHARED, align <= 4096 ? 0 : align);
	return p == MAP_FAILED ? NULL : p;
}

char *region_fmt_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", (double)b / (double)(1ull << 20));
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
	return buf;
}

void region_free(struct eht_region *r)
{
	if (r->map)
		munmap(r->map, r->map_bytes);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}
