/* SPDX-License-Identifier: Apache-2.0 */
/* disk_cache.c: the disk tier's hot-row cache: direct-mapped, one try-lock per slot (policy and
 * reasons in eht.h). */
#include <stdlib.h>
#include <string.h>

#include "table/disk/disk_impl.h"
#include "util/err.h"

int disk_cache_init(struct disk_cache *c, uint64_t bytes, uint64_t rb)
{
	memset(c, 0, sizeof(*c));
	c->rb = rb;
	if (bytes == EHT_DISK_NO_CACHE || bytes / rb < 16)
		return 0;
	uint64_t n = 1;
	while (n * 2 * rb <= bytes) /* largest power of two of rows that fits */
		n *= 2;
	c->tag = calloc(n, sizeof(*c->tag));
	c->data = malloc(n * rb);
	if (!c->tag || !c->data) {
		disk_cache_free(c);
		return eht_err(ENOMEM, "disk: out of memory for a %llu-byte row cache", (unsigned long long)bytes);
	}
	c->nslots = n;
	return 0;
}

void disk_cache_free(struct disk_cache *c)
{
	free(c->tag);
	free(c->data);
	c->tag = NULL;
	c->data = NULL;
	c->nslots = 0;
}

void disk_cache_clear(struct disk_cache *c)
{
	for (uint64_t i = 0; i < c->nslots; i++) {
		uint64_t v = atomic_load_explicit(&c->tag[i], memory_order_relaxed);
		if (v != DISK_CACHE_LOCKED)
			atomic_compare_exchange_strong(&c->tag[i], &v, 0);
	}
}

static inline uint64_t slot_of(const struct disk_cache *c, uint64_t row)
{
	uint64_t x = row * 0x9e3779b97f4a7c15ull; /* ids are hashes already; this spreads sequential rows */
	return (x >> 17 ^ x) & (c->nslots - 1);
}

bool disk_cache_get(struct disk_cache *c, uint64_t row, uint8_t *dst)
{
	if (!c->nslots)
		return false;
	uint64_t s = slot_of(c, row), want = row + 1;
	if (atomic_load_explicit(&c->tag[s], memory_order_relaxed) != want)
		return false;
	/* Take the slot so no writer replaces the bytes under the copy. */
	if (!atomic_compare_exchange_strong_explicit(&c->tag[s], &want, DISK_CACHE_LOCKED, memory_order_acquire,
						     memory_order_relaxed))
		return false;
	memcpy(dst, c->data + s * c->rb, c->rb);
	atomic_store_explicit(&c->tag[s], row + 1, memory_order_release);
	return true;
}

void disk_cache_put(struct disk_cache *c, uint64_t row, const uint8_t *src)
{
	if (!c->nslots)
		return;
	uint64_t s = slot_of(c, row);
	uint64_t cur = atomic_load_explicit(&c->tag[s], memory_order_relaxed);
	if (cur == DISK_CACHE_LOCKED || cur == row + 1)
		return;
	if (!atomic_compare_exchange_strong_explicit(&c->tag[s], &cur, DISK_CACHE_LOCKED, memory_order_acquire,
						     memory_order_relaxed))
		return; /* someone else is using the slot: skip, a cache may drop anything */
	memcpy(c->data + s * c->rb, src, c->rb);
	atomic_store_explicit(&c->tag[s], row + 1, memory_order_release);
}
