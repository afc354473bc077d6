/* SPDX-License-Identifier: Apache-2.0 */
/* rng.c: numpy's default_rng(seed).integers(0, high, n) bit for bit: SeedSequence -> PCG64 -> Lemire. */
#include <stdint.h>

#include "eht_engram.h"
#include "util/err.h"

typedef unsigned __int128 u128;

/* SeedSequence's hashing constants. */
#define INIT_A 0x43b0d7e5u
#define MULT_A 0x931e8875u
#define INIT_B 0x8b51f9ddu
#define MULT_B 0x58f38dedu
#define MIX_L 0xca01f9ddu
#define MIX_R 0x4973f715u
#define POOL 4

static uint32_t hashmix(uint32_t v, uint32_t *hc)
{
	v ^= *hc;
	*hc *= MULT_A;
	v *= *hc;
	return v ^ (v >> 16);
}

static uint32_t mix(uint32_t x, uint32_t y)
{
	uint32_t r = MIX_L * x - MIX_R * y;
	return r ^ (r >> 16);
}

/* SeedSequence(seed).generate_state(4, uint64): the entropy is the seed's 32-bit words, low first. */
static void seed_state(uint64_t seed, uint64_t st[4])
{
	uint32_t ent[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
	unsigned nent = ent[1] ? 2 : 1;
	uint32_t pool[POOL], hc = INIT_A;
	for (unsigned i = 0; i < POOL; i++)
		pool[i] = hashmix(i < nent ? ent[i] : 0, &hc);
	for (unsigned s = 0; s < POOL; s++)
		for (unsigned d = 0; d < POOL; d++)
			if (s != d)
				pool[d] = mix(pool[d], hashmix(pool[s], &hc));
	uint32_t w[8], hb = INIT_B;
	for (unsigned i = 0; i < 8; i++) {
		uint32_t v = pool[i % POOL] ^ hb;
		hb *= MULT_B;
		v *= hb;
		w[i] = v ^ (v >> 16);
	}
	for (unsigned i = 0; i < 4; i++)
		st[i] = (uint64_t)w[2 * i] | (uint64_t)w[2 * i + 1] << 32;
}

struct pcg64 {
	u128 state, inc;
};

#define PCG_MULT (((u128)0x2360ed051fc65da4ull << 64) | 0x4385df649fccf645ull)

static void pcg_step(struct pcg64 *g) { g->state = g->state * PCG_MULT + g->inc; }

static uint64_t pcg_next(struct pcg64 *g)
{
	pcg_step(g);
	uint64_t x = (uint64_t)(g->state >> 64) ^ (uint64_t)g->state;
	unsigned rot = (unsigned)(g->state >> 122);
	return (x >> rot) | (x << ((64 - rot) & 63));
}

static void pcg_seed(struct pcg64 *g, const uint64_t st[4])
{
	u128 s = (u128)st[0] << 64 | st[1], i = (u128)st[2] << 64 | st[3];
	g->state = 0;
	g->inc = (i << 1) | 1;
	pcg_step(g);
	g->state += s;
	pcg_step(g);
}

/* A value in [0, rng] (rng + 1 a 64-bit count) by Lemire's multiply-and-reject. */
static uint64_t bounded64(struct pcg64 *g, uint64_t rng)
{
	uint64_t excl = rng + 1;
	u128 m = (u128)pcg_next(g) * excl;
	uint64_t left = (uint64_t)m;
	if (left < excl) {
		uint64_t thr = (UINT64_MAX - rng) % excl;
		while (left < thr) {
			m = (u128)pcg_next(g) * excl;
			left = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

/* 32-bit draws take the low then the high half of one 64-bit output, as numpy buffers them. */
struct buf32 {
	int has;
	uint32_t val;
};

static uint32_t next32(struct pcg64 *g, struct buf32 *b)
{
	if (b->has) {
		b->has = 0;
		return b->val;
	}
	uint64_t x = pcg_next(g);
	b->has = 1;
	b->val = (uint32_t)(x >> 32);
	return (uint32_t)x;
}

static uint32_t bounded32(struct pcg64 *g, struct buf32 *b, uint32_t rng)
{
	uint32_t excl = rng + 1;
	uint64_t m = (uint64_t)next32(g, b) * excl;
	uint32_t left = (uint32_t)m;
	if (left < excl) {
		uint32_t thr = (UINT32_MAX - rng) % excl;
		while (left < thr) {
			m = (uint64_t)next32(g, b) * excl;
			left = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

int eht_engram_rng_integers(uint64_t seed, int64_t high, size_t n, int64_t *out)
{
	if (high < 1 || (!out && n))
		return eht_err(EINVAL, "eht_engram_rng_integers: high %lld must be >= 1", (long long)high);
	uint64_t st[4];
	struct pcg64 g;
	struct buf32 b = {0, 0};
	seed_state(seed, st);
	pcg_seed(&g, st);
	uint64_t rng = (uint64_t)high - 1;
	for (size_t i = 0; i < n; i++) {
		if (rng == 0)
			out[i] = 0;
		else if (rng <= UINT32_MAX)
			out[i] = (int64_t)(rng == UINT32_MAX ? next32(&g, &b) : bounded32(&g, &b, (uint32_t)rng));
		else
			out[i] = (int64_t)bounded64(&g, rng);
	}
	return 0;
}
