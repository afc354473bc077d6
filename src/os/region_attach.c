/* SPDX-License-Identifier: Apache-2.0 */
/* region_attach.c: an opener of an existing region: trusts the file under the name only when its
 * owner and mode allow, waits for its creator to mark it ready (reclaiming it when the creator
 * died), checks it is the region asked for and maps it. */
#include "os/region_req.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

/* How long an opener waits on a ready region's write lock (gc holds it for an instant). */
#define READY_LOCK_WAIT_S 5.0

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

void region_count_attach(struct eht_region *r)
{
	if (r->anon || !(r->hdr->policy & EHT_REGION_UNLINK_WHEN_MAPPED))
		return;
	uint32_t n = atomic_fetch_add(&r->hdr->attached, 1) + 1;
	if (n < r->hdr->expected_peers)
		return;
	if (n > r->hdr->expected_peers)
		eht_warn("region %s: %u processes mapped it, %u expected", r->name, n, r->hdr->expected_peers);
	int rc = region_unlink_if_same(r->path, r->dev, r->ino);
	if (rc == 0)
		eht_info("region %s: all %u peers mapped it; unlinked (the memory lives while mapped)", r->name, n);
	else if (rc != -ESTALE)
		eht_warn("region %s: unlinking %s after the last peer: %s", r->name, r->path, strerror(-rc));
}

static int check_match(const struct req *q, const struct region_hdr *h)
{
	char a[32], b[32];
	if (q->bytes && h->data_bytes != q->bytes)
		return eht_err(EINVAL, "region %s holds %" PRIu64 " bytes (%s) but %" PRIu64 " bytes (%s) were asked; "
				       "remove it (eht regions gc / eht_region_unlink) or ask for its size",
			       q->name, h->data_bytes, region_fmt_bytes(h->data_bytes, a, sizeof(a)), q->bytes,
			       region_fmt_bytes(q->bytes, b, sizeof(b)));
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

/* region_req.h. Waits with a backoff while the creator holds the write lock. */
int region_attach(struct req *q, int fd, bool named, double deadline, struct eht_region **out)
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
	r->map = region_map_file(fd, r->map_bytes, (h.policy & REGION_HDR_HUGETLB) ? (size_t)h.page_size
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
	region_count_attach(r);
	eht_debug("region %s: opened %s (creator pid %d)", q->name, q->path, h.creator_pid);
	*out = r;
	return 0;
}
