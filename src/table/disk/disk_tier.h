/* SPDX-License-Identifier: Apache-2.0 */
/* disk_tier.h: the disk tier's entries in the tier registry (disk_export.c). */
#ifndef EHT_TABLE_DISK_DISK_TIER_H
#define EHT_TABLE_DISK_DISK_TIER_H

#include "table/table_impl.h"

/* The export: desc gets "checkpoint", "weight" and "scale" (null when none); no descriptor, since
 * each importing process maps its own rank's rows from the files. */
int disk_export_desc(const eht_table *t, json_t *desc, int **fds, size_t *nfds);
/* eht_disk_open in the open checkpoint ck, which the caller keeps (and closes): opening 2,000
 * tables of one checkpoint parses its header once, not 2,000 times. */
int eht_disk_open_ckpt(eht_ckpt *ck, const struct eht_disk_opts *opts, eht_table **out);
/* The registry's open_in_place: eht_disk_open_ckpt of rank's share of weight (+ scale); with
 * EHT_OPEN_EXPORT_ONLY without a row cache. */
int eht_disk_open_in_place(eht_ckpt *ck, const char *weight, const char *scale, const char *name,
			   uint32_t rank, uint32_t nranks, unsigned flags, eht_table **out);
/* The registry's import: opens the described checkpoint for a->rank of a->nranks. */
int eht_disk_import(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a, eht_table **out);

#endif
