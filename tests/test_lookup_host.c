/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_host.c: the CPU paths of eht_lookup (HOST into host memory, request-order and sorted,
 * raw and bf16, host-pointer and read_rows tiers) against a reference; the bf16 formula's special
 * values; argument errors. Runs without a GPU. */
#include <math.h>
#include <string.h>

#include "lookup/gather/dequant_ref.h"
#include "lookup/gather/rows.h"
#include "lookup/gather/stage.h"
#include "table/table_impl.h"
#include "testutil.h"
#include "util/err.h"

#define RB EHT_ENGRAM_ROW_BYTES

static uint8_t *g_table;
static uint64_t g_rows;

/* Reference: absolute row r (after offset) -> expected output bytes. */
static void ref_row(int64_t r, int64_t lo, int64_t hi, int fmt, uint8_t *dst)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	if (r < lo || r >= hi) {
		memset(dst, 0, ob);
		return;
	}
	const uint8_t *src = g_table + (size_t)r * RB; /* the fake tiers hold absolute rows */
	if (fmt == EHT_LOOKUP_RAW)
		memcpy(dst, src, RB);
	else
		eht_engram_dequant_row(src, (uint16_t *)(void *)dst);
}

/* A tier without a host pointer: rows [first, first + local) read through read_rows. */
static int read_calls, read_unsorted, read_fail;
static int fake_read_rows(eht_table *t, const uint64_t *rows, size_t n, void *dst, unsigned flags)
{
	__atomic_fetch_add(&read_calls, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&read_fail, __ATOMIC_RELAXED))
		return eht_err(EIO, "fake tier: injected read error");
	for (size_t i = 0; i < n; i++) {
		if (rows[i] < t->info.first_row || rows[i] >= t->info.first_row + t->info.local_rows) {
			fprintf(stderr, "read_rows got row %llu outside the local range\n", (unsigned long long)rows[i]);
			abort();
		}
		if (i && rows[i] <= rows[i - 1])
			__atomic_fetch_add(&read_unsorted, 1, __ATOMIC_RELAXED);
		memcpy((uint8_t *)dst + i * RB, g_table + rows[i] * RB, RB);
	}
	return 0;
}
static const struct eht_table_ops fake_ops = {.read_rows = fake_read_rows};

static void check_run(eht_lookup *lk, int64_t lo, int64_t hi, int fmt, size_t n, int id64, int64_t off,
		      uint64_t *rs, unsigned extra)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	void *ids = malloc(n * 8 + 8);
	uint8_t *out = malloc(n * ob + 1), *want = malloc(ob);
	uint64_t want_dead = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t x = t_rand(rs);
		int64_t id;
		if (x % 13 == 0)
			id = -1 - (int64_t)(x % 5) - off;                /* negative */
		else if (x % 17 == 0)
			id = (int64_t)g_rows + (int64_t)(x % 3) - off;   /* >= rows */
		else if (x % 3 == 0 && i)
			id = id64 ? ((int64_t *)ids)[i - 1] : ((int32_t *)ids)[i - 1]; /* duplicate */
		else
			id = (int64_t)(x % g_rows) - off;
		if (id64)
			((int64_t *)ids)[i] = id;
		else
			((int32_t *)ids)[i] = (int32_t)id;
		int64_t r = id + off;
		want_dead += r < lo || r >= hi;
	}
	memset(out, 0xab, n * ob + 1);
	uint64_t dead = 12345;
	CHECK_RC(eht_lookup_run(lk, ids, id64 ? EHT_ID_INT64 : EHT_ID_INT32, off, n, out, NULL,
				EHT_LOOKUP_RUN_OUT_HOST | EHT_LOOKUP_RUN_IDS_HOST | extra, &dead), 0);
	CHECK(dead == want_dead);
	CHECK(eht_lookup_last_dead_count(lk) == want_dead);
	int bad = 0;
	for (size_t i = 0; i < n && bad < 3; i++) {
		int64_t r = (id64 ? ((int64_t *)ids)[i] : ((int32_t *)ids)[i]) + off;
		ref_row(r, lo, hi, fmt, want);
		if (memcmp(out + i * ob, want, ob)) {
			fprintf(stderr, "row %zu (row %lld) differs (n %zu, fmt %d, id64 %d)\n", i, (long long)r, n, fmt, id64);
			bad++;
		}
	}
	CHECK(bad == 0);
	CHECK(out[n * ob] == 0xab); /* nothing past the end */
	if (want_dead)
		CHECK_RC(eht_lookup_run(lk, ids, id64 ? EHT_ID_INT64 : EHT_ID_INT32, off, n, out, NULL,
					EHT_LOOKUP_RUN_OUT_HOST | EHT_LOOKUP_RUN_DEAD_ERROR | extra, NULL), -ERANGE);
	free(ids);
	free(out);
	free(want);
}

static void check_engine(eht_table *t, int64_t lo, int64_t hi, unsigned flags, int fmt, uint64_t *rs)
{
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = flags | EHT_LOOKUP_CPU_ONLY, .format = fmt,
				    .strategy = EHT_LOOKUP_HOST, .threads = 3, .max_batch = 100,
				    .staging_bytes = 10 * RB, .numa_node = -1, .device = -1, .spin_us = 50};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk)
		return;
	static const size_t ns[] = {0, 1, 7, 64, 100, 101, 1000, 3001};
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
		for (int id64 = 0; id64 < 2; id64++) {
			check_run(lk, lo, hi, fmt, ns[k], id64, 0, rs, 0);
			check_run(lk, lo, hi, fmt, ns[k], id64, 250, rs, 0);
			check_run(lk, lo, hi, fmt, ns[k], id64, -7, rs, EHT_LOOKUP_RUN_STRATEGY(EHT_LOOKUP_AUTO));
		}
	CHECK(eht_lookup_last_strategy(lk) == EHT_LOOKUP_HOST);
	eht_lookup_destroy(lk);
}

/* Independent decode of the bf16 formula through doubles and ldexp. */
static uint16_t ref_dq(uint8_t w, uint8_t s)
{
	if ((w & 0x7f) == 0x7f)
		return 0x7fc0;
	if (s == 0)
		return (uint16_t)((w & 0x80) << 8);
	if (s == 0xff)
		return (w & 0x7f) == 0 ? 0x7fc0 : (uint16_t)(0x7f80 | (w & 0x80) << 8);
	int e = (w >> 3) & 15, m = w & 7;
	double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m, -9);
	if (w & 0x80)
		v = -v;
	float f = (float)ldexp(v, s - 127);
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static void check_dequant(void)
{
	int bad = 0;
	for (int w = 0; w < 256; w++)
		for (int s = 0; s < 256; s++)
			bad += eht_lk_dequant1((uint8_t)w, (uint8_t)s) != ref_dq((uint8_t)w, (uint8_t)s);
	CHECK(bad == 0);
	CHECK(eht_lk_dequant1(0x38, 127) == 0x3f80); /* 1.0 */
	CHECK(eht_lk_dequant1(0xb8, 128) == 0xc000); /* -2.0 */
	CHECK(eht_lk_dequant1(0x7e, 127) == 0x43e0); /* 448 */
	CHECK(eht_lk_dequant1(0x7f, 127) == 0x7fc0); /* NaN */
	CHECK(eht_lk_dequant1(0xff, 127) == 0x7fc0);
	CHECK(eht_lk_dequant1(0x38, 255) == 0x7f80); /* scale 255 is +inf */
	CHECK(eht_lk_dequant1(0xb8, 255) == 0xff80);
	CHECK(eht_lk_dequant1(0x00, 255) == 0x7fc0); /* 0 * inf */
	CHECK(eht_lk_dequant1(0x80, 255) == 0x7fc0);
	CHECK(eht_lk_dequant1(0x38, 0) == 0x0000); /* scale 0 is +0.0 */
	CHECK(eht_lk_dequant1(0xb8, 0) == 0x8000);
	CHECK(eht_lk_dequant1(0x80, 100) == 0x8000); /* -0 */
	CHECK(eht_lk_dequant1(0x00, 0) == 0x0000);
	CHECK(eht_lk_dequant1(0x7e, 247) == 0x7f80); /* overflow */
	CHECK(eht_lk_dequant1(0xfe, 254) == 0xff80);
	CHECK(eht_lk_dequant1(0x7e, 246) == 0x7f60); /* 1.75 * 2^127: largest finite */
	CHECK(eht_lk_dequant1(0x38, 1) == 0x0080);  /* 2^-126: smallest normal */
	CHECK(eht_lk_dequant1(0x04, 1) == 0x0001);  /* 2^-133: smallest bf16 subnormal, exact */
	CHECK(eht_lk_dequant1(0x02, 1) == 0x0000);  /* 2^-134: half an ulp, ties to even (0) */
	CHECK(eht_lk_dequant1(0x03, 1) == 0x0001);  /* 1.5 * 2^-134 rounds up */
	uint8_t row[RB];
	uint16_t o[256];
	for (int i = 0; i < 256; i++)
		row[i] = (uint8_t)i;
	for (int g = 0; g < 8; g++)
		row[256 + g] = (uint8_t)(120 + g);
	eht_engram_dequant_row(row, o);
	for (int i = 0; i < 256; i++)
		bad += o[i] != ref_dq((uint8_t)i, (uint8_t)(120 + i / 32));
	CHECK(bad == 0);
}

static void check_sort_dedup(uint64_t *rs)
{
	enum { N = 5000 };
	static uint64_t rows[N], tmp[2 * N], uniq[N];
	static uint32_t slot[N];
	size_t dead = 0, nu = 0;
	for (int i = 0; i < N; i++) {
		rows[i] = t_rand(rs) % 7 == 0 ? LK_DEAD : t_rand(rs) % 3000000000ull;
		if (i % 5 == 1)
			rows[i] = rows[i - 1];
		dead += rows[i] == LK_DEAD;
	}
	CHECK(eht_lk_sort_dedup(rows, N, tmp, uniq, slot, &nu) == dead);
	int bad = 0;
	for (size_t u = 1; u < nu; u++)
		bad += uniq[u] <= uniq[u - 1];
	for (int i = 0; i < N; i++)
		bad += rows[i] == LK_DEAD ? slot[i] != LK_SLOT_DEAD : (slot[i] >= nu || uniq[slot[i]] != rows[i]);
	CHECK(bad == 0);
}

int main(void)
{
	uint64_t rs = 42;
	g_rows = 1000;
	g_table = malloc(g_rows * RB);
	for (size_t i = 0; i < g_rows * RB; i++)
		g_table[i] = (uint8_t)t_rand(&rs);
	for (size_t r = 0; r < g_rows; r += 10) { /* special values: NaN weights, NaN/huge/zero scales */
		g_table[r * RB] = 0x7f;
		g_table[r * RB + 256] = (uint8_t)(r % 20 ? 0xff : 0);
		g_table[r * RB + 257] = 250;
	}
	check_dequant();
	check_sort_dedup(&rs);

	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(g_table, g_rows, RB, -1, "mem", &t), 0);
	for (int fmt = 0; fmt < 2; fmt++) {
		check_engine(t, 0, (int64_t)g_rows, 0, fmt, &rs);
		check_engine(t, 0, (int64_t)g_rows, EHT_LOOKUP_HOST_SORT, fmt, &rs);
	}
	/* The background mode asked for where it cannot be had (a CPU-only engine) says so, also when
	 * asked through the environment; it still looks rows up. */
	CHECK(eht_lookup_background(NULL) == 0);
	for (int by_env = 0; by_env < 2; by_env++) {
		if (by_env)
			t_setenv("EHT_LOOKUP_BACKGROUND", "1");
		struct eht_lookup_opts bo = {.size = sizeof(bo),
					     .flags = EHT_LOOKUP_CPU_ONLY | (by_env ? 0 : EHT_LOOKUP_BACKGROUND),
					     .strategy = EHT_LOOKUP_HOST, .max_batch = 100, .numa_node = -1,
					     .device = -1};
		eht_lookup *blk = NULL;
		CHECK_RC(eht_lookup_create(t, &bo, &blk), 0);
		if (blk) {
			CHECK(eht_lookup_background(blk) == 0);
			check_run(blk, 0, (int64_t)g_rows, EHT_LOOKUP_RAW, 64, 1, 0, &rs, 0);
			eht_lookup_destroy(blk);
		}
		t_setenv("EHT_LOOKUP_BACKGROUND", NULL);
	}

	/* The gather's knobs: chunks stop at EHT_LOOKUP_CHUNK_MAX (LK_CHUNK_DEFAULT_MAX without it,
	 * LK_CHUNK_MAX at most, the smallest chunk at least; a 20,000-id batch over 4 workers wants
	 * 625-row chunks), and the rows stay the reference's at each. */
	{
		struct eht_lookup_opts ko = {.size = sizeof(ko), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
					     .threads = 3, .max_batch = 20000, .numa_node = -1, .device = -1};
		eht_lookup *klk = NULL;
		CHECK_RC(eht_lookup_create(t, &ko, &klk), 0);
		if (klk) {
			CHECK(eht_lk_chunk_for(klk, 20000) == LK_CHUNK_DEFAULT_MAX);
			static const struct { const char *max; size_t want; } ks[] = {
				{"64", 64}, {"1024", 20000 / (4 * 8)}, {"16", LK_CHUNK_MIN}}; /* 4 workers x 8 chunks */
			for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++) {
				t_setenv("EHT_LOOKUP_CHUNK_MAX", ks[k].max);
				eht_lk_knobs_reload();
				CHECK(eht_lk_chunk_for(klk, 20000) == ks[k].want);
				check_run(klk, 0, (int64_t)g_rows, EHT_LOOKUP_RAW, 3001, 0, 0, &rs, 0);
				check_run(klk, 0, (int64_t)g_rows, EHT_LOOKUP_RAW, 1000, 1, 5, &rs, 0);
			}
			t_setenv("EHT_LOOKUP_CHUNK_MAX", NULL);
			eht_lk_knobs_reload();
			CHECK(eht_lk_chunk_for(klk, 20000) == LK_CHUNK_DEFAULT_MAX);
			eht_lookup_destroy(klk);
		}
	}

	/* The staging's size: the option, else max_batch rows; lookups larger than it still come out
	 * whole (HOST goes through it in pieces). */
	for (int by_opt = 0; by_opt < 2; by_opt++) {
		struct eht_lookup_opts so = {.size = sizeof(so), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
					     .max_batch = 1000, .numa_node = -1, .device = -1,
					     .staging_bytes = by_opt ? 100 * RB : 0};
		eht_lookup *slk = NULL;
		CHECK_RC(eht_lookup_create(t, &so, &slk), 0);
		if (slk) {
			CHECK(slk->staging_rows == (by_opt ? 100u : 1000u));
			check_run(slk, 0, (int64_t)g_rows, EHT_LOOKUP_RAW, 1000, 1, 0, &rs, 0);
			eht_lookup_destroy(slk);
		}
	}

	/* A read_rows tier holding rows [100, 600) of 1000. */
	struct eht_table_info fi = {.size = sizeof(fi), .tier = EHT_TIER_DISK, .rows = g_rows, .row_bytes = RB,
				    .first_row = 100, .local_rows = 500, .device = -1, .numa_node = -1, .name = "fake"};
	eht_table *ft = NULL;
	CHECK_RC(eht_table_new(&fi, &fake_ops, NULL, &ft), 0);
	/* HOST_SORT: rows reach read_rows sorted (and deduplicated); without it, raw output reads them
	 * in request order (fewer steps, faster warm), and bf16 host output still goes sorted. */
	for (int fmt = 0; fmt < 2; fmt++)
		check_engine(ft, 100, 600, EHT_LOOKUP_HOST_SORT, fmt, &rs);
	CHECK(read_calls > 0 && read_unsorted == 0);
	read_calls = 0;
	for (int fmt = 0; fmt < 2; fmt++)
		check_engine(ft, 100, 600, 0, fmt, &rs);
	CHECK(read_calls > 0);
	{
		eht_lookup *lk = NULL;
		struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .threads = 2, .device = -1,
					    .numa_node = -1};
		CHECK_RC(eht_lookup_create(ft, &o, &lk), 0);
		int32_t ids[3] = {150, 160, 170};
		uint8_t out[3 * RB];
		read_fail = 1;
		CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, 0, 3, out, NULL, EHT_LOOKUP_RUN_OUT_HOST, NULL), -EIO);
		read_fail = 0;
		eht_lookup_destroy(lk);
	}

	/* Argument errors. */
	eht_lookup *lk = NULL;
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = 0x100, .device = -1, .numa_node = -1};
	CHECK_RC(eht_lookup_create(t, &o, &lk), -EINVAL);
	o.flags = 0;
	o.size = 0; /* not set (smaller sizes of older callers are accepted: test_opts_size) */
	CHECK_RC(eht_lookup_create(t, &o, &lk), -EINVAL);
	o.size = sizeof(o);
	o.strategy = EHT_LOOKUP_DIRECT;
	CHECK_RC(eht_lookup_create(t, &o, &lk), -ENODEV);
	o.strategy = 9;
	CHECK_RC(eht_lookup_create(t, &o, &lk), -EINVAL);
	o.strategy = EHT_LOOKUP_HOST;
	CHECK_RC(eht_lookup_create(NULL, &o, &lk), -EINVAL);
	CHECK(strstr(eht_last_error(), "NULL table") != NULL);
	CHECK_RC(eht_lookup_create(t, &o, NULL), -EINVAL);
	CHECK(strstr(eht_last_error(), "NULL out") != NULL);
	o.format = 7;
	CHECK_RC(eht_lookup_create(t, &o, &lk), -EINVAL);
	CHECK(strstr(eht_last_error(), "unknown output format 7") != NULL);
	o.format = EHT_LOOKUP_RAW;
	o.max_batch = 1ull << 31;
	CHECK_RC(eht_lookup_create(t, &o, &lk), -EINVAL);
	CHECK(strstr(eht_last_error(), "max_batch") != NULL);
	o.max_batch = 0;
	o.flags = EHT_LOOKUP_BG_PUSH | EHT_LOOKUP_BG_STREAM;
	CHECK_RC(eht_lookup_create(t, &o, &lk), -EINVAL);
	CHECK(strstr(eht_last_error(), "both ways") != NULL);
	o.flags = 0;
	CHECK(lk == NULL);
	o.format = EHT_LOOKUP_BF16;
	eht_table *t2 = NULL;
	CHECK_RC(eht_table_wrap(g_table, 100, 256, -1, "t256", &t2), 0);
	CHECK_RC(eht_lookup_create(t2, &o, &lk), -EINVAL);
	CHECK(lk == NULL);
	o.format = EHT_LOOKUP_RAW;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	int32_t ids[2] = {1, 2};
	uint8_t out[2 * RB];
	CHECK_RC(eht_lookup_run(lk, ids, 7, 0, 2, out, NULL, 0, NULL), -EINVAL);
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, 0, 2, out, NULL, 0x80000000u, NULL), -EINVAL);
	CHECK_RC(eht_lookup_run(lk, NULL, EHT_ID_INT32, 0, 2, out, NULL, 0, NULL), -EINVAL);
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, 0, 2, NULL, NULL, 0, NULL), -EINVAL);
	CHECK(strstr(eht_last_error(), "NULL out") != NULL);
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, 0, 2, out, NULL,
				EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_IDS_DEVICE, NULL), -EINVAL);
	CHECK(strstr(eht_last_error(), "ids cannot be both") != NULL);
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, 0, 2, out, NULL,
				EHT_LOOKUP_RUN_OUT_HOST | EHT_LOOKUP_RUN_OUT_DEVICE, NULL), -EINVAL);
	CHECK(strstr(eht_last_error(), "out cannot be both") != NULL);
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, 0, 2, out, NULL, EHT_LOOKUP_RUN_OUT_DEVICE, NULL), -EINVAL);
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, 0, 2, out, NULL, EHT_LOOKUP_RUN_STRATEGY(EHT_LOOKUP_SORTED), NULL),
		 -EINVAL);
	CHECK_RC(eht_lookup_run(lk, NULL, EHT_ID_INT32, 0, 0, NULL, NULL, 0, NULL), 0);
	CHECK_RC(eht_lookup_run(lk, ids, EHT_ID_INT32, 0, 2, out, NULL, 0, NULL), 0); /* detection: host */
	CHECK(memcmp(out, g_table + RB, 2 * RB) == 0);
	eht_lookup_destroy(lk);
	eht_lookup_destroy(NULL);
	eht_table_close(t2);
	eht_table_close(ft);
	eht_table_close(t);
	free(g_table);
	return t_done();
}
