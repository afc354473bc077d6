/* SPDX-License-Identifier: Apache-2.0 */
/* fsinfo.c: statfs-based detection of tmpfs and hugetlbfs, free space, THP modes from sysfs. */
#include "os/fsinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/err.h"
#include "util/settings.h"

#define TMPFS_MAGIC_ 0x01021994
#define HUGETLBFS_MAGIC_ 0x958458f6

const char *eht_region_dir(const char *dir)
{
	if (dir && *dir)
		return dir;
	return eht_setting_str(EHT_SET_SHM_DIR);
}

/* The number a sysfs file holds, 0 when unreadable. */
static uint64_t read_count(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	unsigned long long n = 0;
	if (fscanf(f, "%llu", &n) != 1)
		n = 0;
	fclose(f);
	return n;
}

uint64_t eht_hugetlb_free(uint64_t page_size, int node)
{
	char path[160];
	if (node >= 0)
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/hugepages/hugepages-%llukB/free_hugepages",
			 node, (unsigned long long)(page_size >> 10));
	else
		snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%llukB/free_hugepages",
			 (unsigned long long)(page_size >> 10));
	return read_count(path) * page_size;
}

/* One number from a hugepages sysfs file of the given page size (whole machine), 0 when unreadable. */
static uint64_t hugetlb_count(uint64_t page_size, const char *file)
{
	char path[160];
	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%llukB/%s", (unsigned long long)(page_size >> 10),
		 file);
	return read_count(path);
}

uint64_t eht_hugetlb_default_size(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return 0;
	char line[256];
	unsigned long long kb = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Hugepagesize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb << 10;
}

int eht_hugetlb_pool(uint64_t page_size, struct eht_hugetlb_pool *p)
{
	memset(p, 0, sizeof(*p));
	p->page_size = page_size ? page_size : eht_hugetlb_default_size();
	if (!p->page_size)
		return -ENOENT;
	p->total = hugetlb_count(p->page_size, "nr_hugepages");
	p->free = hugetlb_count(p->page_size, "free_hugepages");
	p->reserved = hugetlb_count(p->page_size, "resv_hugepages");
	/* Reserved pages are free but promised to mappings made already. */
	p->available = p->free > p->reserved ? p->free - p->reserved : 0;
	return 0;
}

int eht_fs_info(const char *dir, struct eht_fs_info *fi)
{
	memset(fi, 0, sizeof(*fi));
	struct statfs sf;
	struct statvfs sv;
	if (statfs(dir, &sf) != 0 || statvfs(dir, &sv) != 0)
		return eht_err_sys(errno, "region directory %s", dir);
	fi->tmpfs = (unsigned long)sf.f_type == TMPFS_MAGIC_;
	fi->hugetlbfs = (unsigned long)sf.f_type == HUGETLBFS_MAGIC_;
	long ps = sysconf(_SC_PAGESIZE);
	fi->page_size = fi->hugetlbfs ? (uint64_t)sf.f_bsize : (uint64_t)(ps > 0 ? ps : 4096);
	fi->free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	fi->total_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
	if (fi->hugetlbfs && sv.f_blocks == 0) {
		/* No size= limit on the mount: the pool of free huge pages is the limit. */
		fi->free_bytes = eht_hugetlb_free(fi->page_size, -1);
		fi->total_bytes = fi->free_bytes;
	}
	return 0;
}

const char *eht_thp_shmem_mode(char *buf, size_t len)
{
	snprintf(buf, len, "unknown");
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "re");
	if (!f)
		return buf;
	char line[256];
	if (fgets(line, sizeof(line), f)) {
		char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
		if (a && b) {
			*b = '\0';
			snprintf(buf, len, "%s", a + 1);
		}
	}
	fclose(f);
	return buf;
}
