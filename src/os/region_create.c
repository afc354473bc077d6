/* SPDX-License-Identifier: Apache-2.0 */
/* region_create.c: a new region's creator: picks its backing (tmpfs, hugetlbfs, a memfd, THP), sizes
 * it against the room there, maps and binds it, writes its header, links it under its name and
 * populates it with several threads. */
#include "os/region_req.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004u
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002u
#endif
#define MFD_HUGE_SHIFT_ 26
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#include "os/fsinfo.h"
#include "os/numa.h"
#include "util/clock.h"
#include "util/cpu.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/log.h"
#include "util/pool.h"
#include "util/settings.h"

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }


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
			       q->name, region_fmt_bytes(need, a, sizeof(a)), region_fmt_bytes(q->fs.free_bytes, b, sizeof(b)), q->dir,
			       q->fs.hugetlbfs ? " (free huge pages)" : "",
			       (unsigned long long)((need >> 30) + 1));
	if (q->fs.hugetlbfs && !(q->flags & REGION_MEMFD)) {
		if (strict && eht_numa_node_count() > 1) {
			uint64_t f = eht_hugetlb_free(q->fs.page_size, node);
			if (f < need)
				return eht_err(ENOSPC, "region %s: %s needed but NUMA node %d has %s of free huge pages; "
						       "fix: raise /sys/devices/system/node/node%d/hugepages/*/nr_hugepages",
					       q->name, region_fmt_bytes(need, a, sizeof(a)), node, region_fmt_bytes(f, b, sizeof(b)), node);
		}
		return 0;
	}
	uint64_t total = 0, freeb = 0, avail = 0;
	if (strict && eht_numa_node_count() > 1 && eht_numa_node_mem(node, &total, &freeb, &avail) == 0 && avail < need)
		return eht_err(ENOSPC, "region %s: %s needed but NUMA node %d has only %s free; fix: free memory on "
				       "that node or bind to another (opts.numa_node)",
			       q->name, region_fmt_bytes(need, a, sizeof(a)), node, region_fmt_bytes(avail, b, sizeof(b)));
	avail = eht_mem_available();
	if (avail && avail < need)
		return eht_err(ENOSPC, "region %s: %s needed but only %s of memory is available (MemAvailable); "
				       "fix: free memory or use a smaller table",
			       q->name, region_fmt_bytes(need, a, sizeof(a)), region_fmt_bytes(avail, b, sizeof(b)));
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

/* fallocate of [off, off + len) in steps. tmpfs of older kernels gives a whole call up at any signal
 * (EINTR; CPython's handlers do not restart calls) and frees what that call reserved, so an
 * interrupted step is tried again, halved down to one page, until it fits between signals; cancel
 * stops it. 0 or an errno. EHT_TEST_FAULT=populate-eintr plays such a kernel (6.18, here, stops a
 * fallocate only at a fatal signal). */
static int reserve(int fd, uint64_t off, uint64_t len, uint64_t page, const volatile int *cancel)
{
	uint64_t step = 64u << 20;
	/* the played kernel: a step over 1 MiB (or over one huge page) interrupted */
	const uint64_t played = eht_fault_listed("populate-eintr", -1) ? (page > (1u << 20) ? page : (1u << 20)) : 0;
	while (len) {
		uint64_t n = len < step ? len : step;
		int e = played && n > played ? EINTR : posix_fallocate(fd, (off_t)off, (off_t)n);
		if (e == EINTR && !(cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED))) {
			step = step / 2 > page ? step / 2 : page;
			continue;
		}
		if (e)
			return e;
		off += n;
		len -= n;
	}
	return 0;
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
	/* EHT_TEST_FAULT=populate-madvise plays a kernel before 5.14 (EINVAL), so tests run the fallback */
	int mrc = eht_fault_listed("populate-madvise", -1) ? (errno = EINVAL, -1)
							   : madvise(p.base, p.page, MADV_POPULATE_WRITE);
	if (mrc != 0) {
		if (errno != EINVAL)
			return eht_err(ENOSPC, "region %s: allocating the first page in %s failed (%s)", q->name, q->dir,
				       strerror(errno));
		p.madv = false;
		eht_warn_once("MADV_POPULATE_WRITE unsupported (kernel before 5.14): regions are allocated with "
			      "fallocate on one thread, then touched");
		int e = reserve(r->fd, (uint64_t)((char *)r->data - (char *)r->map), p.len, p.page, q->cancel);
		if (e == EINTR)
			return eht_err(EINTR, "region %s: stopped while reserving %s", q->name,
				       region_fmt_bytes(p.len, a, sizeof(a)));
		if (e)
			return eht_err(e == ENOSPC || e == ENOMEM ? ENOSPC : e,
				       "region %s: reserving %s in %s failed (%s); fix: Docker --shm-size or --ipc=host",
				       q->name, region_fmt_bytes(p.len, a, sizeof(a)), q->dir, strerror(e));
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
		return eht_err(EINTR, "region %s: stopped while allocating %s", q->name, region_fmt_bytes(p.len, a, sizeof(a)));
	if (e)
		return eht_err(ENOSPC, "region %s: allocating %s in %s failed at offset %s (%s): the file system or the "
				       "NUMA node ran out of memory; fix: Docker --shm-size or --ipc=host, free memory, "
				       "or raise the huge page pool on hugetlbfs",
			       q->name, region_fmt_bytes(p.len, a, sizeof(a)), q->dir,
			       region_fmt_bytes(atomic_load(&p.failed_at), b, sizeof(b)), strerror(e));
	double dt = eht_now_s() - t0;
	eht_info("region %s: populated %s with %u thread(s) in %.2f s (%.2f GB/s)", q->name,
		 region_fmt_bytes(p.len, a, sizeof(a)), threads, dt, dt > 0 ? (double)p.len / dt / 1e9 : 0.0);
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
		      region_fmt_bytes(hp ? hp : THP_SIZE, a, sizeof(a)), region_fmt_bytes(q->bytes, b, sizeof(b)));
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
	bool memfd; /* a hugetlb memfd (EHT_REGION_HUGE): a failed map retries on the directory's pages */
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
	/* Aligned by hand on hugetlb too: the kernel would align it, an emulator's mmap (qemu-user) does not. */
	r->map = region_map_file(r->fd, r->map_bytes, k->hugetlb ? (size_t)k->hpage : thp ? THP_SIZE : 4096);
	if (!r->map && k->memfd) {
		/* The pool emptied since it was read (mapping reserves every huge page up front). */
		eht_info("region %s: mapping a hugetlb memfd failed (%s); the directory's pages", q->name, strerror(errno));
		return RETRY;
	}
	if (!r->map)
		return eht_err_sys(errno == ENOMEM && q->fs.hugetlbfs ? ENOSPC : errno, "region %s: mapping %s of %s",
				   q->name, region_fmt_bytes(file_bytes, a, sizeof(a)), tmp);
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

/* region_req.h. The temporary name is unpredictable, so another user cannot pre-create it. */
int region_create(struct req *q, struct eht_region **out)
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
		rc = eht_err_sys(errno, "region %s: sizing %s to %s", q->name, tmp, region_fmt_bytes(file_bytes, a, sizeof(a)));
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
	eht_info("region %s: created %s in %s (node %d%s%s)", q->name, region_fmt_bytes(q->bytes, a, sizeof(a)),
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
