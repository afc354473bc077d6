/* SPDX-License-Identifier: Apache-2.0 */
/* region_admin.c: listing regions, removing stale and orphaned ones (gc), unlinking by name. */
#include "os/region_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "os/fsinfo.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/grow.h"
#include "util/log.h"
#include "util/settings.h"

const char *eht_region_state_name(int state)
{
	switch (state) {
	case EHT_REGION_STATE_READY: return "ready";
	case EHT_REGION_STATE_IDLE: return "idle";
	case EHT_REGION_STATE_BUILDING: return "building";
	case EHT_REGION_STATE_STALE: return "stale";
	case EHT_REGION_STATE_ORPHANED: return "orphaned";
	case EHT_REGION_STATE_INVALID: return "invalid";
	case EHT_REGION_STATE_PARTIAL: return "partial";
	default: return "unknown";
	}
}

int eht_region_unlink(const char *name, const char *dir)
{
	int rc = region_name_check(name);
	if (rc)
		return rc;
	char path[4096 + 256];
	snprintf(path, sizeof(path), "%s/" REGION_PREFIX "%s", eht_region_dir(dir), name);
	if (unlink(path) != 0)
		return eht_err_sys(errno, "removing region %s (%s)", name, path);
	return 0;
}

int eht_region_unlink_if_same(const eht_region *r)
{
	if (!r)
		return eht_err(EINVAL, "eht_region_unlink_if_same: NULL region");
	if (r->anon)
		return eht_err(EINVAL, "region %s: a memfd region has no name to remove", r->name);
	if (!r->creator || r->pid != getpid())
		return eht_err(EPERM, "region %s: only the process that created it removes its name (%s)", r->name,
			       r->creator ? "this is a forked child of the creator" : "this process opened it");
	int rc = region_unlink_if_same(r->path, r->dev, r->ino);
	if (rc == -ESTALE)
		return eht_err(ESTALE, "region %s: %s names another file now (or none): left as it is", r->name, r->path);
	if (rc)
		return eht_err(rc, "removing region %s (%s): %s", r->name, r->path, strerror(-rc));
	return 0;
}

static bool creator_alive(const struct region_hdr *h)
{
	char boot[40];
	region_boot_id(boot);
	if (h->creator_pid <= 0 || strncmp(boot, h->boot_id, sizeof(boot)) != 0)
		return false;
	if (kill(h->creator_pid, 0) != 0 && errno == ESRCH)
		return false;
	uint64_t start = region_proc_start(h->creator_pid);
	return start != 0 && start == h->creator_start;
}

/* The state of one file given the lock others hold on it (F_UNLCK, F_RDLCK, F_WRLCK). */
static int state_of(bool partial, bool valid, const struct region_hdr *h, int lock)
{
	if (partial)
		return EHT_REGION_STATE_PARTIAL;
	if (!valid)
		return EHT_REGION_STATE_INVALID;
	if (!atomic_load(&((struct region_hdr *)h)->ready))
		return lock == F_WRLCK ? EHT_REGION_STATE_BUILDING : EHT_REGION_STATE_STALE;
	if (lock != F_UNLCK)
		return EHT_REGION_STATE_READY;
	return (h->policy & EHT_REGION_UNLINK_WHEN_MAPPED) ? EHT_REGION_STATE_ORPHANED : EHT_REGION_STATE_IDLE;
}

/* Fills e from the open file fd (name already set). */
static void describe(int fd, const char *path, bool partial, const struct stat *st, struct eht_region_entry *e)
{
	struct region_hdr h;
	memset(&h, 0, sizeof(h));
	bool valid = !partial && region_hdr_read(fd, path, &h) == 0;
	int lock = region_lock_probe(fd);
	e->state = state_of(partial, valid, &h, lock < 0 ? F_UNLCK : lock);
	e->file_bytes = (uint64_t)st->st_size;
	e->allocated = (uint64_t)st->st_blocks * 512;
	e->mode = st->st_mode & 07777;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->numa_node = -1;
	e->age_s = (double)eht_wall_ns() * 1e-9 - (double)st->st_ctime;
	if (!valid)
		return;
	e->bytes = h.data_bytes;
	e->rows = h.rows;
	e->row_bytes = h.row_bytes;
	e->page_size = h.page_size;
	e->numa_node = h.numa_node;
	e->creator_pid = h.creator_pid;
	e->creator_alive = creator_alive(&h);
	e->unlink_when_mapped = h.policy & EHT_REGION_UNLINK_WHEN_MAPPED;
	e->attached = atomic_load(&h.attached);
	e->expected_peers = h.expected_peers;
	e->age_s = (double)eht_wall_ns() * 1e-9 - (double)h.created_ns * 1e-9;
}

static int is_ours(const char *fname, bool *partial)
{
	*partial = strncmp(fname, REGION_TMP_PREFIX, strlen(REGION_TMP_PREFIX)) == 0;
	return *partial || (strncmp(fname, REGION_PREFIX, strlen(REGION_PREFIX)) == 0 && fname[strlen(REGION_PREFIX)]);
}

int eht_region_list(const char *dir_in, struct eht_region_entry **entries)
{
	if (!entries)
		return eht_err(EINVAL, "eht_region_list: NULL entries");
	*entries = NULL;
	const char *dir = eht_region_dir(dir_in);
	DIR *d = opendir(dir);
	if (!d)
		return eht_err_sys(errno, "listing regions in %s", dir);
	struct eht_region_entry *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		bool partial;
		if (!is_ours(de->d_name, &partial))
			continue;
		char path[4096 + 256];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			continue; /* removed meanwhile, or not ours to read */
		struct stat st;
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			continue;
		}
		struct eht_region_entry *nv = eht_grow(v, &cap, n, sizeof(*v));
		if (!nv) {
			close(fd);
			rc = eht_err(ENOMEM, "listing regions: out of memory");
			break;
		}
		v = nv;
		struct eht_region_entry *e = &v[n++];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", partial ? de->d_name : de->d_name + strlen(REGION_PREFIX));
		describe(fd, path, partial, &st, e);
		close(fd);
	}
	closedir(d);
	if (rc) {
		free(v);
		return rc;
	}
	*entries = v;
	return (int)n;
}

void eht_region_list_free(struct eht_region_entry *entries) { free(entries); }

/* The creator's pid in a partial file's name (REGION_TMP_PREFIX name.pid.counter.16 hex digits, as
 * region_create makes it), or 0 where the name is not of that form. */
static int partial_creator_pid(const char *fname)
{
	char s[512], *f[3]; /* the random part, the counter, the pid */
	if (snprintf(s, sizeof(s), "%s", fname) >= (int)sizeof(s))
		return 0;
	for (int k = 0; k < 3; k++) {
		char *dot = strrchr(s, '.');
		if (!dot)
			return 0;
		*dot = '\0';
		f[k] = dot + 1;
	}
	const char *dec = "0123456789";
	if (strlen(f[0]) != 16 || strspn(f[0], "0123456789abcdef") != 16 || !*f[1] || f[1][strspn(f[1], dec)] ||
	    !*f[2] || f[2][strspn(f[2], dec)] || strlen(f[2]) > 9)
		return 0;
	return atoi(f[2]);
}

/* The pid of a partial file's creator where it no longer runs, else 0: a creator that is gone is not
 * between making the file and taking its write lock (gc_one then checks the lock itself). A reused
 * pid keeps the file until the grace has passed. */
static int partial_dead_pid(const struct eht_region_entry *e)
{
	int pid = partial_creator_pid(e->name);
	return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH ? pid : 0;
}

/* gc_one's own flag: a partial file whose creator is known dead needs no grace. */
#define GC_CREATOR_GONE 0x100u

/* Removes one candidate when, holding its write lock, it is still removable. 1 removed (or would
 * be), 0 kept, -errno. */
static int gc_one(const char *dir, struct eht_region_entry *e, unsigned flags)
{
	bool partial = e->state == EHT_REGION_STATE_PARTIAL;
	char path[4096 + 256];
	snprintf(path, sizeof(path), "%s/%s%s", dir, partial ? "" : REGION_PREFIX, e->name);
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : eht_err_sys(errno, "gc: opening %s", path);
	int rc = 0;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		rc = eht_err_sys(errno, "gc: fstat %s", path);
		goto out;
	}
	/* The write lock proves nobody maps it (every user holds a read lock) and nobody builds it. */
	if (region_lock(fd, F_WRLCK) != 0)
		goto out;
	describe(fd, path, partial, &st, e);
	/* describe() probed with our own lock held: an OFD lock never conflicts with itself, so the
	 * state reads as unlocked, which is what it is for everyone else. */
	switch (e->state) {
	case EHT_REGION_STATE_STALE:
	case EHT_REGION_STATE_ORPHANED:
	case EHT_REGION_STATE_INVALID:
		break;
	case EHT_REGION_STATE_PARTIAL:
		/* (younger, a creator may be between open(O_EXCL) and taking its lock) */
		if (!(flags & GC_CREATOR_GONE) && e->age_s < eht_setting_double(EHT_SET_REGION_GC_GRACE_S))
			goto out;
		break;
	default:
		goto out;
	}
	if (!(flags & EHT_REGION_GC_DRY_RUN)) {
		int u = region_unlink_if_same(path, st.st_dev, st.st_ino);
		if (u == -ESTALE)
			goto out;
		if (u) {
			rc = eht_err(u, "gc: removing %s: %s", path, strerror(-u));
			goto out;
		}
		eht_info("gc: removed %s region %s (%s)", eht_region_state_name(e->state), e->name, path);
	}
	rc = 1;
out:
	close(fd);
	return rc;
}

int eht_region_gc(const char *dir_in, unsigned flags, void (*report)(const struct eht_region_entry *, void *),
		  void *arg)
{
	if (flags & ~EHT_REGION_GC_DRY_RUN)
		return eht_err(EINVAL, "eht_region_gc: unknown flags 0x%x", flags & ~EHT_REGION_GC_DRY_RUN);
	const char *dir = eht_region_dir(dir_in);
	struct eht_region_entry *v = NULL;
	int n = eht_region_list(dir, &v);
	if (n < 0)
		return n;
	int removed = 0, first = 0;
	for (int i = 0; i < n; i++) {
		int s = v[i].state;
		if (s != EHT_REGION_STATE_STALE && s != EHT_REGION_STATE_ORPHANED && s != EHT_REGION_STATE_INVALID &&
		    s != EHT_REGION_STATE_PARTIAL)
			continue;
		/* A partial file whose named creator is gone needs no grace (it cannot be one being made). */
		bool gone = s == EHT_REGION_STATE_PARTIAL && partial_dead_pid(&v[i]);
		int rc = gc_one(dir, &v[i], flags | (gone ? GC_CREATOR_GONE : 0));
		if (rc > 0) {
			removed++;
			if (report)
				report(&v[i], arg);
		} else if (rc < 0) {
			eht_warn("%s", eht_last_error());
			if (!first)
				first = rc;
		}
	}
	eht_region_list_free(v);
	if (first && removed == 0)
		return first;
	return removed;
}

int region_reclaim_dead(const char *dir)
{
	struct eht_region_entry *v = NULL;
	int n = eht_region_list(dir, &v);
	if (n < 0) {
		eht_debug("region reclaim in %s skipped: %s", dir, eht_last_error());
		eht_err_clear();
		return 0;
	}
	int removed = 0;
	for (int i = 0; i < n; i++) {
		struct eht_region_entry *e = &v[i];
		/* Ours only, and only what a dead creator left: never ready (killed while populating),
		 * ready and mapped by nobody although meant to be unlinked once mapped, or a file not yet
		 * linked under its name (killed while sizing or mapping it). gc_one checks again under
		 * the write lock. */
		if (e->uid != geteuid())
			continue;
		bool partial = e->state == EHT_REGION_STATE_PARTIAL;
		int pid = partial ? partial_dead_pid(e) : e->creator_pid;
		bool left_by_dead = partial ? pid > 0
					    : !e->creator_alive && (e->state == EHT_REGION_STATE_STALE ||
								    e->state == EHT_REGION_STATE_ORPHANED);
		if (!left_by_dead)
			continue;
		if (gc_one(dir, e, partial ? GC_CREATOR_GONE : 0) > 0) {
			removed++;
			eht_info("region %s: reclaimed %.1f MiB that dead pid %d left in %s", e->name,
				 (double)e->allocated / (1 << 20), pid, dir);
		} else {
			eht_err_clear();
		}
	}
	eht_region_list_free(v);
	return removed;
}
