/* SPDX-License-Identifier: Apache-2.0 */
/* disk_export.c: the disk tier handed to another process: only where the rows lie (the checkpoint
 * and the tensor names); the importer opens the files itself, for its own rank's rows, so the
 * exporter holds nothing for it. */
#include <errno.h>
#include <string.h>

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

int eht_disk_open_in_place(eht_ckpt *ck, const char *weight, const char *scale, const char *name,
			   uint32_t rank, uint32_t nranks, unsigned flags, eht_table **out)
{
	struct eht_disk_opts o = {.size = sizeof(o), .weight = weight, .scale = scale, .rank = rank,
				  .nranks = nranks, .name = name,
				  .cache_bytes = (flags & EHT_OPEN_EXPORT_ONLY) ? EHT_DISK_NO_CACHE : 0};
	return eht_disk_open_ckpt(ck, &o, out);
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
	uint64_t first = 0, count = 0;
	if (a->rows_of) { /* the worker's own rows (an Engram head range), checked by eht_disk_open too */
		json_int_t rows = json_integer_value(json_object_get(desc, "rows"));
		int crc = a->rows_of(a->rows_of_arg, name, rows > 0 ? (uint64_t)rows : 0, &first, &count);
		if (crc < 0)
			return eht_err(-crc, "served table %s (disk tier): the worker's disk_rows refused it", name);
		if (count && (rows <= 0 || first >= (uint64_t)rows || count > (uint64_t)rows - first))
			return eht_err(EINVAL, "served table %s (disk tier): disk_rows gave rows [%llu, +%llu) of %lld", name,
				       (unsigned long long)first, (unsigned long long)count, (long long)rows);
	}
	/* One attach imports every table of one checkpoint: open it once (a->keep holds it for the next
	 * table; eht_table_import_end closes it). */
	eht_ckpt **kept = a->keep ? &a->keep->ckpt : NULL;
	eht_ckpt *own = NULL, *ck = kept ? *kept : NULL;
	int rc = 0;
	if (!ck || strcmp(eht_ckpt_path(ck), ckpt) != 0) {
		if ((rc = eht_ckpt_open(ckpt, 0, &own)))
			return eht_err_prefix(rc, "served table %s (disk tier)", name);
		ck = own;
		if (kept) {
			eht_ckpt_close(*kept);
			*kept = own;
			own = NULL;
		}
	}
	if (count) {
		struct eht_disk_opts o = {.size = sizeof(o), .weight = weight, .scale = scale, .name = name,
					  .first_row = first, .row_count = count};
		rc = eht_disk_open_ckpt(ck, &o, out);
	} else {
		rc = eht_disk_open_in_place(ck, weight, scale, name, a->rank, a->nranks, 0, out);
	}
	eht_ckpt_close(own);
	return rc ? eht_err_prefix(rc, "served table %s (disk tier)", name) : 0;
}
