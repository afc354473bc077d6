/* SPDX-License-Identifier: Apache-2.0 */
/* region_table.c: the region tiers of eht_table: rows live in a shared region the table owns. */
#include "table/region/region_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "gpu/pin.h"
#include "table/table_impl.h"
#include "os/region_impl.h"
#include "util/err.h"
#include "util/log.h"

struct region_table {
	eht_region *r;
	bool report_pinned; /* false: tier region even when this process pinned (see _ex) */
};

static int region_table_close(eht_table *t)
{
	struct region_table *rt = t->impl;
	t->impl = NULL;
	int rc = rt ? eht_region_close(&rt->r) : 0;
	free(rt);
	return rc;
}

static void region_table_describe(const eht_table *t, struct eht_table_info *info)
{
	const struct region_table *rt = t->impl;
	const eht_region *r = rt->r;
	bool pinned = rt->report_pinned && eht_region_is_pinned(r);
	info->tier = pinned ? EHT_TIER_REGION_PINNED : EHT_TIER_REGION;
	info->host = eht_region_data(r);
	info->device_ptr = pinned ? eht_region_device_ptr(r) : 0;
	info->device = pinned ? eht_region_device(r) : -1;
	info->numa_node = eht_region_numa_node(r);
	info->page_size = eht_region_page_size(r);
}

/* Another process maps the same pages from the region file: one descriptor, and where the rows
 * start in it. */
static int region_table_export(const eht_table *t, json_t *desc, int **fds, size_t *nfds)
{
	const eht_region *r = ((const struct region_table *)t->impl)->r;
	int *f = malloc(sizeof(int));
	if (!f)
		return eht_err(ENOMEM, "table %s: out of memory", t->name);
	/* A new read-only open of the same file (the region is unlinked; /proc still names it): the
	 * importer can neither map it writable nor mprotect its mapping to write. */
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", r->fd);
	f[0] = open(proc, O_RDONLY | O_CLOEXEC);
	if (f[0] < 0) {
		int e = errno;
		free(f);
		return eht_err_sys(e, "table %s: reopening its region read-only (%s)", t->name, proc);
	}
	json_object_set_new(desc, "data_offset", json_integer((json_int_t)((const char *)r->data - (const char *)r->map)));
	json_object_set_new(desc, "file_bytes", json_integer((json_int_t)r->map_bytes));
	json_object_set_new(desc, "numa", json_integer(t->info.numa_node));
	json_object_set_new(desc, "page_size", json_integer((json_int_t)t->info.page_size));
	*fds = f;
	*nfds = 1;
	return 0;
}

/* Once loaded, the rows are sealed: a memfd region (eht serve's) gets the write seals, after which
 * no descriptor of it, however reopened (fchmod + /proc/self/fd, or root), can write a row. A pin
 * holds page references the write seal would wait for: the pin is dropped first and made again,
 * read-only, on the sealed pages. A named region (a group's file in a directory) cannot be
 * sealed: it loses its write bits, which stops other users, not its owner's uid or root. */
static void region_table_seal(eht_table *t)
{
	eht_region *r = ((struct region_table *)t->impl)->r;
	if (r->anon) {
		const struct region_gpu_ops *gpu = r->gpu;
		int device = r->device;
		size_t len = (size_t)(r->map_bytes - ((char *)r->data - (char *)r->map));
		bool repin = r->pinned && gpu && gpu->unpin;
		if (repin) {
			if (gpu->unpin(r->data, len) != 0)
				eht_warn("table %s: unpinning before the seal: %s", t->name, eht_last_error());
			r->pinned = false;
			r->dptr = 0;
		}
		if (region_seal(r) != 0)
			eht_warn("table %s: its rows stay writable by descriptors of this uid: %s", t->name,
				 eht_last_error());
		uint64_t dptr = 0;
		if (repin && eht_gpu_pin(r->data, len, device, r->sealed ? EHT_DEV_HOST_READ_ONLY : 0, &dptr) == 0) {
			r->pinned = true;
			r->device = device;
			r->dptr = dptr;
		} else if (repin) {
			eht_warn("table %s: cannot pin the sealed rows for GPU %d again (%s); CPU reads only here "
				 "(workers pin their own mappings)", t->name, device, eht_last_error());
		}
		return;
	}
	struct stat st;
	if (fstat(r->fd, &st) != 0 || fchmod(r->fd, st.st_mode & 0440) != 0)
		eht_debug("table %s: cannot drop the region file's write bits: %s", t->name, strerror(errno));
}

static const struct eht_table_ops region_ops = {.describe = region_table_describe,
						.export_to = region_table_export, .seal = region_table_seal,
						.close = region_table_close};

int eht_table_from_region_ex(eht_region **region, const char *name, bool report_pinned, eht_table **out)
{
	if (!out)
		return eht_err(EINVAL, "eht_table_from_region: NULL out");
	*out = NULL;
	if (!region || !*region)
		return eht_err(EINVAL, "eht_table_from_region: NULL region");
	eht_region *r = *region;
	if (!eht_region_is_ready(r))
		return eht_err(EINVAL, "region %s is not ready: its creator must mark it ready first", eht_region_name(r));
	if (!eht_region_rows(r) || !eht_region_row_bytes(r))
		return eht_err(EINVAL, "region %s records no row geometry (open it with opts.rows and opts.row_bytes)",
			       eht_region_name(r));
	struct region_table *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return eht_err(ENOMEM, "table: out of memory");
	*rt = (struct region_table){.r = r, .report_pinned = report_pinned};
	struct eht_table_info info = {
		.size = sizeof(info),
		.rows = eht_region_rows(r),
		.row_bytes = eht_region_row_bytes(r),
		.first_row = 0,
		.local_rows = eht_region_rows(r),
		.name = name ? name : eht_region_name(r),
	};
	int rc = eht_table_new(&info, &region_ops, rt, out);
	if (rc == 0)
		*region = NULL;
	else
		free(rt);
	return rc;
}

int eht_table_from_region(eht_region **region, const char *name, eht_table **out)
{
	return eht_table_from_region_ex(region, name, true, out);
}
