/* SPDX-License-Identifier: Apache-2.0 */
/* host_numa.h: the host-NUMA tier's internals shared with eht_table_share, the bench and the tests. */
#ifndef EHT_TABLE_HOST_NUMA_H
#define EHT_TABLE_HOST_NUMA_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu/vmm.h"
#include "eht.h"
#include "table/table_impl.h"

/* Seconds spent in each step on this rank (0 for steps this rank did not run). */
struct eht_share_times {
	double create_s; /* rank 0: cuMemCreate of every chunk, reserve checks included */
	double export_s; /* rank 0: cuMemExportToShareableHandle of every chunk */
	double import_s; /* other ranks: cuMemImportFromShareableHandle of every chunk */
	double map_s;    /* every rank: address reserve + cuMemMap + cuMemSetAccess */
	uint64_t padded; /* bytes mapped (the size rounded up to the granularity) */
	int handle_type; /* enum eht_vmm_kind used */
};

/* eht_host_table_share with step timings (times may be NULL) and, with quiet, no warning on rank 0
 * (eht_table_share words the one warning itself). */
int eht_host_table_share_ex(uint64_t bytes, eht_group *group, const struct eht_share_opts *opts,
			    bool quiet, eht_table **out, struct eht_share_times *times);

/* Where a host-NUMA table's memory lies: what a process needs, with the exported handles, to map it. */
struct eht_hn_layout {
	int32_t numa;         /* host NUMA node of the allocation */
	uint32_t handle_type; /* EHT_VMM_FD or _FABRIC */
	uint64_t bytes;       /* table bytes */
	uint64_t padded;      /* bytes rounded up to the granularity (what is mapped) */
	uint64_t chunk;       /* bytes per allocation (the last may be shorter) */
	uint64_t nchunks;
	uint64_t granularity;
};

/* The layout of a host-NUMA table (made by eht_host_table_share or eht_host_numa_import). Returns
 * 0 or -EINVAL (another tier). */
int eht_host_numa_layout(const eht_table *t, struct eht_hn_layout *layout);
/* Exports every chunk of a mapped host-NUMA table again (cuMemRetainAllocationHandle on the
 * mapping), for a process that attaches later: fds[nchunks] for POSIX-fd tables (the caller closes
 * them), fab[nchunks] for FABRIC ones. Returns 0 or a driver error (nothing left open). */
int eht_host_numa_export(const eht_table *t, int *fds, struct eht_vmm_fabric *fab);
/* Imports exported chunks and maps them as a table for GPU `device` (and the host NUMA node, so
 * the CPU reads the same address). Always consumes (closes) fds. Returns 0, -EINVAL (inconsistent
 * layout) or a driver error. */
int eht_host_numa_import(const struct eht_hn_layout *layout, int *fds, const struct eht_vmm_fabric *fab, int device,
			 const char *name, uint64_t row_bytes, eht_table **out);

/* The tier's export (host_numa_export.c): desc gets the layout ("numa", "handle_type", "bytes",
 * "padded", "chunk", "nchunks", "granularity"), and for POSIX-fd tables *fds one descriptor per chunk,
 * for FABRIC ones "fabric" (one hex handle per chunk) and no descriptor. */
int eht_host_numa_export_desc(const eht_table *t, json_t *desc, int **fds, size_t *nfds);
/* The registry's import: the layout from desc, checked against the descriptors received (one per
 * chunk for POSIX-fd tables), mapped for a->device (0 when negative: the mapping needs a GPU
 * context; the CPU reads the same address). Consumes every descriptor (set to -1). */
int eht_host_numa_import_desc(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a,
			      eht_table **out);
/* The registry's share: eht_host_table_share_ex without timings. */
int eht_host_numa_share_tier(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, int tier, bool quiet,
			     eht_table **out);

#endif
