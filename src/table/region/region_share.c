/* SPDX-License-Identifier: Apache-2.0 */
/* region_share.c: the region tier's part of eht_table_share: one /dev/shm region for the whole group,
 * pinned on every rank when possible, the same tier reported everywhere. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "os/region_impl.h"
#include "table/numa_copy.h"
#include "table/region/region_table.h"
#include "table/table_impl.h"
#include "util/err.h"

/* Whole messages: the ENOSPC one with its fixes is ~400 characters (cut mid-word at 232 before). */
#define MSG_LEN EHT_ERR_MAX

struct region_name_msg { /* rank 0 to the others: the fresh region's name, or why it failed */
	int32_t rc;
	int32_t anon; /* a hugetlb memfd: its descriptor follows (eht_group_broadcast_fds) */
	char name[224];
	char msg[MSG_LEN];
};

struct region_result {
	int32_t rc;
	int32_t pinned;
	char msg[MSG_LEN];
};

/* A table name as a region name (util/name.h's file-name rule): tensor names hold '/' and other
 * characters a file name cannot; each becomes '_', a leading '.' or a ".." too. The random part
 * after it keeps region names unique, so the mapping need not be reversible. */
static void region_safe_name(const char *name, char *out, size_t len)
{
	size_t n = 0;
	for (const char *p = name; *p && n + 1 < len; p++) {
		unsigned char c = (unsigned char)*p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
			  c == '-' || (c == '.' && n > 0 && out[n - 1] != '.');
		out[n++] = ok ? (char)c : '_';
	}
	if (n == 0)
		out[n++] = '_';
	out[n] = '\0';
}

/* Rank 0: creates the region under a fresh unpredictable name and marks it ready; h gets the name,
 * the result (with its message) and whether the region is a memfd to pass by descriptor. */
static void create_named(uint64_t bytes, const char *base, const struct eht_region_opts *ro,
			 struct region_name_msg *h, eht_region **r)
{
	static unsigned counter;
	/* A random part: another user who pre-creates the name cannot make this create fail. */
	uint64_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (uint64_t)(uintptr_t)h ^ ((uint64_t)time(NULL) << 20);
	char safe[141];
	region_safe_name(base, safe, sizeof(safe));
	snprintf(h->name, sizeof(h->name), "%s.%d.%u.%016llx", safe, (int)getpid(),
		 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED), (unsigned long long)rnd);
	int rc = eht_region_open(h->name, bytes, ro, r);
	if (!rc && !eht_region_is_creator(*r))
		rc = eht_err(EEXIST, "region %s existed already", h->name);
	if (!rc)
		rc = eht_region_mark_ready(*r);
	if (rc) {
		snprintf(h->msg, sizeof(h->msg), "%s", eht_last_error());
		eht_region_close(r);
	}
	h->rc = rc;
	h->anon = !rc && (*r)->anon;
}

/* The group's verdict from every rank's result: the first failed rank (or, for region-pinned, the
 * first that could not pin, its result made -EIO), or -1; *pinned: every rank pinned. */
static int share_verdict(struct region_result *all, int size, int tier, int *pinned)
{
	int bad = -1;
	*pinned = 1;
	for (int i = 0; i < size; i++) {
		if (all[i].rc && bad < 0)
			bad = i;
		*pinned &= all[i].pinned;
	}
	if (bad < 0 && tier == EHT_TIER_REGION_PINNED && !*pinned) {
		for (int i = 0; i < size; i++)
			if (!all[i].pinned) {
				bad = i;
				break;
			}
		all[bad].rc = -EIO;
		snprintf(all[bad].msg, sizeof(all[bad].msg), "could not pin the region for GPU DMA%s",
			 eht_dev_count() > 0 ? "" : " (no GPU)");
	}
	return bad;
}

/* The share failed: the region rank 0 made for it loses its name (a rank that mapped it keeps its
 * mapping). A ready region is unlinked by the last of the expected peers to map it, so one that
 * some peer never maps would otherwise stay in /dev/shm after the group. */
static void abandon(eht_region **rp)
{
	const eht_region *r = *rp;
	if (r && r->creator && !r->anon && r->pid == getpid())
		/* (quietly: eht_region_unlink_if_same would replace the share's own error message; a
		 * name gone already needs nothing) */
		(void)region_unlink_if_same(r->path, r->dev, r->ino);
	eht_region_close(rp);
}

/* The region step, a collective of its own: rank 0 creates a fresh region (a name no earlier run can
 * have left behind), marks it ready, and tells the others its name; they open it; each rank pins it
 * unless tier is EHT_TIER_REGION; an all-gather makes the tier the same everywhere: region-pinned
 * only when every rank pinned. The region file is unlinked once every rank mapped it, so nothing
 * outlives the group. */
int eht_region_share(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, int tier, bool quiet,
		     eht_table **out)
{
	const int rank = eht_group_rank(g), size = eht_group_size(g);
	const char *base = opts && opts->name ? opts->name : "table";
	uint64_t row_bytes = opts && opts->row_bytes ? opts->row_bytes : 1;
	int device = opts && opts->device >= 0 ? opts->device : 0;
	struct eht_region_opts ro = {
		.size = sizeof(ro), .flags = EHT_REGION_UNLINK_WHEN_MAPPED | EHT_REGION_NUMA_DEVICE | EHT_REGION_HUGE,
		.rows = bytes / row_bytes, .row_bytes = row_bytes, .device = device, .expected_peers = (unsigned)size,
		.cancel = opts ? opts->cancel : NULL, /* a long populate stops when the caller asks */
	};
	/* A group of one (eht serve): nobody opens the region by name, so it is a memfd, which the
	 * tier's seal can make unwritable once filled. */
	if (size == 1)
		ro.flags |= REGION_MEMFD;
	/* A copy per NUMA node names its node; one this machine lacks (forced by a test) is not bound. */
	if (opts && (opts->flags & EHT_SHARE_NUMA_NODE)) {
		ro.flags &= ~EHT_REGION_NUMA_DEVICE;
		if (eht_copy_bindable(opts->numa_node)) {
			ro.flags |= EHT_REGION_NUMA_NODE;
			ro.numa_node = opts->numa_node;
		}
	}
	struct region_name_msg h = {0};
	struct region_result mine = {0}, *all = NULL;
	eht_region *r = NULL;
	int rc = 0;

	if (rank == 0)
		create_named(bytes, base, &ro, &h, &r);
	int grc = eht_group_broadcast(g, &h, sizeof(h));
	if (grc) {
		abandon(&r);
		return grc;
	}
	if (h.rc)
		return eht_err(h.rc, "%s", h.msg);
	h.name[sizeof(h.name) - 1] = '\0';
	int fd = rank == 0 && h.anon ? r->fd : -1;
	if (h.anon && (grc = eht_group_broadcast_fds(g, &fd, 1)) != 0) {
		abandon(&r);
		return grc;
	}
	if (rank != 0) {
		ro.flags |= EHT_REGION_OPEN_ONLY;
		rc = eht_fault("region", rank);
		if (!rc)
			rc = h.anon ? region_open_fd(h.name, fd, &ro, &r) : eht_region_open(h.name, bytes, &ro, &r);
		if (h.anon)
			close(fd);
	}
	/* The open's message is kept before the pin attempt clears the error state. */
	mine.rc = rc;
	if (rc)
		snprintf(mine.msg, sizeof(mine.msg), "%s", eht_last_error());
	/* Without a GPU there is nothing to pin for (and no warning to print about it). */
	if (!rc && tier != EHT_TIER_REGION && eht_dev_count() > 0 && eht_region_pin(r, device) == 0)
		mine.pinned = 1;
	eht_err_clear();
	all = calloc((size_t)size, sizeof(*all));
	if (!all) {
		abandon(&r);
		return eht_err(ENOMEM, "share: out of memory");
	}
	grc = eht_group_allgather(g, &mine, sizeof(mine), all);
	if (grc) {
		abandon(&r);
		free(all);
		return grc;
	}
	int pinned = 1, bad = share_verdict(all, size, tier, &pinned);
	if (bad >= 0) {
		abandon(&r);
		rc = eht_err(all[bad].rc, "region %s, rank %d: %s", h.name, bad, all[bad].msg);
		free(all);
		return rc;
	}
	free(all);
	/* A rank that pinned while another could not keeps its pin until close but, like every rank,
	 * reports the unpinned tier: GPU strategies must not run on some ranks only. */
	rc = eht_table_from_region_ex(&r, base, pinned, out);
	if (rc)
		abandon(&r);
	return rc;
}
