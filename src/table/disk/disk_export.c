/* SPDX-License-Identifier: Apache-2.0 */
/* disk_export.c: the disk tier handed to another process: only where the rows lie (the checkpoint
 * and the tensor names); the importer opens the files itself, for its own rank's rows, so the
 * exporter holds nothing for it. */
#include <errno.h>

#include "table/disk/disk_impl.h"
#include "table/disk/disk_tier.h"
#include "util/err.h"

int disk_export_desc(const eht_table *t, json_t *desc, int **fds, size_t *nfds)
{
	const struct disk *d = t->impl;
	json_object_set_new(desc, "checkpoint", json_string(d->ckpt));
	json_object_set_new(desc, "weight", json_string(d->part[0].tensor));
	json_object_set_new(desc, "scale", d->nparts > 1 ? json_string(d->part[1].tensor) : json_null());
	*fds = NULL;
	*nfds = 0;
	return 0;
}

int eht_disk_open_in_place(const char *ckpt, const char *weight, const char *scale, const char *name,
			   uint32_t rank, uint32_t nranks, unsigned flags, eht_table **out)
{
	struct eht_disk_opts o = {.size = sizeof(o), .weight = weight, .scale = scale, .rank = rank,
				  .nranks = nranks, .name = name,
				  .cache_bytes = (flags & EHT_OPEN_EXPORT_ONLY) ? EHT_DISK_NO_CACHE : 0};
	return eht_disk_open(ckpt, &o, out);
}

int eht_disk_import(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a, eht_table **out)
{
	*out = NULL;
	const char *name = eht_desc_str(desc, "name");
	const char *ckpt = eht_desc_str(desc, "checkpoint");
	const char *weight = eht_desc_str(desc, "weight");
	const char *scale = eht_desc_str(desc, "scale"); /* NULL for json null */
	if (!ckpt || !weight || nfds != 0)
		return eht_err(EPROTO, "table %s: a disk table is described by checkpoint and weight, without descriptors",
			       name);
	int rc = eht_disk_open_in_place(ckpt, weight, scale, name, a->rank, a->nranks, 0, out);
	return rc ? eht_err_prefix(rc, "served table %s (disk tier)", name) : 0;
}
