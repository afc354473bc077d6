/* SPDX-License-Identifier: Apache-2.0 */
/* host_numa.h: the host-NUMA tier's internals shared with eht_table_share, the bench and the tests. */
#ifndef EHT_TABLE_HOST_NUMA_H
#define EHT_TABLE_HOST_NUMA_H

#include <stdbool.h>
#include <stdint.h>

#include "eht.h"

/* Seconds spent in each step on this rank (0 for steps this rank did not run). */
struct eht_share_times {
	double create_s; /* rank 0: cuMemCreate of every chunk, reserve checks included */
	double export_s; /* rank 0: cuMemExportToShareableHandle of every chunk */
	double import_s; /* other ranks: cuMemImportFromShareableHandle of every chunk */
	double map_s;    /* every rank: address reserve + cuMemMap + cuMemSetAccess */
	uint64_t padded; /* bytes mapped (the size rounded up to the granularity) */
	int handle_type; /* CU_MEM_HANDLE_TYPE_* used */
};

/* eht_host_table_share with step timings (times may be NULL) and, with quiet, no warning on rank 0
 * (eht_table_share words the one warning itself). */
int eht_host_table_share_ex(uint64_t bytes, eht_group *group, const struct eht_share_opts *opts,
			    bool quiet, eht_table **out, struct eht_share_times *times);

/* Fault injection: EHT_FAULT="<step>[:rank=<r>][,...]" makes `step` fail on rank r (every rank when
 * no rank is given). Returns 0, or -EIO with "injected fault ..." as the message. */
int eht_fault(const char *step, int rank);

#endif
