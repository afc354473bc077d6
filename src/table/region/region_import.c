/* SPDX-License-Identifier: Apache-2.0 */
/* region_import.c: the region tier in a process that received the region file's descriptor (a worker
 * of eht serve): maps the same pages, pins them for its GPU when it can. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "gpu/pin.h"
#include "os/map_aligned.h"
#include "table/region/region_table.h"
#include "util/err.h"
#include "util/log.h"

struct shared_map {
	void *map;
	size_t len;
	void *data;
	uint64_t bytes;
	bool pinned;
	int device;
	uint64_t dptr;
	int numa;
	uint64_t page_size;
};

static int shared_map_free(struct shared_map *m, const char *name)
{
	int rc = 0;
	if (m && m->pinned)
		rc = eht_gpu_unpin(m->data, m->bytes);
	if (m && m->map && munmap(m->map, m->len) != 0 && !rc)
		rc = eht_err_sys(errno, "table %s: munmap", name);
	free(m);
	return rc;
}

static int shared_map_close(eht_table *t) { return shared_map_free(t->impl, t->name); }

static void shared_map_describe(const eht_table *t, struct eht_table_info *info)
{
	const struct shared_map *m = t->impl;
	info->tier = m->pinned ? EHT_TIER_REGION_PINNED : EHT_TIER_REGION;
	info->host = m->data;
	info->device_ptr = m->pinned ? m->dptr : 0;
	info->device = m->pinned ? m->device : -1;
	info->numa_node = m->numa;
	info->page_size = m->page_size;
}

/* Not exportable again: a worker hands its tables to no one. */
static const struct eht_table_ops shared_map_ops = {.describe = shared_map_describe,
						    .close = shared_map_close};

int eht_region_import(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a, eht_table **out)
{
	*out = NULL;
	const char *name = eht_desc_str(desc, "name");
	uint64_t rows = eht_desc_u64(desc, "rows"), rb = eht_desc_u64(desc, "row_bytes");
	uint64_t off = eht_desc_u64(desc, "data_offset"), fbytes = eht_desc_u64(desc, "file_bytes");
	if (nfds != 1 || fds[0] < 0)
		return eht_err(EPROTO, "table %s: a region comes with one descriptor, not %zu", name, nfds);
	if (!name || !rb || rows > (UINT64_MAX - off) / rb || off + rows * rb > fbytes || fbytes > SIZE_MAX)
		return eht_err(EPROTO, "table %s: the server described an inconsistent region", name ? name : "?");
	/* The description is the sender's word; the file is what gets mapped: a region file shorter
	 * than described would turn reads past its end into SIGBUS. */
	struct stat st;
	if (fstat(fds[0], &st) != 0)
		return eht_err_sys(errno, "table %s: fstat of the received descriptor", name);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < fbytes)
		return eht_err(EPROTO,
			       "table %s: the server's descriptor (%s, %lld bytes) does not cover the %llu bytes it "
			       "described",
			       name, S_ISREG(st.st_mode) ? "regular file" : "not a regular file", (long long)st.st_size,
			       (unsigned long long)fbytes);
	/* Read-only as the descriptor is (eht serve sends an O_RDONLY open): neither this mapping nor an
	 * mprotect of it can become writable, so one worker's stray write cannot reach the others' rows.
	 * A read-write descriptor (an importer in the exporting process) is mapped as given. */
	int acc = fcntl(fds[0], F_GETFL);
	bool ro = acc >= 0 && (acc & O_ACCMODE) == O_RDONLY;
	struct shared_map *m = calloc(1, sizeof(*m));
	if (!m)
		return eht_err(ENOMEM, "attach: out of memory");
	/* Huge pages of the region's file map as huge pages only at an address aligned to them. */
	uint64_t ps = eht_desc_u64(desc, "page_size");
	size_t align = ps >= (2u << 20) && ps <= (1u << 30) ? (size_t)ps : 0;
	m->map = eht_map_aligned(fds[0], (size_t)fbytes, ro ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, align);
	/* A write-sealed memfd (eht serve's tables): kernels before 6.7 refuse every shared mapping of
	 * it; a private read-only one maps the same pages (nothing can write them any more). No
	 * reserve: a private hugetlb mapping would otherwise reserve a copy of every page. */
	if (m->map == MAP_FAILED && errno == EPERM && ro)
		m->map = eht_map_aligned(fds[0], (size_t)fbytes, PROT_READ, MAP_PRIVATE | MAP_NORESERVE, align);
	if (m->map == MAP_FAILED) {
		free(m);
		return eht_err_sys(errno, "table %s: mapping %llu bytes", name, (unsigned long long)fbytes);
	}
	m->len = (size_t)fbytes;
	m->data = (char *)m->map + off;
	m->bytes = rows * rb;
	m->device = -1;
	m->numa = (int)json_integer_value(json_object_get(desc, "numa"));
	m->page_size = eht_desc_u64(desc, "page_size");
	madvise(m->map, m->len, MADV_RANDOM);
	if (m->page_size >= (2u << 20))
		madvise(m->data, (size_t)m->bytes, MADV_HUGEPAGE); /* shmem THP in 'advise' mode asks per mapping */
	if (a->device >= 0 && m->bytes) {
		if (eht_gpu_pin(m->data, m->bytes, a->device, ro ? EHT_DEV_HOST_READ_ONLY : 0, &m->dptr) == 0) {
			m->pinned = true;
			m->device = a->device;
		} else {
			eht_warn("table %s: cannot pin the region for GPU %d (%s); CPU gathers only", name, a->device,
				 eht_last_error());
		}
	}
	struct eht_table_info info = {.size = sizeof(info), .rows = rows, .row_bytes = rb, .local_rows = rows,
				      .name = name};
	int rc = eht_table_new(&info, &shared_map_ops, m, out);
	if (rc)
		shared_map_free(m, name);
	return rc;
}
