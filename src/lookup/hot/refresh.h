/* SPDX-License-Identifier: Apache-2.0 */
/* refresh.h: replacing a hot set while lookups run (used by hot.c). Any thread prepares a
 * refresh: which slots keep their rows, which get new ones, the new index (same size and hash as the
 * live one, so every GPU address and captured kernel argument stays valid) and the bytes of the rows
 * to load. The thread that runs the engine takes it at a step boundary and hands it to an apply
 * callback (hot.c: copies on the run's stream). CPU only: tested under TSan. */
#ifndef EHT_LOOKUP_HOT_REFRESH_H_
#define EHT_LOOKUP_HOT_REFRESH_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One prepared refresh. keys/vals: the whole new index (2^bits entries); load_slot[i] gets the row
 * load_row[i], whose bytes are load_bytes + i x rb. */
struct eht_hot_plan {
	uint64_t *keys;
	uint32_t *vals;
	uint64_t nload;
	uint32_t *load_slot;
	int64_t *load_row;
	uint8_t *load_bytes;
	uint64_t rows; /* rows of the new set */
};

/* Where the plan's buffers come from (hot.c: pinned memory the GPU copies from), and how to wait
 * until the last applied plan's copies have read them (NULL: nothing to wait for). */
struct eht_hot_mem {
	void *(*alloc)(void *ctx, size_t bytes);
	void (*free)(void *ctx, void *p);
	int (*wait)(void *ctx);
	void *ctx;
};

/* Fills dst[0..n) with the bytes of absolute rows rows[0..n); 0 or -errno (a read error). */
typedef int (*eht_hot_gather_fn)(void *ctx, const int64_t *rows, size_t n, uint8_t *dst);
/* Applies a plan (enqueues its copies); 0 or -errno (then the plan stays pending). */
typedef int (*eht_hot_apply_fn)(void *ctx, const struct eht_hot_plan *p);

struct eht_hot_refresh {
	pthread_mutex_t mu;  /* held while a plan is prepared or taken */
	atomic_bool pending; /* a prepared plan waits for a step boundary */
	uint32_t bits, rb;
	uint64_t slots;
	int64_t lo, hi;
	int64_t *live, *next; /* row per slot (-1: free): what the GPU has, and after the pending plan */
	struct eht_hot_plan plan;
	struct eht_hot_mem mem;
	uint64_t applied; /* plans taken */
};

/* live_rows: the row of each of `slots` slots (absolute, -1 free); bits: the live index's. Returns 0,
 * -ENOMEM. */
int eht_hot_refresh_init(struct eht_hot_refresh *r, const int64_t *live_rows, uint64_t slots, uint32_t bits,
			 int64_t lo, int64_t hi, uint32_t rb, const struct eht_hot_mem *mem);
void eht_hot_refresh_fini(struct eht_hot_refresh *r);

/* Prepares the set rows[0..n) (absolute, distinct, inside [lo, hi), n <= slots): rows already cached
 * keep their slots, the others go to the freed ones and are gathered. Replaces a plan still pending.
 * Any thread. Returns 0; -EINVAL (a row out of range or repeated, n > slots: the message names it;
 * a pending plan stays as it was); a gather error (the pending plan is then dropped); -ENOMEM. */
int eht_hot_refresh_prepare(struct eht_hot_refresh *r, const int64_t *rows, uint64_t n, eht_hot_gather_fn gather,
			    void *gctx);

/* At a step boundary (the run's thread): applies the pending plan, if any and if no prepare holds the
 * lock (then it is tried again at the next boundary). Returns 1 applied, 0 nothing to do, or the
 * apply error. */
int eht_hot_refresh_take(struct eht_hot_refresh *r, eht_hot_apply_fn apply, void *actx);

#endif
