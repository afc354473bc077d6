/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_lookup_ref.h: what the GPU lookup tests share: ids with misses, repeats and dead ids, the CPU
 * reference compare of a GPU output, the eager ids-in-GPU-memory check of one engine, and the
 * reference's rows in every shared tier. */
#ifndef EHT_TESTS_GPU_LOOKUP_REF_H
#define EHT_TESTS_GPU_LOOKUP_REF_H

#include <stdbool.h>

#include "gpu/dev.h"
#include "testutil.h"

/* The table the engines read, as the CPU reference sees it: rows of EHT_ENGRAM_ROW_BYTES. */
struct t_lookup_ref {
	const uint8_t *rows;
	uint64_t nrows;
	size_t capture_n; /* ids of t_lookup_check_engine's captured run (0: 5,000; at most its nmax) */
};

/* A GPU test's start: exits 77 without a usable GPU 0; a non-blocking stream on it (NULL after a
 * counted failure). */
eht_stream t_gpu_test_stream(void);
/* nrows random rows of EHT_ENGRAM_ROW_BYTES into ref (ref->rows: the caller frees it) wrapped as a
 * memory table called name; NULL after a counted failure. */
eht_table *t_lookup_ref_table(struct t_lookup_ref *ref, uint64_t nrows, uint64_t *rs, const char *name);
/* rc; a failed driver call also counts as a test failure (the message names the call). */
int t_cu(int rc);
/* n ids over the reference: live, repeated, negative (dead) and past the end (dead). */
void t_lookup_ids(const struct t_lookup_ref *ref, int64_t *ids, size_t n, uint64_t *rs);
/* Rows of the GPU output d_out that differ from the reference for ids; *dead gets the dead ids. */
size_t t_lookup_compare(const struct t_lookup_ref *ref, eht_dptr d_out, const int64_t *ids, size_t n, int fmt,
			uint64_t *dead);
/* Eager runs with ids in GPU memory (d_ids, int64) at several sizes up to nmax, output poisoned before
 * and compared after, the ids cleared once the stream passed each call, dead counts checked. ids:
 * host scratch of nmax. */
void t_lookup_eager_gpu_ids(const struct t_lookup_ref *ref, const char *tier, eht_lookup *lk, int strategy,
			    int fmt, eht_stream s, int64_t *ids, eht_dptr d_ids, eht_dptr d_out, size_t nmax,
			    uint64_t *rs);

/* One engine the way engines call it: t_lookup_eager_gpu_ids, then captured once in a CUDA graph and
 * replayed with new ids in the same buffers (GPU ids, then pinned host ids for the strategies that
 * read ids on the CPU; with host_capture_refused such a capture must fail with -EOPNOTSUPP instead),
 * outputs and dead counts compared each replay; and a dead-count pointer refused under capture. */
void t_lookup_check_engine(const struct t_lookup_ref *ref, const char *tier, eht_lookup *lk, int strategy, int fmt,
			   eht_stream s, size_t nmax, bool host_capture_refused, uint64_t *rs);

/* The reference's rows copied into a table of each shared tier (host-NUMA, pinned region; shared as
 * eht serve shares one, under name), each given to check and closed; a tier this machine lacks is
 * said on stderr and skipped. */
void t_lookup_shared_tiers(const struct t_lookup_ref *ref, const char *name, eht_stream s, uint64_t *rs,
			   void (*check)(const char *tier, eht_table *t, eht_stream s, uint64_t *rs));

#endif
