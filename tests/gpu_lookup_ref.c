/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_lookup_ref.c: what the GPU lookup tests share (see gpu_lookup_ref.h). */
#include <string.h>

#include "gpu_lookup_ref.h"

#define RB EHT_ENGRAM_ROW_BYTES

int t_cu(int rc)
{
	if (rc) {
		fprintf(stderr, "driver call failed: %s\n", eht_last_error());
		t_failures++;
	}
	return rc;
}

void t_lookup_ids(const struct t_lookup_ref *ref, int64_t *ids, size_t n, uint64_t *rs)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = t_rand(rs);
		if (x % 13 == 0)
			ids[i] = -1 - (int64_t)(x % 3);
		else if (x % 17 == 0)
			ids[i] = (int64_t)ref->nrows + (int64_t)(x % 9);
		else if (x % 5 == 0 && i)
			ids[i] = ids[i - 1];
		else
			ids[i] = (int64_t)(x % ref->nrows);
	}
}

size_t t_lookup_compare(const struct t_lookup_ref *ref, eht_dptr d_out, const int64_t *ids, size_t n, int fmt,
			uint64_t *dead)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB, bad = 0;
	uint8_t *got = malloc(n * ob), want[512];
	*dead = 0;
	if (!got || t_cu(eht_dev_d2h(got, d_out, n * ob))) {
		free(got);
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t r = ids[i];
		if (r < 0 || (uint64_t)r >= ref->nrows) {
			memset(want, 0, ob);
			(*dead)++;
		} else if (fmt == EHT_LOOKUP_BF16) {
			eht_engram_dequant_row(ref->rows + (uint64_t)r * RB, (uint16_t *)(void *)want);
		} else {
			memcpy(want, ref->rows + (uint64_t)r * RB, RB);
		}
		bad += memcmp(got + i * ob, want, ob) != 0;
	}
	free(got);
	return bad;
}

void t_lookup_eager_gpu_ids(const struct t_lookup_ref *ref, const char *tier, eht_lookup *lk, int strategy,
			    int fmt, eht_stream s, int64_t *ids, eht_dptr d_ids, eht_dptr d_out, size_t nmax,
			    uint64_t *rs)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	const size_t ns[] = {1, 777, 6144, nmax};
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		size_t n = ns[k];
		t_lookup_ids(ref, ids, n, rs);
		t_cu(eht_dev_h2d(d_ids, ids, n * 8));
		t_cu(eht_dev_memset8(d_out, 0xab, n * ob));
		t_cu(eht_dev_sync());
		int rc = eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_out, s,
					EHT_LOOKUP_RUN_STRATEGY(strategy), NULL);
		if (rc) {
			fprintf(stderr, "%s %s fmt %d eager n %zu: %s\n", tier, eht_lookup_strategy_name(strategy), fmt, n,
				eht_last_error());
			t_failures++;
			continue;
		}
		/* The ids may change once the stream passed the call; the output must not. */
		t_cu(eht_dev_stream_sync(s));
		t_cu(eht_dev_memset8(d_ids, 0, n * 8));
		uint64_t dead = 0;
		size_t bad = t_lookup_compare(ref, d_out, ids, n, fmt, &dead);
		if (bad || dead != eht_lookup_last_dead_count(lk))
			fprintf(stderr, "%s %s fmt %d eager n %zu: %zu rows differ, dead %llu want %llu\n", tier,
				eht_lookup_strategy_name(strategy), fmt, n, bad,
				(unsigned long long)eht_lookup_last_dead_count(lk), (unsigned long long)dead);
		CHECK(bad == 0);
		CHECK(dead == eht_lookup_last_dead_count(lk));
	}
}

/* See gpu_lookup_ref.h. */
void t_lookup_check_engine(const struct t_lookup_ref *ref, const char *tier, eht_lookup *lk, int strategy, int fmt,
			   eht_stream s, size_t nmax, bool host_capture_refused, uint64_t *rs)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	int64_t *ids = malloc(nmax * sizeof(int64_t));
	int64_t *hids = NULL;
	eht_dptr d_ids = 0, d_out = 0;
	if (t_cu(eht_dev_alloc(&d_ids, nmax * 8)) || t_cu(eht_dev_alloc(&d_out, nmax * ob)) ||
	    t_cu(eht_dev_host_alloc((void **)&hids, nmax * 8, 0)))
		goto out;
	/* Eager, ids in GPU memory. */
	t_lookup_eager_gpu_ids(ref, tier, lk, strategy, fmt, s, ids, d_ids, d_out, nmax, rs);
	/* Captured once, replayed with new ids in the same buffers: GPU ids, then host ids (pinned). */
	for (int host_ids = 0; host_ids < 2; host_ids++) {
		if (host_ids && (strategy == EHT_LOOKUP_DIRECT || strategy == EHT_LOOKUP_SORTED))
			break; /* GPU strategies read ids on the GPU only */
		const size_t n = ref->capture_n && ref->capture_n <= nmax ? ref->capture_n : 5000;
		eht_graph g = NULL;
		eht_graph_exec ge = NULL;
		t_lookup_ids(ref, ids, n, rs);
		t_cu(eht_dev_h2d(d_ids, ids, n * 8));
		t_cu(eht_dev_sync());
		const void *pid = host_ids ? (const void *)hids : (const void *)(uintptr_t)d_ids;
		if (t_cu(eht_dev_capture_begin(s, EHT_CAPTURE_GLOBAL)))
			break;
		int rc = eht_lookup_run(lk, pid, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_out, s,
					EHT_LOOKUP_RUN_STRATEGY(strategy) |
						(host_ids ? EHT_LOOKUP_RUN_IDS_HOST : EHT_LOOKUP_RUN_IDS_DEVICE),
					NULL);
		int erc = eht_dev_capture_end(s, &g);
		if (host_ids && host_capture_refused) { /* a hot set captures only GPU ids */
			CHECK_RC(rc, -EOPNOTSUPP);
			if (g)
				eht_dev_graph_destroy(g);
			continue;
		}
		if (rc || erc) {
			fprintf(stderr, "%s %s fmt %d capture (host ids %d): %s\n", tier, eht_lookup_strategy_name(strategy),
				fmt, host_ids, eht_last_error());
			t_failures++;
			if (g)
				eht_dev_graph_destroy(g);
			continue;
		}
		if (t_cu(eht_dev_graph_instantiate(&ge, g))) {
			eht_dev_graph_destroy(g);
			continue;
		}
		for (int replay = 0; replay < 4; replay++) {
			t_lookup_ids(ref, ids, n, rs); /* new ids every replay, written into the captured buffer */
			if (host_ids)
				memcpy(hids, ids, n * 8);
			else
				t_cu(eht_dev_h2d(d_ids, ids, n * 8));
			t_cu(eht_dev_memset8(d_out, 0xab, n * ob));
			t_cu(eht_dev_sync());
			if (t_cu(eht_dev_graph_launch(ge, s)) || t_cu(eht_dev_stream_sync(s)))
				break;
			uint64_t dead = 0;
			size_t bad = t_lookup_compare(ref, d_out, ids, n, fmt, &dead);
			if (bad || dead != eht_lookup_last_dead_count(lk))
				fprintf(stderr, "%s %s fmt %d replay %d (host ids %d): %zu rows differ, dead %llu want %llu\n",
					tier, eht_lookup_strategy_name(strategy), fmt, replay, host_ids, bad,
					(unsigned long long)eht_lookup_last_dead_count(lk), (unsigned long long)dead);
			CHECK(bad == 0);
			CHECK(dead == eht_lookup_last_dead_count(lk));
		}
		eht_dev_graph_exec_destroy(ge);
		eht_dev_graph_destroy(g);
	}
	/* A dead-count pointer cannot be captured: a clear error, and the capture is still usable. */
	{
		uint64_t dead = 0;
		eht_graph g = NULL;
		if (!t_cu(eht_dev_capture_begin(s, EHT_CAPTURE_GLOBAL))) {
			CHECK(eht_lookup_run(lk, (void *)(uintptr_t)d_ids, EHT_ID_INT64, 0, 10, (void *)(uintptr_t)d_out, s,
					     EHT_LOOKUP_RUN_STRATEGY(strategy), &dead) == -EOPNOTSUPP);
			t_cu(eht_dev_capture_end(s, &g));
			if (g)
				eht_dev_graph_destroy(g);
		}
	}
out:
	if (hids)
		eht_dev_host_free(hids);
	if (d_ids)
		eht_dev_free(d_ids);
	if (d_out)
		eht_dev_free(d_out);
	free(ids);
}

eht_stream t_gpu_test_stream(void)
{
	if (!t_have_gpu())
		t_skip("no GPU");
	if (eht_dev_use(0))
		t_skip("cannot use GPU 0");
	eht_stream s = NULL;
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), 0);
	return s;
}

eht_table *t_lookup_ref_table(struct t_lookup_ref *ref, uint64_t nrows, uint64_t *rs, const char *name)
{
	uint8_t *rows = t_rand_rows(nrows, EHT_ENGRAM_ROW_BYTES, rs);
	ref->nrows = nrows;
	ref->rows = rows;
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(rows, nrows, EHT_ENGRAM_ROW_BYTES, 0, name, &t), 0);
	return t;
}

void t_lookup_shared_tiers(const struct t_lookup_ref *ref, const char *name, eht_stream s, uint64_t *rs,
			   void (*check)(const char *tier, eht_table *t, eht_stream s, uint64_t *rs))
{
	static const int tiers[] = {EHT_TIER_HOST_NUMA, EHT_TIER_REGION_PINNED};
	static const char *names[] = {"host-numa", "region-pinned"};
	eht_group *grp = NULL;
	CHECK_RC(eht_group_create_single(&grp), 0);
	for (int k = 0; grp && k < 2; k++) {
		struct eht_share_opts so = {.size = sizeof(so), .tier = tiers[k], .device = 0, .row_bytes = RB,
					    .name = name, .flags = EHT_SHARE_NO_RESERVE};
		eht_table *t = NULL;
		int rc = eht_table_share(ref->nrows * RB, grp, &so, &t);
		if (rc) {
			fprintf(stderr, "tier %s not available here (%s): skipped\n", names[k], eht_last_error());
			continue;
		}
		struct eht_table_info ti = {.size = sizeof(ti)};
		CHECK_RC(eht_table_get_info(t, &ti), 0);
		if (ti.host)
			memcpy(ti.host, ref->rows, ref->nrows * RB);
		check(names[k], t, s, rs);
		eht_table_close(t);
	}
	eht_group_destroy(grp);
}
