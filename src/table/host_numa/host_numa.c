/* SPDX-License-Identifier: Apache-2.0 */
/* host_numa.c: the host-NUMA tier: rank 0 creates pinned cuMem memory on the GPU's host NUMA node in
 * chunks and exports a handle per chunk; every rank maps them at one VA that both its GPU and the CPU
 * read; an all-gather of the outcomes makes it all ranks or none. */
#include "table/host_numa/host_numa.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "gpu/probe.h"
#include "gpu/vmm.h"
#include "os/numa.h"
#include "table/table_impl.h"
#include "util/err.h"
#include "util/opts.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/settings.h"

#define CHUNK_DEFAULT (1ull << 30)
#define MSG_LEN 232

/* What rank 0 tells every rank before the handles follow. */
struct share_hdr {
	int32_t status;  /* 0, or rank 0's -errno: every rank returns it */
	int32_t numa;
	uint32_t handle_type;
	uint32_t pad;
	uint64_t bytes, padded, chunk, nchunks, granularity;
	char msg[MSG_LEN];
};

/* One rank's outcome, all-gathered. */
struct share_result {
	int32_t rc;
	char msg[MSG_LEN];
};

struct hn_impl {
	int device;
	eht_dptr va;
	uint64_t padded, chunk;
	size_t nchunks;
	struct eht_hn_layout layout; /* what a late attacher needs (eht_host_numa_export) */
};

static double gib(uint64_t b) { return (double)b / (double)(1ull << 30); }
static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
static uint64_t chunk_len(const struct share_hdr *h, size_t i)
{
	uint64_t off = (uint64_t)i * h->chunk;
	return h->padded - off < h->chunk ? h->padded - off : h->chunk;
}

/* Unmaps the first `mapped` chunks and frees the VA range. Every step attempted; first error kept. */
static int unmap_range(eht_dptr va, uint64_t padded, uint64_t chunk, size_t mapped)
{
	int rc = 0;
	for (size_t i = 0; i < mapped; i++) {
		uint64_t off = (uint64_t)i * chunk;
		uint64_t len = padded - off < chunk ? padded - off : chunk;
		int r = eht_vmm_unmap(va + off, len);
		if (r) {
			eht_warn("host-numa: %s", eht_last_error());
			rc = rc ? rc : r;
		}
	}
	if (va) {
		int r = eht_vmm_free_va(va, padded);
		if (r) {
			eht_warn("host-numa: %s", eht_last_error());
			rc = rc ? rc : r;
		}
	}
	return rc;
}

static void release_handles(eht_vmm_mem *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (h[i]) {
			if (eht_vmm_release(h[i]))
				eht_warn("host-numa: %s", eht_last_error());
			h[i] = 0;
		}
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; fds && i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

static int hn_close(eht_table *t)
{
	struct hn_impl *m = t->impl;
	int rc = 0;
	if (m) {
		rc = eht_dev_use(m->device);
		if (!rc)
			rc = unmap_range(m->va, m->padded, m->chunk, m->nchunks);
		free(m);
	}
	return rc;
}

static void hn_describe(const eht_table *t, struct eht_table_info *info)
{
	const struct hn_impl *m = t->impl;
	info->tier = EHT_TIER_HOST_NUMA;
	info->host = (void *)(uintptr_t)m->va; /* mapped for the host NUMA node too: the same address */
	info->device_ptr = m->va;
	info->device = m->device;
	info->numa_node = m->layout.numa;
	info->page_size = m->layout.granularity;
}

static const struct eht_table_ops hn_ops = {.describe = hn_describe,
					    .export_to = eht_host_numa_export_desc, .close = hn_close};

/* The device this rank works with: opts->device, else the current context's, else 0. */
static int pick_device(const struct eht_share_opts *opts)
{
	if (opts && opts->device >= 0)
		return opts->device;
	void *ctx = NULL;
	int dev = -1;
	if (eht_dev_current(&ctx, &dev) == 0 && ctx && dev >= 0)
		return dev;
	eht_err_clear();
	return 0;
}

static uint64_t reserve_of(const struct eht_share_opts *opts, uint64_t node_total)
{
	if (opts && (opts->flags & EHT_SHARE_NO_RESERVE))
		return 0;
	if (opts && opts->reserve_bytes)
		return opts->reserve_bytes;
	return eht_setting_is_set(EHT_SET_NUMA_RESERVE) ? eht_setting_u64(EHT_SET_NUMA_RESERVE) : node_total / 10;
}

/* The handle kind: FABRIC where asked or exportable (unless POSIX_FD is asked), else POSIX fds. */
static int pick_handle_type(int device, uint32_t flags, struct share_hdr *h)
{
	int rc;
	char why[192] = "";
	if (flags & EHT_SHARE_FABRIC) {
		rc = eht_vmm_export_supported(device, EHT_VMM_FABRIC, why, sizeof(why));
		if (rc <= 0)
			return rc < 0 ? rc : eht_err(EOPNOTSUPP, "FABRIC handles %s", why);
		h->handle_type = EHT_VMM_FABRIC;
	} else if (!(flags & EHT_SHARE_POSIX_FD) &&
		   eht_vmm_export_supported(device, EHT_VMM_FABRIC, NULL, 0) == 1) {
		h->handle_type = EHT_VMM_FABRIC;
	} else {
		rc = eht_vmm_export_supported(device, EHT_VMM_FD, why, sizeof(why));
		if (rc <= 0)
			return rc < 0 ? rc : eht_err(EOPNOTSUPP, "POSIX-fd handles %s", why);
		h->handle_type = EHT_VMM_FD;
	}
	eht_err_clear();
	return 0;
}

/* Rank 0: decide the handle kind, then create and export every chunk. On failure everything created
 * is released and hdr->status/msg say why. */
static int create_and_export(uint64_t bytes, int device, const struct eht_share_opts *opts, struct share_hdr *h,
			     eht_vmm_mem **handles_out, int **fds_out, struct eht_vmm_fabric **fab_out,
			     struct eht_share_times *times)
{
	eht_vmm_mem *handles = NULL;
	int *fds = NULL;
	struct eht_vmm_fabric *fab = NULL;
	size_t created = 0;
	int vmm = 0;
	int rc = eht_dev_attr(device, EHT_DEV_ATTR_HOST_NUMA_VMM, &vmm);
	if (rc || !vmm)
		return eht_err(EOPNOTSUPP, "unsupported here: GPU %d has no host-NUMA virtual memory management", device);
	/* A copy per NUMA node (EHT_SHARE_PER_NUMA) names its node; else the GPU's own. */
	int numa = opts && (opts->flags & EHT_SHARE_NUMA_NODE) ? opts->numa_node : eht_dev_host_numa_id(device);
	if (numa < 0)
		return numa;
	h->numa = numa;

	if ((rc = pick_handle_type(device, opts ? opts->flags : 0, h)))
		return rc;

	const enum eht_vmm_kind kind = (enum eht_vmm_kind)h->handle_type;
	size_t gran = 0;
	rc = eht_vmm_granularity(numa, kind, &gran);
	if (rc)
		return rc;
	uint64_t chunk = opts && opts->chunk_bytes ? opts->chunk_bytes : eht_setting_u64(EHT_SET_SHARE_CHUNK);
	h->granularity = gran;
	h->padded = round_up(bytes, gran);
	h->chunk = round_up(chunk ? chunk : CHUNK_DEFAULT, gran);
	h->nchunks = (h->padded + h->chunk - 1) / h->chunk;

	uint64_t total = 0, freeb = 0, avail = 0;
	rc = eht_numa_node_mem(numa, &total, &freeb, &avail);
	if (rc)
		return rc;
	uint64_t reserve = reserve_of(opts, total);

	handles = calloc(h->nchunks, sizeof(*handles));
	if (!handles)
		return eht_err(ENOMEM, "host-numa: out of memory");
	double t0 = eht_now_s();
	for (size_t i = 0; i < h->nchunks; i++) {
		uint64_t len = chunk_len(h, i), done = (uint64_t)i * h->chunk;
		/* Before: would this chunk take the node under its reserve? After: did it (the estimate lags)?
		 * Pinned memory cannot be reclaimed, so stopping early is the only protection. */
		if (reserve && eht_numa_node_mem(numa, &total, &freeb, &avail) == 0 &&
		    (avail < reserve || avail - reserve < len)) {
			rc = eht_err(ENOMEM, "NUMA node %d fell below its %.1f GiB reserve after %.1f of %.1f GiB", numa,
				     gib(reserve), gib(done), gib(h->padded));
			goto fail;
		}
		rc = eht_fault("create", 0);
		if (!rc)
			rc = eht_vmm_create(&handles[i], len, numa, kind);
		if (rc) {
			eht_err_prefix(rc, "creating chunk %zu (%.1f of %.1f GiB done) on NUMA node %d", i, gib(done),
				       gib(h->padded), numa);
			goto fail;
		}
		created = i + 1;
		if (reserve && eht_numa_node_mem(numa, &total, &freeb, &avail) == 0 && avail < reserve) {
			rc = eht_err(ENOMEM, "NUMA node %d fell below its %.1f GiB reserve after %.1f of %.1f GiB", numa,
				     gib(reserve), gib(done + len), gib(h->padded));
			goto fail;
		}
	}
	double t1 = eht_now_s();
	if (h->handle_type == EHT_VMM_FABRIC) {
		fab = calloc(h->nchunks, sizeof(*fab));
		if (!fab) {
			rc = eht_err(ENOMEM, "host-numa: out of memory");
			goto fail;
		}
	} else {
		fds = malloc(h->nchunks * sizeof(*fds));
		if (!fds) {
			rc = eht_err(ENOMEM, "host-numa: out of memory");
			goto fail;
		}
		for (size_t i = 0; i < h->nchunks; i++)
			fds[i] = -1;
	}
	for (size_t i = 0; i < h->nchunks; i++) {
		rc = eht_fault("export", 0);
		if (!rc)
			rc = eht_vmm_export(fab ? (void *)&fab[i] : (void *)&fds[i], handles[i], kind);
		if (rc) {
			eht_err_prefix(rc, "exporting chunk %zu as %s", i, fab ? "FABRIC" : "POSIX fd");
			goto fail;
		}
	}
	if (times) {
		times->create_s = t1 - t0;
		times->export_s = eht_now_s() - t1;
	}
	*handles_out = handles;
	*fds_out = fds;
	*fab_out = fab;
	return 0;
fail:
	close_fds(fds, h->nchunks);
	free(fds);
	free(fab);
	release_handles(handles, created);
	free(handles);
	return rc;
}

/* Every rank: import (ranks > 0), reserve one VA range, map the chunks, grant the GPU and the host
 * NUMA node read-write access. Handles are released whatever happens: the mappings hold the memory. */
static int map_table(const struct share_hdr *h, int rank, int device, eht_vmm_mem *handles,
		     int *fds, struct eht_vmm_fabric *fab, eht_dptr *va_out, struct eht_share_times *times)
{
	eht_dptr va = 0;
	size_t mapped = 0;
	int rc = 0;
	double t0 = eht_now_s(), t1 = t0;
	if (rank != 0) {
		for (size_t i = 0; i < h->nchunks; i++) {
			rc = eht_fault("import", rank);
			if (!rc)
				rc = eht_vmm_import(&handles[i], fds ? fds[i] : -1, fab ? &fab[i] : NULL,
						    (enum eht_vmm_kind)h->handle_type);
			if (rc) {
				eht_err_prefix(rc, "importing chunk %zu", i);
				goto out;
			}
		}
	}
	t1 = eht_now_s();
	rc = eht_fault("reserve", rank);
	if (!rc)
		rc = eht_vmm_reserve(&va, h->padded, h->granularity);
	if (rc) {
		va = 0;
		eht_err_prefix(rc, "reserving %.1f GiB of address space", gib(h->padded));
		goto out;
	}
	for (size_t i = 0; i < h->nchunks; i++) {
		rc = eht_fault("map", rank);
		if (!rc)
			rc = eht_vmm_map(va + (uint64_t)i * h->chunk, chunk_len(h, i), handles[i]);
		if (rc) {
			eht_err_prefix(rc, "mapping chunk %zu", i);
			goto out;
		}
		mapped = i + 1;
	}
	rc = eht_fault("access", rank);
	if (!rc)
		rc = eht_vmm_access(va, h->padded, device, h->numa, true);
	if (rc)
		eht_err_prefix(rc, "granting GPU %d and NUMA node %d access", device, h->numa);
out:
	if (rc) {
		struct eht_err_saved cause;
		eht_err_save(&cause);
		unmap_range(va, h->padded, h->chunk, mapped);
		eht_err_restore(&cause, rc);
		va = 0;
	}
	release_handles(handles, h->nchunks);
	close_fds(fds, h->nchunks);
	if (times) {
		times->import_s = t1 - t0;
		times->map_s = eht_now_s() - t1;
	}
	*va_out = va;
	return rc;
}

/* This rank's options (copied into *oc; *opts then points there), the size, the driver and the
 * device (*device). Returns 0 or the reason. */
static int share_local_checks(uint64_t bytes, uint64_t row_bytes, const struct eht_share_opts **opts,
			      struct eht_share_opts *oc, int *device)
{
	const uint32_t known = EHT_SHARE_NO_RESERVE | EHT_SHARE_FABRIC | EHT_SHARE_POSIX_FD | EHT_SHARE_NUMA_NODE;
	int rc = eht_opts_in(oc, sizeof(*oc), *opts, "opts");
	const struct eht_share_opts *o = *opts ? oc : NULL;
	*opts = o;
	if (rc)
		return rc; /* eht_opts_in named the problem */
	if (o && (o->flags & ~known))
		return eht_err(EINVAL, "unknown flags 0x%x", o->flags & ~known);
	if (o && (o->flags & EHT_SHARE_FABRIC) && (o->flags & EHT_SHARE_POSIX_FD))
		return eht_err(EINVAL, "EHT_SHARE_FABRIC and EHT_SHARE_POSIX_FD together");
	if (bytes == 0 || bytes % row_bytes)
		return eht_err(EINVAL, "%llu bytes is not a positive multiple of the %llu-byte rows",
			       (unsigned long long)bytes, (unsigned long long)row_bytes);
	if ((rc = eht_dev_load()))
		return rc;
	*device = pick_device(o);
	return eht_dev_use(*device);
}

/* All or none: gathers every rank's result (*rc, this rank's). Returns 0 when every rank succeeded;
 * else *rc is the reason and the return says how it ended: 1 the group itself failed (*grc; or this
 * rank cannot take part: it breaks the group so no rank waits for it), 2 a rank failed. */
static int share_agree(eht_group *g, int *rc, int *grc)
{
	struct share_result mine = {.rc = *rc};
	if (*rc)
		snprintf(mine.msg, sizeof(mine.msg), "%s", eht_last_error());
	struct share_result *all = calloc((size_t)eht_group_size(g), sizeof(*all));
	if (!all) {
		*rc = eht_err(ENOMEM, "host-numa: out of memory");
		return 1;
	}
	int out = 0;
	*grc = eht_group_allgather(g, &mine, sizeof(mine), all);
	if (*grc) {
		*rc = *grc;
		out = 1;
	}
	for (int r = 0; !out && r < eht_group_size(g); r++)
		if (all[r].rc) {
			*rc = eht_err(all[r].rc, "rank %d: %s", r, all[r].msg);
			out = 2;
		}
	free(all);
	return out;
}

/* The table over the mapped range va (every rank agreed). On failure this rank alone unmaps it. */
static int share_table_new(const struct share_hdr *h, uint64_t bytes, uint64_t row_bytes, const char *name,
			   int device, eht_dptr va, eht_table **out)
{
	struct hn_impl *m = calloc(1, sizeof(*m));
	struct eht_table_info info = {
		.size = sizeof(info), .rows = bytes / row_bytes, .row_bytes = row_bytes,
		.local_rows = bytes / row_bytes, .name = name,
	};
	int rc;
	if (m) {
		*m = (struct hn_impl){.device = device, .va = va, .padded = h->padded, .chunk = h->chunk, .nchunks = h->nchunks,
				      .layout = {.numa = h->numa, .handle_type = h->handle_type, .bytes = bytes,
						 .padded = h->padded, .chunk = h->chunk, .nchunks = h->nchunks,
						 .granularity = h->granularity}};
		rc = eht_table_new(&info, &hn_ops, m, out);
	} else {
		rc = eht_err(ENOMEM, "host-numa: out of memory");
	}
	if (rc) {
		/* Too late to undo the others' success: this rank alone reports the failure. */
		free(m);
		unmap_range(va, h->padded, h->chunk, h->nchunks);
	}
	return rc;
}

int eht_host_table_share_ex(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, bool quiet,
			    eht_table **out, struct eht_share_times *times)
{
	if (!out || !g)
		return eht_err(EINVAL, "eht_host_table_share: NULL %s", out ? "group" : "out");
	*out = NULL;
	if (times)
		memset(times, 0, sizeof(*times));
	const int rank = eht_group_rank(g);
	const char *name = opts && opts->name ? opts->name : "table";
	uint64_t row_bytes = opts && opts->row_bytes ? opts->row_bytes : 1;
	struct share_hdr h = {0};
	eht_vmm_mem *handles = NULL;
	int *fds = NULL;
	struct eht_vmm_fabric *fab = NULL;
	int device = -1, rc = 0;

	/* Local checks first, but every rank still takes part in every collective below: a rank that
	 * returned early would leave the others waiting for their deadline. */
	struct eht_share_opts oc = {0};
	rc = share_local_checks(bytes, row_bytes, &opts, &oc, &device);

	if (rank == 0) {
		if (!rc)
			rc = create_and_export(bytes, device, opts, &h, &handles, &fds, &fab, times);
		h.status = rc;
		h.bytes = bytes;
		if (rc)
			snprintf(h.msg, sizeof(h.msg), "%s", eht_last_error());
	}
	int grc = eht_group_broadcast(g, &h, sizeof(h));
	if (grc) {
		rc = grc;
		goto local_fail;
	}
	if (h.status) {
		/* Rank 0 could not create: nothing was shared, every rank returns its reason. */
		rc = eht_err(h.status, "%s", h.msg);
		goto decided;
	}
	if (rank != 0) {
		handles = calloc(h.nchunks, sizeof(*handles));
		if (h.handle_type == EHT_VMM_FABRIC)
			fab = calloc(h.nchunks, sizeof(*fab));
		else
			fds = calloc(h.nchunks, sizeof(*fds));
		if (!handles || (!fab && !fds)) {
			/* Rare enough to accept: this rank leaves, and its peers see the group break. */
			grc = eht_err(ENOMEM, "host-numa: out of memory for %llu handles", (unsigned long long)h.nchunks);
			goto local_fail;
		}
	}
	if (fab)
		grc = eht_group_broadcast(g, fab, h.nchunks * sizeof(*fab));
	else
		grc = eht_group_broadcast_fds(g, fds, h.nchunks);
	if (grc) {
		rc = grc;
		goto local_fail;
	}
	if (rank != 0 && !rc && h.bytes != bytes)
		rc = eht_err(EINVAL, "this rank asked for %llu bytes, rank 0 for %llu", (unsigned long long)bytes,
			     (unsigned long long)h.bytes);
	eht_dptr va = 0;
	if (!rc)
		rc = map_table(&h, rank, device, handles, fds, fab, &va, times);
	else {
		release_handles(handles, h.nchunks);
		close_fds(fds, h.nchunks);
	}
	if (times) {
		times->padded = h.padded;
		times->handle_type = (int)h.handle_type;
	}

	/* All or none. */
	int agreed = share_agree(g, &rc, &grc);
	if (agreed && va)
		unmap_range(va, h.padded, h.chunk, h.nchunks);
	if (agreed == 1)
		goto local_fail;
	if (agreed == 2)
		goto decided;
	rc = share_table_new(&h, bytes, row_bytes, name, device, va, out);
	free(handles);
	free(fds);
	free(fab);
	return rc;

decided:
	if (rank == 0 && !quiet && rc != -EINVAL)
		eht_warn("table %s: host-NUMA sharing unavailable on all %d ranks (%s)", name, eht_group_size(g),
			 eht_last_error());
	free(handles);
	free(fds);
	free(fab);
	return rc;

local_fail:
	/* The group itself failed (a rank died or stalled): it is broken, so every rank fails too. */
	if (handles && rank == 0)
		release_handles(handles, h.nchunks);
	close_fds(fds, h.nchunks);
	free(handles);
	free(fds);
	free(fab);
	return grc ? grc : rc;
}

int eht_host_table_share(uint64_t bytes, eht_group *group, const struct eht_share_opts *opts, eht_table **out)
{
	return eht_host_table_share_ex(bytes, group, opts, false, out, NULL);
}

int eht_host_numa_layout(const eht_table *t, struct eht_hn_layout *layout)
{
	if (!t || t->tier_ops != &hn_ops)
		return eht_err(EINVAL, "table %s is not a host-NUMA table", t ? t->name : "(null)");
	*layout = ((const struct hn_impl *)t->impl)->layout;
	return 0;
}

int eht_host_numa_export(const eht_table *t, int *fds, struct eht_vmm_fabric *fab)
{
	struct eht_hn_layout lay = {0};
	int rc = eht_host_numa_layout(t, &lay);
	if (rc)
		return rc;
	const struct hn_impl *m = t->impl;
	bool fabric = lay.handle_type == EHT_VMM_FABRIC;
	for (size_t i = 0; i < lay.nchunks; i++)
		if (fds)
			fds[i] = -1;
	rc = eht_dev_use(m->device);
	for (size_t i = 0; !rc && i < lay.nchunks; i++) {
		/* The mapping keeps the allocation alive; retaining its handle again lets us export it
		 * for a process that arrives after the original handles were released. */
		eht_vmm_mem h = 0;
		rc = eht_vmm_retain(&h, (void *)(uintptr_t)(m->va + i * lay.chunk));
		if (!rc) {
			rc = eht_vmm_export(fabric ? (void *)&fab[i] : (void *)&fds[i], h, (enum eht_vmm_kind)lay.handle_type);
			eht_vmm_release(h);
		}
		if (rc)
			eht_err_prefix(rc, "table %s: re-exporting chunk %zu", t->name, i);
	}
	if (rc && fds)
		close_fds(fds, lay.nchunks);
	return rc;
}

int eht_host_numa_import(const struct eht_hn_layout *lay, int *fds, const struct eht_vmm_fabric *fab, int device,
			 const char *name, uint64_t row_bytes, eht_table **out)
{
	*out = NULL;
	struct share_hdr h = {.numa = lay->numa, .handle_type = lay->handle_type, .bytes = lay->bytes,
			      .padded = lay->padded, .chunk = lay->chunk, .nchunks = lay->nchunks,
			      .granularity = lay->granularity};
	int rc = 0;
	if (!row_bytes || lay->bytes % row_bytes || !lay->nchunks || lay->chunk == 0 ||
	    lay->padded < lay->bytes || (lay->nchunks - 1) * lay->chunk >= lay->padded)
		rc = eht_err(EINVAL, "table %s: inconsistent host-NUMA layout", name);
	if (!rc)
		rc = eht_dev_use(device);
	eht_vmm_mem *handles = rc ? NULL : calloc(lay->nchunks, sizeof(*handles));
	if (!rc && !handles)
		rc = eht_err(ENOMEM, "host-numa: out of memory");
	if (rc) {
		if (fds)
			close_fds(fds, lay->nchunks);
		return rc;
	}
	eht_dptr va = 0;
	/* map_table imports when rank != 0, and closes fds and releases handles whatever happens. */
	rc = map_table(&h, 1, device, handles, fds, (struct eht_vmm_fabric *)fab, &va, NULL);
	free(handles);
	if (rc)
		return eht_err_prefix(rc, "table %s", name);
	/* An importer only reads: ask the driver for a read-only mapping for its GPU and the CPU, so
	 * a stray write in one worker cannot corrupt every worker's rows. Where the driver refuses,
	 * the mapping stays as it was (said at info level). */
	if (eht_vmm_access(va, h.padded, device, h.numa, false) != 0) {
		eht_info("table %s: the driver keeps the imported host-NUMA mapping writable (%s)", name, eht_last_error());
		eht_err_clear();
	}
	struct hn_impl *m = calloc(1, sizeof(*m));
	if (!m) {
		unmap_range(va, h.padded, h.chunk, h.nchunks);
		return eht_err(ENOMEM, "host-numa: out of memory");
	}
	*m = (struct hn_impl){.device = device, .va = va, .padded = h.padded, .chunk = h.chunk,
			      .nchunks = h.nchunks, .layout = *lay};
	struct eht_table_info info = {
		.size = sizeof(info), .rows = lay->bytes / row_bytes, .row_bytes = row_bytes,
		.local_rows = lay->bytes / row_bytes, .name = name,
	};
	rc = eht_table_new(&info, &hn_ops, m, out);
	if (rc) {
		unmap_range(va, h.padded, h.chunk, h.nchunks);
		free(m);
	}
	return rc;
}
