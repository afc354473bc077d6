/* SPDX-License-Identifier: Apache-2.0 */
/* hotset.h: a table's hot set (hotset.c; the table keeps the one its server sent, table_impl.h):
 * the hot-set file format and its memory form, the checks, and the open-addressing index (local row
 * -> cache slot, built on the host, probed by the kernels in lookup.cu with the same hash) that the
 * lookup engine's GPU cache (src/lookup/hot) and its refresh use. src/serve only transports it. */
#ifndef EHT_TABLE_HOTSET_H
#define EHT_TABLE_HOTSET_H

#include <stddef.h>
#include <stdint.h>

/* Index: keys[cap] (local rows, EHT_HOT_EMPTY where free) and vals[cap] (slot in the row buffer),
 * cap = 2^bits >= 2 x rows (at most half full, so a probe always meets a free entry). Linear probing
 * from (key * EHT_HOT_MUL) >> (64 - bits); the kernels (src/gpu/kernels/lookup_const.h) use the same. */
#define EHT_HOT_EMPTY UINT64_MAX
#define EHT_HOT_MUL 0x9E3779B97F4A7C15ull
#define EHT_HOT_NONE UINT32_MAX

struct eht_hot_index {
	uint64_t *keys;
	uint32_t *vals;
	uint32_t bits;
	uint64_t cap;
};

/* Builds the index of local rows loc[0..n) (slot i for loc[i]). Returns 0; -EINVAL (a repeated row:
 * the message names both positions; n >= 2^31); -ENOMEM. */
int eht_hot_index_build(const uint64_t *loc, size_t n, struct eht_hot_index *ix);
void eht_hot_index_free(struct eht_hot_index *ix);

/* Probe and insert on bare arrays of 2^bits entries (at most half full). insert: 0, or 1 when loc is
 * there already (*old gets its value; nothing changed). */
static inline uint32_t eht_hot_probe(const uint64_t *keys, const uint32_t *vals, uint32_t bits, uint64_t loc)
{
	uint64_t mask = (1ull << bits) - 1, h = (loc * EHT_HOT_MUL) >> (64 - bits);
	for (;; h = (h + 1) & mask) {
		if (keys[h] == loc)
			return vals[h];
		if (keys[h] == EHT_HOT_EMPTY)
			return EHT_HOT_NONE;
	}
}

static inline int eht_hot_insert(uint64_t *keys, uint32_t *vals, uint32_t bits, uint64_t loc, uint32_t val,
				 uint32_t *old)
{
	uint64_t mask = (1ull << bits) - 1, h = (loc * EHT_HOT_MUL) >> (64 - bits);
	for (;; h = (h + 1) & mask) {
		if (keys[h] == loc) {
			*old = vals[h];
			return 1;
		}
		if (keys[h] == EHT_HOT_EMPTY) {
			keys[h] = loc;
			vals[h] = val;
			return 0;
		}
	}
}

static inline uint32_t eht_hot_index_find(const struct eht_hot_index *ix, uint64_t loc)
{
	return eht_hot_probe(ix->keys, ix->vals, ix->bits, loc);
}

/* Absolute rows[0..n) -> local rows (row - lo) into loc; a row outside [lo, hi) is -EINVAL naming the
 * row, its index and the range (what a hot set built for another table or shard gives). */
int eht_hot_rows_local(const int64_t *rows, size_t n, int64_t lo, int64_t hi, uint64_t *loc);

/* Hot-set file (and memfd): "EHTHOT1\n", uint64 count, then count int64 row ids (all little-endian),
 * most frequent first. Reading and writing files: eht_hotset_read / eht_hotset_write (eht.h). */
#define EHT_HOTSET_MAGIC "EHTHOT1\n"
#define EHT_HOTSET_HDR 16u
/* Bytes of the format for n rows. */
static inline uint64_t eht_hotset_bytes(uint64_t n) { return EHT_HOTSET_HDR + 8 * n; }
/* buf (eht_hotset_bytes(n) bytes) <- rows[0..n) in the format. */
void eht_hotset_encode(const int64_t *rows, uint64_t n, uint8_t *buf);
/* rows[0..n) <- buf (eht_hotset_bytes(n) bytes). Returns 0; -EBADMSG (no magic); -ERANGE (its
 * header holds another count). Checks no row (eht_hotset_check does). */
int eht_hotset_decode(const uint8_t *buf, uint64_t n, int64_t *rows);

/* The most rows a hot set holds anywhere (its index, eht_hot_index_build, holds fewer than 2^31). */
#define EHT_HOTSET_MAX_ROWS ((1ull << 31) - 1)
/* eht_hotset_read of a hot set for a table of max_rows rows: a header (either format) that counts
 * more entries fails with -EINVAL naming the file, the entries and the limit before anything is read
 * or allocated for them. eht_hotset_read is this with EHT_HOTSET_MAX_ROWS. */
int eht_hotset_read_max(const char *path, uint64_t max_rows, int64_t **rows, uint64_t *n);

/* Checks rows[0..n): each inside [lo, hi), none twice. what names them in the message ("hot set FILE
 * for table NAME"). Returns 0, -EINVAL (names the entry, the row and the range, or both entries of
 * a repeated row) or -ENOMEM. */
int eht_hotset_check(const int64_t *rows, uint64_t n, int64_t lo, int64_t hi, const char *what);

#endif
