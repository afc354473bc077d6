/* SPDX-License-Identifier: Apache-2.0 */
/* region.c: create-or-open of a named shared region: one creator, openers wait for ready, close. */
#include "os/region_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004u
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002u
#endif
#define MFD_HUGE_SHIFT_ 26

#include "os/fsinfo.h"
#include "os/map_aligned.h"
#include "os/numa.h"
#include "util/cpu.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"
#include "util/pool.h"
#include "util/clock.h"
#include "util/settings.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define THP_SIZE (2ull << 20)
#define RETRY 1 /* internal: start over (the name changed under us) */
/* How long an opener waits on a ready region's write lock (gc holds it for an instant). */
#define READY_LOCK_WAIT_S 5.0

static const uint32_t known_flags = EHT_REGION_KEEP | EHT_REGION_UNLINK_WHEN_MAPPED | EHT_REGION_OPEN_ONLY |
				    EHT_REGION_NO_RECLAIM | EHT_REGION_THP | EHT_REGION_NUMA_NODE |
				    EHT_REGION_NUMA_DEVICE | EHT_REGION_GROUP | EHT_REGION_HUGE | REGION_MEMFD;

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

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

static char *fmt_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", (double)b / (double)(1ull << 20));
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
	return buf;
}

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

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

/* Maps the whole file; with align above the page size the mapping starts on an align boundary. */
static void *map_file(int fd, size_t len, size_t align)
{
	void *p = eht_map_aligned(fd, len, PROT_READ | PROT_WRITE, MAP_SHARED, align <= 4096 ? 0 : align);
	return p == MAP_FAILED ? NULL : p;
}

/* ---- creating ---- */

/* Node to bind the pages to (-1: leave the default policy) and whether strictly. */
static int pick_node(const struct req *q, bool *strict)
{
	*strict = false;
	if (q->flags & EHT_REGION_NUMA_NODE) {
		*strict = true;
		return q->numa_node;
	}
	if (q->flags & EHT_REGION_NUMA_DEVICE) {
		int n = q->gpu && q->gpu->host_node ? q->gpu->host_node(q->device) : -1;
		if (n >= 0 && eht_numa_node_exists(n)) {
			*strict = true;
			return n;
		}
		eht_info("region %s: host NUMA node of GPU %d unknown; using the local node", q->name, q->device);
	}
	return eht_numa_local_node();
}

static int capacity_check(const struct req *q, uint64_t need, int node, bool strict)
{
	if (eht_setting_bool(EHT_SET_TEST_REGION_SKIP_CAPACITY_CHECK))
		return 0;
	char a[32], b[32];
	/* A memfd takes memory, not the directory's space: only the memory checks below apply. */
	if (!(q->flags & REGION_MEMFD) && q->fs.free_bytes < need)
		return eht_err(ENOSPC,
			       "region %s: %s needed but only %s free in %s%s; fix: free space there (`eht regions "
			       "gc` removes what dead processes left), or give it more (Docker: --shm-size=%lluG or "
			       "--ipc=host; hugetlbfs: raise vm.nr_hugepages), or use another directory (EHT_SHM_DIR)",
			       q->name, fmt_bytes(need, a, sizeof(a)), fmt_bytes(q->fs.free_bytes, b, sizeof(b)), q->dir,
			       q->fs.hugetlbfs ? " (free huge pages)" : "",
			       (unsigned long long)((need >> 30) + 1));
	if (q->fs.hugetlbfs && !(q->flags & REGION_MEMFD)) {
		if (strict && eht_numa_node_count() > 1) {
			uint64_t f = eht_hugetlb_free(q->fs.page_size, node);
			if (f < need)
				return eht_err(ENOSPC, "region %s: %s needed but NUMA node %d has %s of free huge pages; "
						       "fix: raise /sys/devices/system/node/node%d/hugepages/*/nr_hugepages",
					       q->name, fmt_bytes(need, a, sizeof(a)), node, fmt_bytes(f, b, sizeof(b)), node);
		}
		return 0;
	}
	uint64_t total = 0, freeb = 0, avail = 0;
	if (strict && eht_numa_node_count() > 1 && eht_numa_node_mem(node, &total, &freeb, &avail) == 0 && avail < need)
		return eht_err(ENOSPC, "region %s: %s needed but NUMA node %d has only %s free; fix: free memory on "
				       "that node or bind to another (opts.numa_node)",
			       q->name, fmt_bytes(need, a, sizeof(a)), node, fmt_bytes(avail, b, sizeof(b)));
	avail = eht_mem_available();
	if (avail && avail < need)
		return eht_err(ENOSPC, "region %s: %s needed but only %s of memory is available (MemAvailable); "
				       "fix: free memory or use a smaller table",
			       q->name, fmt_bytes(need, a, sizeof(a)), fmt_bytes(avail, b, sizeof(b)));
	return 0;
}

struct populate {
	char *base;
	size_t len, chunk, page;
	bool madv;
	const volatile int *cancel;
	atomic_int err;
	atomic_size_t failed_at;
};

static void populate_task(void *arg, size_t i, unsigned worker)
{
	struct populate *p = arg;
	if (atomic_load_explicit(&p->err, memory_order_relaxed))
		return;
	if (p->cancel && __atomic_load_n(p->cancel, __ATOMIC_RELAXED)) {
		int zero = 0;
		atomic_compare_exchange_strong(&p->err, &zero, EINTR);
		return;
	}
	size_t off = i * p->chunk, len = p->len - off < p->chunk ? p->len - off : p->chunk;
	char *s = p->base + off;
	if (p->madv) {
		if (madvise(s, len, MADV_POPULATE_WRITE) != 0) {
			int zero = 0;
			if (atomic_compare_exchange_strong(&p->err, &zero, errno))
				atomic_store(&p->failed_at, off);
		}
		return;
	}
	/* Fallback for kernels before 5.14: the file was fallocate'd first, so touching is safe. */
	for (size_t k = 0; k < len; k += p->page)
		((volatile char *)s)[k] = 0;
}

/* EHT_TEST_FAULT lists "populate-madvise" (comma-separated steps, as the tiers' faults): the kernel's
 * refusal of MADV_POPULATE_WRITE (EINVAL before 5.14) is played, so tests run the fallback. */
static bool madvise_fault(void)
{
	const char *spec = eht_setting_str(EHT_SET_TEST_FAULT);
	static const char step[] = "populate-madvise";
	for (const char *p = spec; p && *p;) {
		size_t n = strcspn(p, ",");
		if (n == sizeof(step) - 1 && !strncmp(p, step, n))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/* Allocates and maps every data page with several threads. MADV_POPULATE_WRITE reports a full tmpfs
 * as an error (no SIGBUS); without it, fallocate reserves the space first (serially: tmpfs takes the
 * inode lock) and the threads only touch. Returns 0 or -ENOSPC / -errno with a message. */
static int populate(const struct req *q, struct eht_region *r, int node, bool strict, uint64_t file_bytes)
{
	char a[32], b[32];
	struct populate p = {.base = r->data, .len = (size_t)(file_bytes - ((char *)r->data - (char *)r->map)),
			     .page = (size_t)r->page_size, .madv = true, .cancel = q->cancel};
	double t0 = eht_now_s();
	int mrc = madvise_fault() ? (errno = EINVAL, -1) : madvise(p.base, p.page, MADV_POPULATE_WRITE);
	if (mrc != 0) {
		if (errno != EINVAL)
			return eht_err(ENOSPC, "region %s: allocating the first page in %s failed (%s)", q->name, q->dir,
				       strerror(errno));
		p.madv = false;
		eht_warn_once("MADV_POPULATE_WRITE unsupported (kernel before 5.14): regions are allocated with "
			      "fallocate on one thread, then touched");
		int e = posix_fallocate(r->fd, (off_t)((char *)r->data - (char *)r->map), (off_t)p.len);
		if (e)
			return eht_err(e == ENOSPC || e == ENOMEM ? ENOSPC : e,
				       "region %s: reserving %s in %s failed (%s); fix: Docker --shm-size or --ipc=host",
				       q->name, fmt_bytes(p.len, a, sizeof(a)), q->dir, strerror(e));
	}
	unsigned threads = q->threads;
	if (!threads) {
		unsigned n = eht_cpu_usable(NULL);
		threads = n > 32 ? 32 : n;
	}
	/* About four chunks per thread for balance, 2..64 MiB each, whole (huge) pages. */
	uint64_t chunk = p.len / ((uint64_t)threads * 4);
	chunk = chunk < (2u << 20) ? (2u << 20) : (chunk > (64u << 20) ? (64u << 20) : chunk);
	p.chunk = (size_t)round_up(chunk, r->page_size);
	size_t ntasks = (p.len + p.chunk - 1) / p.chunk;
	if (threads > ntasks)
		threads = (unsigned)ntasks;
	eht_pool *pool = NULL;
	if (threads > 1 && eht_pool_create(threads - 1, strict ? node : -1, 0, &pool) != 0) {
		eht_debug("region %s: no populate pool (%s); one thread", q->name, eht_last_error());
		pool = NULL;
	}
	if (pool) {
		eht_pool_run(pool, ntasks, populate_task, &p);
		eht_pool_destroy(pool);
	} else {
		for (size_t i = 0; i < ntasks; i++)
			populate_task(&p, i, 0);
	}
	int e = atomic_load(&p.err);
	if (e == EINTR)
		return eht_err(EINTR, "region %s: stopped while allocating %s", q->name, fmt_bytes(p.len, a, sizeof(a)));
	if (e)
		return eht_err(ENOSPC, "region %s: allocating %s in %s failed at offset %s (%s): the file system or the "
				       "NUMA node ran out of memory; fix: Docker --shm-size or --ipc=host, free memory, "
				       "or raise the huge page pool on hugetlbfs",
			       q->name, fmt_bytes(p.len, a, sizeof(a)), q->dir,
			       fmt_bytes(atomic_load(&p.failed_at), b, sizeof(b)), strerror(e));
	double dt = eht_now_s() - t0;
	eht_info("region %s: populated %s with %u thread(s) in %.2f s (%.2f GB/s)", q->name,
		 fmt_bytes(p.len, a, sizeof(a)), threads, dt, dt > 0 ? (double)p.len / dt / 1e9 : 0.0);
	return 0;
}

/* Asks for huge pages; returns whether the system can give shmem any. */
static bool thp_advise(const struct req *q, void *data, size_t len)
{
	char mode[32];
	eht_thp_shmem_mode(mode, sizeof(mode));
	if (!strcmp(mode, "never") || !strcmp(mode, "deny") || !strcmp(mode, "unknown"))
		eht_warn_once("shmem transparent huge pages are '%s' (/sys/kernel/mm/transparent_hugepage/shmem_enabled): "
			      "regions use 4 KiB pages (a hugetlbfs directory gives huge pages)", mode);
	else if (madvise(data, len, MADV_HUGEPAGE) != 0)
		eht_warn_once("region %s: MADV_HUGEPAGE failed (%s); 4 KiB pages", q->name, strerror(errno));
	else
		return true;
	return false;
}

static void region_free(struct eht_region *r)
{
	if (r->map)
		munmap(r->map, r->map_bytes);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

static int attach_count(struct eht_region *r)
{
	if (r->anon || !(r->hdr->policy & EHT_REGION_UNLINK_WHEN_MAPPED))
		return 0;
	uint32_t n = atomic_fetch_add(&r->hdr->attached, 1) + 1;
	if (n < r->hdr->expected_peers)
		return 0;
	if (n > r->hdr->expected_peers)
		eht_warn("region %s: %u processes mapped it, %u expected", r->name, n, r->hdr->expected_peers);
	int rc = region_unlink_if_same(r->path, r->dev, r->ino);
	if (rc == 0)
		eht_info("region %s: all %u peers mapped it; unlinked (the memory lives while mapped)", r->name, n);
	else if (rc != -ESTALE)
		eht_warn("region %s: unlinking %s after the last peer: %s", r->name, r->path, strerror(-rc));
	return 0;
}

/* The first create of this process in a directory first removes what dead creators of this user
 * left there (a populate killed by SIGKILL leaves up to a table of RAM). */
static void reclaim_once(const char *dir)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static char done[4096];
	pthread_mutex_lock(&mu);
	if (strcmp(done, dir) != 0) {
		snprintf(done, sizeof(done), "%s", dir);
		region_reclaim_dead(dir);
	}
	pthread_mutex_unlock(&mu);
}

/* How EHT_REGION_HUGE backs a region in a directory that is not hugetlbfs: *memfd_page set to the
 * huge page size when the pool has room for a hugetlb memfd, else *thp when shmem THP can be
 * advised; otherwise one warning naming the fix, and 4 KiB pages. */
static void huge_choice(const struct req *q, uint64_t *memfd_page, bool *thp)
{
	*memfd_page = 0;
	struct eht_hugetlb_pool pool;
	bool have = eht_hugetlb_pool(0, &pool) == 0;
	uint64_t hp = have ? pool.page_size : 0;
	uint64_t need = hp ? eht_hugetlb_region_pages(q->bytes, hp) : 0;
	if (have && !q->no_memfd && pool.available >= need) {
		*memfd_page = hp;
		return;
	}
	char mode[32];
	eht_thp_shmem_mode(mode, sizeof(mode));
	if (strcmp(mode, "never") && strcmp(mode, "deny") && strcmp(mode, "unknown")) {
		*thp = true;
		return;
	}
	char a[32], b[32];
	eht_warn_once("region %s: 4 KiB pages (CPU gathers of its rows run about half as fast as on 2 MiB): "
		      "%s and shmem THP is '%s'; fix: sysctl vm.nr_hugepages=%llu (%llu more %s pages for this %s "
		      "table; eht probe --ckpt CHECKPOINT: the total for every table), or echo advise > "
		      "/sys/kernel/mm/transparent_hugepage/shmem_enabled",
		      q->name,
		      !have ? "the kernel has no huge pages" : q->no_memfd ? "a hugetlb memfd could not be made"
							    : "the huge page pool has no room",
		      mode, (unsigned long long)(pool.total + (need > pool.available ? need - pool.available : 0)),
		      (unsigned long long)(need > pool.available ? need - pool.available : 0),
		      fmt_bytes(hp ? hp : THP_SIZE, a, sizeof(a)), fmt_bytes(q->bytes, b, sizeof(b)));
}

/* A hugetlb memfd for the region (no name in the directory). Returns the fd, or -1 with errno. */
static int memfd_huge(const struct req *q, uint64_t page)
{
	unsigned lg = 0;
	while ((1ull << lg) < page)
		lg++;
	/* Named as the plain memfd is: /proc/PID/maps shows "/memfd:NAME" either way. */
	return (int)syscall(SYS_memfd_create, q->name, MFD_CLOEXEC | MFD_HUGETLB | MFD_ALLOW_SEALING | (lg << MFD_HUGE_SHIFT_));
}

/* What backs a new region: a hugetlb memfd (anon), hugetlb pages (a hugetlbfs directory or that
 * memfd) of hpage bytes, or shmem THP advised. */
struct backing {
	bool thp, hugetlb;
	bool memfd; /* a hugetlb memfd (EHT_REGION_HUGE): mapped aligned to its pages; a failed map retries */
	bool anon;  /* any memfd: no name in the directory */
	uint64_t hpage;
};

/* Maps the new file (file_bytes, data at data_offset) and binds its pages to node before the first
 * touch; THP advised where asked. 0 or -errno (message set). */
static int map_new(const struct req *q, struct eht_region *r, const struct backing *k, const char *tmp,
		   uint64_t file_bytes, uint64_t data_offset, int node, bool strict)
{
	char a[32];
	const bool thp = k->thp && !k->hugetlb;
	r->map_bytes = (size_t)file_bytes;
	r->map = map_file(r->fd, r->map_bytes, k->memfd ? (size_t)k->hpage : thp ? THP_SIZE : 4096);
	if (!r->map && k->memfd) {
		/* The pool emptied since it was read (mapping reserves every huge page up front). */
		eht_info("region %s: mapping a hugetlb memfd failed (%s); the directory's pages", q->name, strerror(errno));
		return RETRY;
	}
	if (!r->map)
		return eht_err_sys(errno == ENOMEM && q->fs.hugetlbfs ? ENOSPC : errno, "region %s: mapping %s of %s",
				   q->name, fmt_bytes(file_bytes, a, sizeof(a)), tmp);
	r->hdr = r->map;
	r->data = (char *)r->map + data_offset;
	r->page_size = k->hugetlb ? k->hpage : (thp ? THP_SIZE : q->fs.page_size);
	r->numa_node = node;
	/* Bind before the first touch: the policy lands on the shared file (tmpfs and hugetlbfs keep it
	 * per inode), so the pages are placed on the node whoever faults them in. */
	if (eht_numa_node_count() > 1) {
		int b = eht_numa_bind(r->data, (size_t)(file_bytes - data_offset), node, strict);
		if (b) {
			eht_warn_once("region %s: mbind to NUMA node %d failed (%s); pages follow the default policy",
				      q->name, node, strerror(-b));
			r->numa_node = -1;
		}
	}
	if (thp && !thp_advise(q, r->data, (size_t)(file_bytes - data_offset)))
		r->page_size = q->fs.page_size; /* still 2 MiB aligned, so a later THP mode change helps */
	return 0;
}

/* The header of a new region (not ready, no one attached), creator's identity included. */
static void write_header(const struct req *q, struct eht_region *r, const struct backing *k, uint64_t file_bytes,
			 uint64_t data_offset)
{
	struct region_hdr *h = r->hdr;
	memcpy(h->magic, REGION_MAGIC, 8);
	h->version = REGION_VERSION;
	h->hdr_size = sizeof(*h);
	h->file_bytes = file_bytes;
	h->data_offset = data_offset;
	h->data_bytes = q->bytes;
	h->rows = q->rows;
	h->row_bytes = q->row_bytes;
	h->page_size = r->page_size;
	h->policy = (q->flags & REGION_HDR_POLICY) | (k->hugetlb ? REGION_HDR_HUGETLB : 0) |
		    (k->anon ? REGION_HDR_ANON : 0);
	if (k->thp && !k->hugetlb && r->page_size >= THP_SIZE)
		h->policy |= EHT_REGION_THP; /* openers align their mapping for the huge pages */
	h->expected_peers = (q->flags & EHT_REGION_UNLINK_WHEN_MAPPED) ? q->expected_peers : 0;
	h->numa_node = r->numa_node;
	h->creator_pid = (int32_t)getpid();
	h->creator_uid = (uint32_t)getuid();
	h->creator_start = region_proc_start(getpid());
	h->created_ns = eht_wall_ns();
	region_boot_id(h->boot_id);
	snprintf(h->name, sizeof(h->name), "%s", q->name);
	atomic_store(&h->ready, 0);
	atomic_store(&h->attached, 0);
}

/* The creator's descriptor: a memfd (sealable, gone with its last descriptor and mapping, so a
 * killed creator leaves nothing), or the temporary file tmp with the mode and group asked for.
 * Returns 0, RETRY (no hugetlb memfd: try 4 KiB pages) or -errno; *tmp_made once tmp exists. */
static int open_backing(struct req *q, struct eht_region *r, bool hmemfd, uint64_t hpage, mode_t mode, char *tmp,
			size_t tmp_len, bool *tmp_made)
{
	if (r->anon) {
		r->fd = hmemfd ? memfd_huge(q, hpage) : memfd_create(q->name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (r->fd < 0 && hmemfd) {
			eht_info("region %s: no hugetlb memfd (%s); 4 KiB pages", q->name, strerror(errno));
			q->no_memfd = true;
			return RETRY;
		}
		if (r->fd < 0)
			return eht_err_sys(errno, "region %s: memfd_create", q->name);
		snprintf(tmp, tmp_len, "memfd:%s", q->name);
		return 0;
	}
	r->fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (r->fd < 0)
		return eht_err_sys(errno, "region %s: creating %s", q->name, tmp);
	*tmp_made = true;
	/* The umask may have cleared group bits; the mode asked for is the mode set. */
	if (fchmod(r->fd, mode) != 0)
		return eht_err_sys(errno, "region %s: chmod %o", q->name, mode);
	if ((q->flags & EHT_REGION_GROUP) && fchown(r->fd, (uid_t)-1, q->gid) != 0)
		return eht_err_sys(errno, "region %s: chown to group %u", q->name, (unsigned)q->gid);
	return 0;
}

/* The region under its name: a memfd's "path" is its label; a file's temporary name is linked to
 * the name (EEXIST: another creator won, RETRY) and dropped. */
static int publish_name(struct req *q, struct eht_region *r, const char *tmp, bool *linked, bool *tmp_made)
{
	if (r->anon) {
		snprintf(q->path, sizeof(q->path), "%.4000s", tmp);
		return 0;
	}
	if (link(tmp, q->path) != 0)
		return errno == EEXIST ? RETRY : eht_err_sys(errno, "region %s: linking %s", q->name, q->path);
	*linked = true;
	if (unlink(tmp) != 0)
		eht_warn("region %s: removing the temporary name %s: %s", q->name, tmp, strerror(errno));
	*tmp_made = false;
	return 0;
}

/* Creates the region under a temporary name, then links it under its name so that the name only
 * ever shows a file with a full header whose creator holds the write lock. Returns 0, RETRY (another
 * creator won) or -errno. */
static int create(struct req *q, struct eht_region **out)
{
	static atomic_uint counter;
	char a[32];
	bool strict = false;
	int node = pick_node(q, &strict);
	bool thp = q->flags & EHT_REGION_THP;
	uint64_t memfd_page = 0;
	if ((q->flags & EHT_REGION_HUGE) && !q->fs.hugetlbfs)
		huge_choice(q, &memfd_page, &thp);
	/* A memfd: asked for (REGION_MEMFD: a group of one), or EHT_REGION_HUGE's hugetlb one. */
	const bool hmemfd = memfd_page != 0, anon = hmemfd || (q->flags & REGION_MEMFD);
	const bool hugetlb = q->fs.hugetlbfs || hmemfd;
	const uint64_t hpage = hmemfd ? memfd_page : q->fs.page_size;
	uint64_t unit = hugetlb ? hpage : (thp ? THP_SIZE : q->fs.page_size);
	uint64_t data_offset = hugetlb ? hpage : (thp ? THP_SIZE : 4096);
	uint64_t file_bytes = data_offset + round_up(q->bytes, unit);
	/* Reclaim first: what a killed creator left (a populate cut short by SIGKILL) may be the very
	 * space this create needs, and the restart of that creator is the usual next create. */
	if (!anon) {
		reclaim_once(q->dir);
		if (eht_fs_info(q->dir, &q->fs) != 0)
			eht_err_clear(); /* keep the figures region_open read */
	}
	/* A hugetlb memfd takes huge pages, checked by huge_choice; a plain memfd memory (checked here). */
	int rc = hmemfd ? 0 : capacity_check(q, file_bytes - data_offset, node, strict);
	if (rc)
		return rc;
	if (hmemfd && strict && eht_numa_node_count() > 1 && eht_hugetlb_free(hpage, node) < file_bytes) {
		eht_info("region %s: NUMA node %d has too few free huge pages for a hugetlb memfd", q->name, node);
		q->no_memfd = true;
		return RETRY;
	}
	const struct backing k = {.thp = thp, .hugetlb = hugetlb, .memfd = hmemfd, .anon = anon, .hpage = hpage};
	char tmp[4096 + 64];
	/* Unpredictable: another user cannot pre-create it (O_EXCL would then fail the create). */
	snprintf(tmp, sizeof(tmp), "%s/" REGION_TMP_PREFIX "%s.%d.%u.%016llx", q->dir, q->name, (int)getpid(),
		 atomic_fetch_add(&counter, 1), (unsigned long long)region_random());
	struct eht_region *r = calloc(1, sizeof(*r));
	if (!r)
		return eht_err(ENOMEM, "region %s: out of memory", q->name);
	r->fd = -1;
	r->device = -1;
	r->pid = getpid();
	r->anon = anon;
	bool linked = false, tmp_made = false;
	mode_t mode = (q->flags & EHT_REGION_GROUP) ? 0660 : 0600;
	rc = open_backing(q, r, hmemfd, hpage, mode, tmp, sizeof(tmp), &tmp_made);
	if (rc)
		goto fail;
	rc = region_lock(r->fd, F_WRLCK);
	if (rc) {
		rc = eht_err(rc, "region %s: locking %s: %s", q->name, tmp, strerror(-rc));
		goto fail;
	}
	if (ftruncate(r->fd, (off_t)file_bytes) != 0) {
		rc = eht_err_sys(errno, "region %s: sizing %s to %s", q->name, tmp, fmt_bytes(file_bytes, a, sizeof(a)));
		goto fail;
	}
	int mrc = map_new(q, r, &k, tmp, file_bytes, data_offset, node, strict);
	if (mrc == RETRY)
		q->no_memfd = true;
	if ((rc = mrc))
		goto fail;
	write_header(q, r, &k, file_bytes, data_offset);

	rc = publish_name(q, r, tmp, &linked, &tmp_made);
	if (rc)
		goto fail;
	struct stat st;
	if (fstat(r->fd, &st) != 0) {
		rc = eht_err_sys(errno, "region %s: fstat", q->name);
		goto fail;
	}
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	snprintf(r->name, sizeof(r->name), "%s", q->name);
	snprintf(r->path, sizeof(r->path), "%s", q->path);
	r->bytes = q->bytes;
	r->creator = true;
	rc = populate(q, r, node, strict, file_bytes);
	if (rc)
		goto fail;
	eht_info("region %s: created %s in %s (node %d%s%s)", q->name, fmt_bytes(q->bytes, a, sizeof(a)),
		 anon ? (hugetlb ? "a hugetlb memfd" : "a memfd") : q->dir, r->numa_node, thp && !hugetlb ? ", THP" : "",
		 q->fs.hugetlbfs ? ", hugetlbfs" : "");
	*out = r;
	return 0;
fail:
	if (linked) {
		int u = region_unlink_if_same(q->path, r->dev, r->ino);
		if (u && u != -ESTALE)
			eht_warn("region %s: removing the half-built %s: %s", q->name, q->path, strerror(-u));
	}
	if (tmp_made && unlink(tmp) != 0)
		eht_warn("region %s: removing %s: %s", q->name, tmp, strerror(errno));
	region_free(r);
	return rc;
}

/* ---- opening ---- */

static int check_match(const struct req *q, const struct region_hdr *h)
{
	char a[32], b[32];
	if (q->bytes && h->data_bytes != q->bytes)
		return eht_err(EINVAL, "region %s holds %" PRIu64 " bytes (%s) but %" PRIu64 " bytes (%s) were asked; "
				       "remove it (eht regions gc / eht_region_unlink) or ask for its size",
			       q->name, h->data_bytes, fmt_bytes(h->data_bytes, a, sizeof(a)), q->bytes,
			       fmt_bytes(q->bytes, b, sizeof(b)));
	if (q->rows && (h->rows != q->rows || h->row_bytes != q->row_bytes))
		return eht_err(EINVAL, "region %s holds %" PRIu64 " rows x %" PRIu64 " bytes but %" PRIu64 " x %" PRIu64
				       " were asked",
			       q->name, h->rows, h->row_bytes, q->rows, q->row_bytes);
	uint32_t life = q->flags & (EHT_REGION_KEEP | EHT_REGION_UNLINK_WHEN_MAPPED);
	if (life && life != (h->policy & (EHT_REGION_KEEP | EHT_REGION_UNLINK_WHEN_MAPPED)))
		return eht_err(EINVAL, "region %s was created %s, but this open asks %s", q->name,
			       (h->policy & EHT_REGION_KEEP) ? "to keep" : "to unlink when mapped",
			       life == EHT_REGION_KEEP ? "to keep" : "to unlink when mapped");
	if ((h->policy & EHT_REGION_UNLINK_WHEN_MAPPED) && q->expected_peers && q->expected_peers != h->expected_peers)
		return eht_err(EINVAL, "region %s expects %u peers, this open says %u", q->name, h->expected_peers,
			       q->expected_peers);
	return 0;
}

static bool same_file(const char *path, const struct stat *st)
{
	struct stat now;
	return lstat(path, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino;
}

/* The file under a region's name is trusted only when this user (or root) owns it, or with
 * EHT_REGION_GROUP a member of opts.gid, and nobody else may write it beyond the mode asked for
 * (0600, or 0660 with EHT_REGION_GROUP): in a directory every user may write in (/dev/shm) the
 * name can hold another user's file, whose bytes would otherwise be read as ours and see what we
 * write. Checked before any lock is waited for. Returns 0 or -EPERM naming the file, its owner and
 * mode. */
static int trust_check(const struct req *q, const struct stat *st)
{
	const uid_t me = geteuid();
	const bool group = q->flags & EHT_REGION_GROUP;
	const mode_t asked = group ? 0660 : 0600, mode = st->st_mode & 07777;
	if (st->st_uid != me && st->st_uid != 0 && !(group && st->st_gid == q->gid))
		return eht_err(EPERM, "region %s: %s belongs to uid %u (mode %04o), not to this user (uid %u) or root%s: "
				      "another user's file under the name is never mapped; remove it (its owner or root) "
				      "or use another name or directory (EHT_SHM_DIR)",
			       q->name, q->path, (unsigned)st->st_uid, (unsigned)mode, (unsigned)me,
			       group ? " or group opts.gid" : "");
	if (mode & 0022 & ~asked)
		return eht_err(EPERM, "region %s: %s (owner uid %u) has mode %04o: writable by %s beyond the %04o "
				      "asked for, so never mapped; remove it (`eht regions gc` does not: it may be in use)",
			       q->name, q->path, (unsigned)st->st_uid, (unsigned)mode,
			       (mode & 0002) ? "every user" : "its group", (unsigned)asked);
	return 0;
}

/* Waits for the region behind fd to be ready and maps it. named: fd was opened by its name (its
 * owner and mode are checked first); else it came by descriptor from a peer. Returns 0 (fd now
 * owned by *out), RETRY or -errno. */
static int attach(struct req *q, int fd, bool named, double deadline, struct eht_region **out)
{
	struct stat st;
	struct region_hdr h;
	if (fstat(fd, &st) != 0)
		return eht_err_sys(errno, "region %s: fstat", q->name);
	if (!S_ISREG(st.st_mode))
		return eht_err(EINVAL, "region %s: %s is not a regular file (owner uid %u, mode %04o)", q->name, q->path,
			       (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	int rc = named ? trust_check(q, &st) : 0;
	if (rc)
		return rc;
	/* The header first, without the lock: a file is linked under the name only once its header is
	 * complete, so a file that is no region fails now, whoever holds a lock on it. */
	if ((rc = region_hdr_read(fd, q->path, &h)))
		return eht_err_prefix(rc, "region %s (owner uid %u, mode %04o; remove it: `eht regions gc`)", q->name,
				      (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	/* A ready region is write-locked only by gc for an instant: a longer hold is not a creator's. */
	const double t0 = eht_now_s();
	if (atomic_load(&h.ready) && deadline > t0 + READY_LOCK_WAIT_S)
		deadline = t0 + READY_LOCK_WAIT_S;
	double backoff = 0.001;
	for (;;) {
		rc = region_lock(fd, F_RDLCK);
		if (rc == -EAGAIN) {
			/* The creator is building it (or gc holds the lock for an instant). */
			if (eht_now_s() >= deadline) {
				bool ok = region_hdr_read(fd, q->path, &h) == 0;
				if (ok && atomic_load(&h.ready))
					return eht_err(ETIMEDOUT, "region %s (%s) is ready but another process held its "
								  "write lock for %.1f s (no creator does)",
						       q->name, q->path, eht_now_s() - t0);
				return eht_err(ETIMEDOUT, "region %s (%s) not ready after %.1f s: its creator (pid %d) is still building it",
					       q->name, q->path, q->timeout_s, ok ? h.creator_pid : 0);
			}
			sleep_s(backoff);
			backoff = backoff * 2 > 0.05 ? 0.05 : backoff * 2;
			continue;
		}
		if (rc)
			return eht_err(rc, "region %s: locking %s: %s", q->name, q->path, strerror(-rc));
		rc = region_hdr_read(fd, q->path, &h);
		if (rc)
			return rc;
		if (atomic_load(&h.ready))
			break;
		/* We hold a read lock and it is not ready: its creator died before marking it ready. */
		if (h.policy & REGION_HDR_ANON)
			return eht_err(EINVAL, "region %s: handed over before its creator marked it ready", q->name);
		if (!same_file(q->path, &st))
			return RETRY;
		if (q->flags & EHT_REGION_NO_RECLAIM)
			return eht_err(EOWNERDEAD, "region %s (%s): its creator (pid %d) died before marking it ready; "
						   "`eht regions gc` removes it",
				       q->name, q->path, h.creator_pid);
		/* Reclaim under the write lock, so only one process unlinks, and only this file. */
		if (region_lock(fd, F_WRLCK) == 0 && region_hdr_read(fd, q->path, &h) == 0 && !atomic_load(&h.ready)) {
			if (region_unlink_if_same(q->path, st.st_dev, st.st_ino) == 0)
				eht_warn("region %s: reclaimed a stale region (creator pid %d died before ready)", q->name,
					 h.creator_pid);
		} else {
			sleep_s(0.005);
		}
		return RETRY;
	}
	rc = check_match(q, &h);
	if (rc)
		return rc;
	struct eht_region *r = calloc(1, sizeof(*r));
	if (!r)
		return eht_err(ENOMEM, "region %s: out of memory", q->name);
	r->map_bytes = (size_t)h.file_bytes;
	r->map = map_file(fd, r->map_bytes, (h.policy & REGION_HDR_HUGETLB) ? (size_t)h.page_size
					     : (h.policy & EHT_REGION_THP) ? THP_SIZE : 4096);
	if (!r->map) {
		rc = eht_err_sys(errno, "region %s: mapping %s", q->name, q->path);
		free(r);
		return rc;
	}
	r->fd = fd;
	r->hdr = r->map;
	r->data = (char *)r->map + h.data_offset;
	r->bytes = h.data_bytes;
	r->page_size = h.page_size;
	r->numa_node = h.numa_node;
	r->ready = true;
	r->device = -1;
	r->pid = getpid();
	r->anon = (h.policy & REGION_HDR_ANON) != 0;
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	snprintf(r->name, sizeof(r->name), "%s", q->name);
	snprintf(r->path, sizeof(r->path), "%s", r->anon ? "memfd" : q->path);
	if (!(h.policy & REGION_HDR_HUGETLB) && r->page_size >= THP_SIZE)
		madvise(r->data, (size_t)(r->map_bytes - h.data_offset), MADV_HUGEPAGE); /* map the creator's THP */
	attach_count(r);
	eht_debug("region %s: opened %s (creator pid %d)", q->name, q->path, h.creator_pid);
	*out = r;
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
			while ((rc = create(&q, out)) == RETRY)
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
			rc = create(&q, out);
		} else {
			rc = attach(&q, fd, true, deadline, out);
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
	rc = attach(&q, own, false, eht_now_s() + q.timeout_s, out);
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
	attach_count(r);
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
