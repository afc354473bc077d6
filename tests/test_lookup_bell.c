/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_bell.c: the doorbell / pool hand-off of stream-triggered lookups on the CPU alone (run
 * under TSan by `make tsan`): threads play the stage-in kernel's blocks (ring, wait for each chunk's
 * ready value, copy the staging slot, free it), the process's poller and pool do the rest. Eager-style
 * requests, a "captured" request replayed with new ids in the same buffer, dead ids, slot reuse;
 * compact requests (the distinct rows of a GPU dedup pass, their number known only to the "kernel",
 * which writes it before ringing; the geometry is the bound's); two engines share the process's one
 * pool; a captured request replayed at a steady period gets the poller's ring window (poller.c); 1,024
 * distinct captured requests per engine, all replayed, and the 1,025th refused. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "lookup/gather/bell/bell.h"
#include "lookup/gather/bell/poller.h"
#include "lookup/gather/bell/requests.h"
#include "testutil.h"
#include "util/clock.h"
#include "util/cpu.h"

#define RB 40

static uint8_t *g_table;
static uint64_t g_rows = 5000;

struct emu {
	eht_lookup *lk;
	unsigned idx, blocks, block;
	size_t n, count; /* bound (the geometry's), rows really sent (<= n for a compact request) */
	bool compact;
	uint8_t *out;
	_Atomic uint64_t *dead;
};

/* One "block" of the stage-in kernel: chunks block, block + blocks, ... */
static void *emu_block(void *arg)
{
	struct emu *e = arg;
	struct lk_bell *b = e->lk->bell;
	uint32_t chunk, nslots;
	eht_lk_bell_geom(e->lk, e->n, &chunk, &nslots);
	if (e->block == 0) {
		if (e->compact)
			b->h_count[e->idx] = e->count;
		atomic_store_explicit(&b->words[e->idx], 1, memory_order_release);
	}
	size_t nchunks = (e->count + chunk - 1) / chunk;
	for (size_t c = e->block; c < nchunks; c += e->blocks) {
		uint32_t slot = (uint32_t)(c % nslots);
		while (atomic_load_explicit(&b->words[LK_REQS + slot], memory_order_acquire) != LK_READY(e->idx, c))
			eht_cpu_relax();
		atomic_fetch_add(e->dead, b->cdead[c]);
		size_t r0 = c * chunk, r1 = r0 + chunk < e->count ? r0 + chunk : e->count;
		memcpy(e->out + r0 * RB, b->staging + (size_t)slot * chunk * RB, (r1 - r0) * RB);
		atomic_store_explicit(&b->words[LK_REQS + slot], 0, memory_order_release);
	}
	return NULL;
}

static void run_one(eht_lookup *lk, const int64_t *ids, size_t n, bool captured, unsigned blocks)
{
	unsigned idx = 0;
	int rc = eht_lk_bell_prepare(lk, ids, false, 1, 0, n, false, false, 0, 0, captured, &idx);
	CHECK_RC(rc, 0);
	if (rc) /* nothing was armed: the "kernel" would wait forever */
		return;
	if (!captured)
		eht_lk_bell_arm(lk, idx);
	uint8_t *out = malloc(n * RB + 1);
	_Atomic uint64_t dead = 0;
	pthread_t th[8];
	struct emu e[8];
	for (unsigned k = 0; k < blocks; k++) {
		e[k] = (struct emu){.lk = lk, .idx = idx, .blocks = blocks, .block = k, .n = n, .count = n, .out = out,
				    .dead = &dead};
		CHECK(pthread_create(&th[k], NULL, emu_block, &e[k]) == 0);
	}
	for (unsigned k = 0; k < blocks; k++)
		pthread_join(th[k], NULL);
	uint64_t want_dead = 0;
	CHECK(t_rows_compare(g_table, g_rows, RB, ids, n, out, &want_dead) == 0);
	CHECK(atomic_load(&dead) == want_dead);
	CHECK_RC(eht_lk_bell_take_error(lk), 0);
	free(out);
}

/* A compact request: u32 local rows, of which only `count` (<= bound n) exist; the CPU learns that
 * count from h_count, written by the "kernel" before it rings. */
static void run_compact(eht_lookup *lk, const uint32_t *rows, size_t n, size_t count, bool captured, unsigned blocks)
{
	unsigned idx = 0;
	CHECK_RC(eht_lk_bell_prepare(lk, rows, false, 0, 0, n, true, false, 0, 0, captured, &idx), 0);
	if (!captured)
		eht_lk_bell_arm(lk, idx);
	uint8_t *out = malloc(n * RB + 1);
	memset(out, 0xee, n * RB + 1);
	_Atomic uint64_t dead = 0;
	pthread_t th[8];
	struct emu e[8];
	for (unsigned k = 0; k < blocks; k++) {
		e[k] = (struct emu){.lk = lk, .idx = idx, .blocks = blocks, .block = k, .n = n, .count = count, .out = out,
				    .dead = &dead, .compact = true};
		CHECK(pthread_create(&th[k], NULL, emu_block, &e[k]) == 0);
	}
	for (unsigned k = 0; k < blocks; k++)
		pthread_join(th[k], NULL);
	uint64_t bad = 0;
	for (size_t i = 0; i < count; i++)
		bad += memcmp(out + i * RB, g_table + (size_t)rows[i] * RB, RB) != 0;
	for (size_t i = count * RB; i < n * RB + 1; i++) /* nothing past the count is written */
		bad += out[i] != 0xee;
	CHECK(bad == 0);
	CHECK(atomic_load(&dead) == 0);
	CHECK_RC(eht_lk_bell_take_error(lk), 0);
	free(out);
}

int main(void)
{
	uint64_t rs = 5;
	g_table = t_rand_rows(g_rows, RB, &rs);
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(g_table, g_rows, RB, -1, "bell", &t), 0);
	/* Small staging (200 rows): slots are reused within a request. */
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				    .device = -1, .numa_node = -1, .threads = 3, .max_batch = 4096,
				    .staging_bytes = 200 * RB, .spin_us = 50};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk)
		return t_done();
	CHECK_RC(eht_lk_bell_init(lk), 0);
	/* One CPU pool per process: a second engine (another table) shares it. */
	eht_table *t2 = NULL;
	eht_lookup *lk2 = NULL;
	CHECK_RC(eht_table_wrap(g_table, 10, RB, -1, "bell2", &t2), 0);
	CHECK_RC(eht_lookup_create(t2, &o, &lk2), 0);
	CHECK(lk2 && lk2->pool == lk->pool);
	eht_lookup_destroy(lk2);
	eht_table_close(t2);
	static int64_t ids[4096];
	static const size_t ns[] = {1, 7, 100, 1000, 4096};
	for (int rep = 0; rep < 3; rep++)
		for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
			for (size_t i = 0; i < ns[k]; i++) {
				uint64_t x = t_rand(&rs);
				ids[i] = x % 13 == 0 ? -(int64_t)(x % 7) - 1 : x % 17 == 0 ? (int64_t)g_rows + 3 : (int64_t)(x % g_rows);
			}
			run_one(lk, ids, ns[k], false, 1 + (unsigned)(k % 3));
		}
	/* A "captured" request: same ids buffer, new ids each replay. */
	for (int replay = 0; replay < 4; replay++) {
		for (size_t i = 0; i < 3000; i++)
			ids[i] = (int64_t)((t_rand(&rs) + (uint64_t)replay) % (g_rows + 10)) - 5;
		run_one(lk, ids, 3000, true, 4);
	}
	/* A captured request (its own ids buffer) replayed at a steady period (50 ms, a model's step
	 * graph): once three intervals were alike the poller expects its next ring in a window around
	 * the last ring + the period (ring_clock.h); when the replays stop, the window passes and none is
	 * left. On a loaded machine a ring seen late can break the run, so a few more replays are allowed. */
	{
		static int64_t step_ids[64];
		const double period = 0.05;
		double f = 0, u = 0, last = 0, prev = 0;
		bool got = false;
		for (int replay = 0; replay < 12 && !got; replay++) {
			double wait = last > 0 ? last + period - eht_now_s() : 0;
			if (wait > 0)
				nanosleep(&(struct timespec){0, (long)(wait * 1e9)}, NULL);
			for (size_t i = 0; i < 64; i++)
				step_ids[i] = (int64_t)(t_rand(&rs) % g_rows);
			prev = last;
			last = eht_now_s();
			run_one(lk, step_ids, 64, true, 1);
			/* (the poller chooses the next window right after serving the ring; until it has,
			 * a loaded machine can still show the window of the ring just made, which opened
			 * before it: only a window about a period ahead is the next one's) */
			for (int k = 0; k < 200 && replay >= 3 && !got; k++) {
				got = eht_lk_poller_window(&f, &u) && f > last + 0.5 * period;
				if (!got)
					nanosleep(&(struct timespec){0, 100000}, NULL);
			}
		}
		CHECK(got);
		const double iv = last - prev; /* the period the poller saw, give or take its detection */
		CHECK(iv > 0.9 * period && f > last + 0.5 * iv && u < last + 1.5 * iv);
		CHECK(u - f > 2 * 0.03 * 0.5 * iv && u - f < 2 * 0.03 * 1.5 * iv);
		/* The poller lets a window go at its first look after it: within a nap (1 ms) on an idle
		 * machine, but a loaded one (a build beside the tests) can keep it off a core for longer
		 * than 100 ms, so it has 2 s; a window that never goes still fails. */
		double gone_by = u + 2.0;
		bool left;
		while ((left = eht_lk_poller_window(&f, &u)) && eht_now_s() < gone_by)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
		CHECK(!left);
	}
	/* Compact requests: counts from none to the bound, eager and "captured", interleaved with the
	 * others so slots are handed between request kinds. */
	static uint32_t rows[4096];
	static const size_t cs[][2] = {{4096, 0}, {4096, 1}, {4096, 2500}, {1000, 999}, {64, 64}, {4096, 4096}};
	for (int rep = 0; rep < 2; rep++)
		for (size_t k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
			for (size_t i = 0; i < cs[k][1]; i++)
				rows[i] = (uint32_t)(t_rand(&rs) % g_rows);
			run_compact(lk, rows, cs[k][0], cs[k][1], rep == 1 && k == 2, 1 + (unsigned)(k % 4));
			for (size_t i = 0; i < 100; i++)
				ids[i] = (int64_t)(t_rand(&rs) % g_rows);
			run_one(lk, ids, 100, false, 2);
		}
	/* As many captured calls as engines make (a graph per batch size, 1,024 distinct ids buffers and
	 * counts), all replayed afterwards in another order; one more is refused, naming the cap. */
	{
		enum { NCAP = 1024 - 3 }; /* three captured requests above hold theirs */
		int64_t *bufs = malloc((size_t)NCAP * 40 * sizeof(int64_t));
		for (size_t k = 0; k < NCAP; k++) {
			for (size_t i = 0; i < 40; i++)
				bufs[k * 40 + i] = (int64_t)(t_rand(&rs) % (g_rows + 4)) - 2;
			run_one(lk, bufs + k * 40, 1 + k % 40, true, 1 + (unsigned)(k % 3));
		}
		for (size_t k = NCAP; k-- > 0;) {
			for (size_t i = 0; i < 40; i++)
				bufs[k * 40 + i] = (int64_t)(t_rand(&rs) % g_rows);
			run_one(lk, bufs + k * 40, 1 + k % 40, true, 2);
		}
		unsigned idx = 0;
		CHECK_RC(eht_lk_bell_prepare(lk, ids + 1, false, 1, 0, 5, false, false, 0, 0, true, &idx), -ENOSPC);
		CHECK(strstr(eht_last_error(), "1024 distinct captured") != NULL);
		free(bufs);
	}
	eht_lookup_destroy(lk);
	eht_table_close(t);
	free(g_table);
	return t_done();
}
