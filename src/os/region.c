/* SPDX-License-Identifier: Apache-2.0 */
/* region.c: create-or-open of a named shared region (one creator, openers wait for ready: the request
 * is checked here, region_create.c and region_attach.c carry it out), sealing, marking ready, pinning
 * and closing. */
#include "os/region_req.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "os/fsinfo.h"
#include "os/numa.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"
#include "util/opts.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static const uint32_t known_flags = EHT_REGION_KEEP | EHT_REGION_UNLINK_WHEN_MAPPED | EHT_REGION_OPEN_ONLY |
				    EHT_REGION_NO_RECLAIM | EHT_REGION_THP | EHT_REGION_NUMA_NODE |
				    EHT_REGION_NUMA_DEVICE | EHT_REGION_GROUP | EHT_REGION_HUGE | REGION_MEMFD;

static int req_init(struct req *q, const char *name, uint64_t bytes, const struct eht_region_opts *o)
{
	int rc = region_name_check(name);
	if (rc)
		return rc;
	memset(q, 0, sizeof(*q));
	q->name = name;
	q->numa_node = -1;
	q->device = -1;
	struct eht_region_opts oc = {0};
	if ((rc = eht_opts_in(&oc, sizeof(oc), o, "eht_region_open: opts")))
		return rc;
	if (o) {
		o = &oc;
		if (o->flags & ~known_flags)
			return eht_err(EINVAL, "region %s: unknown flags 0x%x", name, o->flags & ~known_flags);
		q->flags = o->flags;
		q->rows = o->rows;
		q->row_bytes = o->row_bytes;
		q->expected_peers = o->expected_peers;
		q->threads = o->populate_threads;
		q->timeout_s = o->timeout_s;
		q->numa_node = o->numa_node;
		q->device = o->device;
		q->gid = o->gid;
		q->cancel = o->cancel;
	}
	const char *dir = eht_region_dir(o ? o->dir : NULL);
	if (strlen(dir) + sizeof(REGION_TMP_PREFIX) + REGION_NAME_MAX + 48 > sizeof(q->path))
		return eht_err(EINVAL, "region %s: directory name too long", name);
	snprintf(q->dir, sizeof(q->dir), "%s", dir);
	snprintf(q->path, sizeof(q->path), "%s/" REGION_PREFIX "%s", dir, name);
	if (q->timeout_s <= 0)
		q->timeout_s = 60;
	uint32_t life = q->flags & (EHT_REGION_KEEP | EHT_REGION_UNLINK_WHEN_MAPPED);
	if (life == (EHT_REGION_KEEP | EHT_REGION_UNLINK_WHEN_MAPPED))
		return eht_err(EINVAL, "region %s: EHT_REGION_KEEP and EHT_REGION_UNLINK_WHEN_MAPPED both set", name);
	if ((q->flags & REGION_MEMFD) && (q->flags & EHT_REGION_OPEN_ONLY))
		return eht_err(EINVAL, "region %s: a memfd region cannot be opened by name", name);
	if (!life && !(q->flags & (EHT_REGION_OPEN_ONLY | REGION_MEMFD)))
		return eht_err(EINVAL, "region %s: choose the unlink policy: EHT_REGION_KEEP or EHT_REGION_UNLINK_WHEN_MAPPED", name);
	if ((q->flags & EHT_REGION_UNLINK_WHEN_MAPPED) && q->expected_peers == 0 && !(q->flags & EHT_REGION_OPEN_ONLY))
		return eht_err(EINVAL, "region %s: EHT_REGION_UNLINK_WHEN_MAPPED needs expected_peers >= 1", name);
	if ((q->flags & EHT_REGION_NUMA_NODE) && (q->flags & EHT_REGION_NUMA_DEVICE))
		return eht_err(EINVAL, "region %s: EHT_REGION_NUMA_NODE and EHT_REGION_NUMA_DEVICE both set", name);
	if ((q->flags & EHT_REGION_NUMA_NODE) && !eht_numa_node_exists(q->numa_node))
		return eht_err(EINVAL, "region %s: NUMA node %d does not exist", name, q->numa_node);
	if (q->rows || q->row_bytes) {
		if (!q->rows || !q->row_bytes || q->rows > UINT64_MAX / q->row_bytes)
			return eht_err(EINVAL, "region %s: bad geometry %" PRIu64 " rows x %" PRIu64 " bytes", name,
				       q->rows, q->row_bytes);
		if (bytes == 0)
			bytes = q->rows * q->row_bytes;
		if (q->rows * q->row_bytes != bytes)
			return eht_err(EINVAL, "region %s: %" PRIu64 " rows x %" PRIu64 " bytes is not %" PRIu64 " bytes",
				       name, q->rows, q->row_bytes, bytes);
	}
	if (bytes == 0 && !(q->flags & EHT_REGION_OPEN_ONLY))
		return eht_err(EINVAL, "region %s: size 0 (allowed only with EHT_REGION_OPEN_ONLY)", name);
	if (bytes > (1ull << 50))
		return eht_err(EINVAL, "region %s: size %" PRIu64 " is implausibly large", name, bytes);
	q->bytes = bytes;
	return 0;
}

int region_open(const char *name, uint64_t bytes, const struct eht_region_opts *opts,
		const struct region_gpu_ops *gpu, eht_region **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_region_open: NULL out");
	*out = NULL;
	struct req q;
	int rc = req_init(&q, name, bytes, opts);
	if (rc)
		return rc;
	q.gpu = gpu;
	rc = eht_fs_info(q.dir, &q.fs);
	if (rc)
		return rc;
	if (!q.fs.tmpfs && !q.fs.hugetlbfs && !(q.flags & REGION_MEMFD))
		eht_warn_once("region directory %s is not tmpfs or hugetlbfs: region pages may be written back to disk",
			      q.dir);
	if (q.flags & REGION_MEMFD) {
		if (!q.fs.hugetlbfs) {
			q.fs.page_size = 4096;
			/* RETRY only once: a hugetlb memfd (EHT_REGION_HUGE) that could not be made. */
			while ((rc = region_create(&q, out)) == RETRY)
				;
			return rc;
		}
		q.flags &= ~REGION_MEMFD; /* hugetlbfs: a named file, as before (not sealable) */
		if (!(q.flags & (EHT_REGION_KEEP | EHT_REGION_UNLINK_WHEN_MAPPED)))
			return eht_err(EINVAL, "region %s: choose the unlink policy", name);
	}
	double deadline = eht_now_s() + q.timeout_s;
	for (;;) {
		/* O_NONBLOCK: another user's FIFO under the name must not block us (attach checks it). */
		int fd = open(q.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0) {
			if (errno != ENOENT)
				return eht_err_sys(errno, "region %s: opening %s", name, q.path);
			if (q.flags & EHT_REGION_OPEN_ONLY)
				return eht_err(ENOENT, "region %s does not exist in %s", name, q.dir);
			rc = region_create(&q, out);
		} else {
			rc = region_attach(&q, fd, true, deadline, out);
			if (rc != 0)
				close(fd);
		}
		if (rc != RETRY)
			return rc;
		if (eht_now_s() >= deadline)
			return eht_err(ETIMEDOUT, "region %s (%s): gave up after %.1f s of concurrent create/remove",
				       name, q.path, q.timeout_s);
	}
}

int region_seal(eht_region *r)
{
	if (!r || !r->creator || !r->ready)
		return eht_err(EINVAL, "region %s: only its creator seals it, once ready", r ? r->name : "(null)");
	if (r->sealed)
		return 0;
	if (!r->anon)
		return eht_err(ENOTSUP, "region %s: a file in %s cannot be sealed", r->name, r->path);
	if (r->pinned)
		return eht_err(EBUSY, "region %s: unpin it before sealing", r->name);
	/* The write seal needs every writable shared mapping gone: the creator's becomes a read-only
	 * one at the same address, mapped through a read-only open (no VM_MAYWRITE). Kernels before
	 * 6.7 count read-only shared mappings too; there the mapping is private (still the same pages:
	 * nothing writes them any more). */
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", r->fd);
	int ro = open(proc, O_RDONLY | O_CLOEXEC);
	if (ro < 0)
		return eht_err_sys(errno, "region %s: reopening read-only", r->name);
	int rc = 0;
	if (mmap(r->map, r->map_bytes, PROT_READ, MAP_SHARED | MAP_FIXED, ro, 0) == MAP_FAILED) {
		rc = eht_err_sys(errno, "region %s: remapping read-only", r->name);
		goto out;
	}
	int sr = fcntl(r->fd, F_ADD_SEALS, REGION_SEALS);
	if (sr != 0 && errno == EBUSY) {
		/* No reserve: a private hugetlb mapping would reserve a copy of every huge page. */
		if (mmap(r->map, r->map_bytes, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, ro, 0) == MAP_FAILED) {
			rc = eht_err_sys(errno, "region %s: remapping read-only", r->name);
			goto out;
		}
		sr = fcntl(r->fd, F_ADD_SEALS, REGION_SEALS);
	}
	if (sr != 0)
		rc = eht_err_sys(errno, "region %s: sealing its memfd", r->name);
	if (!rc)
		r->sealed = true;
	/* The new mapping starts empty: map the pages again now (page tables only, no copy), so that
	 * this process's reads and its page size report (eht_table_page_size) see them. Best effort. */
	madvise(r->map, r->map_bytes, MADV_POPULATE_READ);
out:
	close(ro);
	return rc;
}

int region_open_fd(const char *name, int fd, const struct eht_region_opts *opts, eht_region **out)
{
	*out = NULL;
	struct req q;
	int rc = req_init(&q, name, 0, opts);
	if (rc)
		return rc;
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return eht_err_sys(errno, "region %s: dup of its descriptor", name);
	rc = region_attach(&q, own, false, eht_now_s() + q.timeout_s, out);
	if (rc) {
		close(own);
		return rc == RETRY ? eht_err(EINVAL, "region %s: the descriptor names no ready region", name) : rc;
	}
	return 0;
}

int eht_region_mark_ready(eht_region *r)
{
	if (!r || !r->creator)
		return eht_err(EINVAL, "eht_region_mark_ready: %s", r ? "not the creator" : "NULL region");
	if (r->ready)
		return eht_err(EALREADY, "region %s is already ready", r->name);
	r->hdr->ready_ns = eht_wall_ns();
	atomic_store_explicit(&r->hdr->ready, 1, memory_order_release);
	/* Converting the write lock to a read lock is atomic for OFD locks: gc never sees it unlocked. */
	int rc = region_lock(r->fd, F_RDLCK);
	if (rc)
		return eht_err(rc, "region %s: converting the creator's lock: %s", r->name, strerror(-rc));
	r->ready = true;
	region_count_attach(r);
	return 0;
}

void *eht_region_data(const eht_region *r) { return r ? r->data : NULL; }
uint64_t eht_region_bytes(const eht_region *r) { return r ? r->bytes : 0; }
uint64_t eht_region_rows(const eht_region *r) { return r ? r->hdr->rows : 0; }
uint64_t eht_region_row_bytes(const eht_region *r) { return r ? r->hdr->row_bytes : 0; }
bool eht_region_is_creator(const eht_region *r) { return r && r->creator; }
bool eht_region_is_ready(const eht_region *r) { return r && r->ready; }
bool eht_region_is_pinned(const eht_region *r) { return r && r->pinned; }
uint64_t eht_region_device_ptr(const eht_region *r) { return r && r->pinned ? r->dptr : 0; }
int eht_region_device(const eht_region *r) { return r && r->pinned ? r->device : -1; }
int eht_region_numa_node(const eht_region *r) { return r ? r->numa_node : -1; }
uint64_t eht_region_page_size(const eht_region *r) { return r ? r->page_size : 0; }
const char *eht_region_name(const eht_region *r) { return r ? r->name : ""; }
const char *eht_region_path(const eht_region *r) { return r ? r->path : ""; }

int region_pin(eht_region *r, int device, const struct region_gpu_ops *gpu)
{
	if (!r || device < 0)
		return eht_err(EINVAL, "eht_region_pin: %s", r ? "negative device" : "NULL region");
	if (r->pinned)
		return 0;
	uint64_t dptr = 0;
	size_t len = (size_t)(r->map_bytes - ((char *)r->data - (char *)r->map));
	int rc = gpu && gpu->pin ? gpu->pin(r->data, len, device, &dptr) : eht_err(ENODEV, "no GPU support");
	if (rc) {
		eht_warn("region %s: cannot pin %zu bytes for GPU %d (%s); it stays usable unpinned", r->name, len, device,
			 eht_last_error());
		return rc;
	}
	r->pinned = true;
	r->device = device;
	r->dptr = dptr;
	r->gpu = gpu;
	return 0;
}

static void keep_first(int *first, int rc, const char *name, const char *step)
{
	if (!rc)
		return;
	eht_warn("region %s: %s: %s", name, step, strerror(rc < 0 ? -rc : rc));
	if (!*first)
		*first = rc < 0 ? rc : -rc;
}

int eht_region_close(eht_region **rp)
{
	if (!rp || !*rp)
		return 0;
	struct eht_region *r = *rp;
	*rp = NULL;
	int first = 0;
	/* A forked child's copy of the handle: its mapping and descriptor are its own, the name and
	 * the pin are its parent's (the driver does not survive a fork). */
	const bool forked = r->pid != getpid();
	if (r->pinned && !forked) {
		size_t len = (size_t)(r->map_bytes - ((char *)r->data - (char *)r->map));
		keep_first(&first, r->gpu->unpin(r->data, len), r->name, "unpinning");
	}
	r->pinned = false;
	if (r->creator && !r->ready && !r->anon && !forked) {
		/* A creator that never marked it ready takes the half-built file with it. */
		int u = region_unlink_if_same(r->path, r->dev, r->ino);
		if (u != -ESTALE)
			keep_first(&first, u, r->name, "removing the unfinished region");
	}
	if (r->map && munmap(r->map, r->map_bytes) != 0)
		keep_first(&first, -errno, r->name, "munmap");
	r->map = NULL;
	if (r->fd >= 0 && close(r->fd) != 0)
		keep_first(&first, -errno, r->name, "close");
	r->fd = -1;
	free(r);
	if (first)
		eht_err(first, "closing a region: %s", strerror(-first));
	return first;
}
