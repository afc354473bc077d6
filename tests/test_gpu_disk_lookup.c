/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_disk_lookup.c: the disk tier's GPU path (sort + dedup on the host, pool gather into pinned
 * staging, DMA into the fixed GPU buffer, expand kernel) bit-exact against the in-memory table at TP 1,
 * 2, 4 and 8 for the single-file and sharded fixtures: raw and bf16 output in GPU memory, ids in host
 * and GPU memory, duplicates, dead ids, other ranks' ids, batches over max_batch and staging, prefetch
 * tickets on a stream, and a truncated file (clear error, no crash). Exit 77 without a GPU. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "disk_ref.h"
#include "testutil.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define N_IDS 5001

static eht_lookup *engine(eht_table *t, int fmt)
{
	struct eht_lookup_opts o = {.size = sizeof(o), .strategy = EHT_LOOKUP_HOST, .format = fmt, .device = 0,
				    .threads = 4, .max_batch = 1000, .staging_bytes = 300 * RB, .numa_node = -1};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	return lk;
}

/* Output of rank r for ids (host), against the reference; returns mismatching rows. */
static int compare(const uint8_t *got, const int64_t *ids, size_t n, const uint8_t *ref, uint64_t first,
		   uint64_t count, int fmt)
{
	size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
	uint8_t want[512];
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t id = ids[i];
		if (id >= (int64_t)first && id < (int64_t)(first + count)) {
			if (fmt == EHT_LOOKUP_BF16)
				eht_engram_dequant_row(ref + (uint64_t)id * RB, (uint16_t *)(void *)want);
			else
				memcpy(want, ref + (uint64_t)id * RB, RB);
		} else {
			memset(want, 0, ob);
		}
		bad += memcmp(got + i * ob, want, ob) != 0;
	}
	return bad;
}

static void check_tp(const char *path, const uint8_t *ref, uint64_t rows, uint32_t nranks, const int64_t *ids,
		     size_t n, eht_dptr d_ids, eht_stream s)
{
	uint8_t *got = malloc(n * 512);
	eht_dptr d_out = 0;
	if (eht_dev_alloc(&d_out, n * 512)) {
		CHECK(0);
		free(got);
		return;
	}
	for (uint32_t r = 0; r < nranks; r++) {
		char wn[128], sn[128];
		struct eht_disk_opts o = {.size = sizeof(o), .weight = W_NAME(1, wn), .scale = S_NAME(1, sn), .rank = r,
					  .nranks = nranks, .prefetch_rows = 2000, .io_threads = 8};
		eht_table *t = NULL;
		uint64_t first, count;
		CHECK_RC(eht_rows_split(rows, r, nranks, &first, &count), 0);
		CHECK_RC(eht_disk_open(path, &o, &t), 0);
		for (int fmt = 0; t && fmt < 2; fmt++) {
			size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB;
			eht_lookup *lk = engine(t, fmt);
			if (!lk)
				continue;
			for (int mode = 0; mode < 3; mode++) { /* host ids, GPU ids, host ids + prefetch ticket */
				eht_disk_ticket *tk = NULL;
				if (mode == 2)
					CHECK_RC(eht_disk_prefetch(t, ids, EHT_ID_INT64, 0, n, 0, &tk), 0);
				eht_dev_memset8_async(d_out, 0xab, n * ob, s);
				uint64_t dead = 0, want_dead = 0;
				const void *pid = mode == 1 ? (const void *)(uintptr_t)d_ids : (const void *)ids;
				unsigned fl = EHT_LOOKUP_RUN_OUT_DEVICE |
					      (mode == 1 ? EHT_LOOKUP_RUN_IDS_DEVICE : EHT_LOOKUP_RUN_IDS_HOST);
				CHECK_RC(eht_lookup_run(lk, pid, EHT_ID_INT64, 0, n, (void *)(uintptr_t)d_out, s, fl, &dead), 0);
				CHECK_RC(eht_dev_d2h_async(got, d_out, n * ob, s), 0);
				CHECK_RC(eht_dev_stream_sync(s), 0);
				for (size_t i = 0; i < n; i++)
					want_dead += !(ids[i] >= (int64_t)first && ids[i] < (int64_t)(first + count));
				CHECK(dead == want_dead);
				int bad = compare(got, ids, n, ref, first, count, fmt);
				if (bad)
					fprintf(stderr, "%s rank %u/%u fmt %d mode %d: %d rows differ\n", path, r, nranks, fmt,
						mode, bad);
				CHECK(bad == 0);
				if (tk)
					CHECK_RC(eht_disk_release(tk), 0);
			}
			eht_lookup_destroy(lk);
		}
		CHECK_RC(eht_table_close(t), 0);
	}
	eht_dev_free(d_out);
	free(got);
}

static void check_truncated(eht_stream s)
{
	char *dir = t_tmpdir("gpu_disk_trunc"), file[600];
	snprintf(file, sizeof(file), "%s/model.safetensors", dir);
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 1, .rows = 5000, .seed = 9};
	CHECK_RC(eht_synth_checkpoint(dir, &so), 0);
	struct eht_disk_opts o = {.size = sizeof(o), .weight = "layers.1.engram.embed.weight",
				  .scale = "layers.1.engram.embed.scale", .cache_bytes = EHT_DISK_NO_CACHE};
	eht_table *t = NULL;
	CHECK_RC(eht_disk_open(dir, &o, &t), 0);
	eht_lookup *lk = t ? engine(t, EHT_LOOKUP_RAW) : NULL;
	eht_dptr d_out = 0;
	if (lk && !eht_dev_alloc(&d_out, 500 * RB)) {
		int64_t ids[500];
		for (int i = 0; i < 500; i++)
			ids[i] = 4999 - i;
		struct stat st;
		CHECK(stat(file, &st) == 0 && truncate(file, st.st_size / 2) == 0);
		usleep(3000);
		int rc = eht_lookup_run(lk, ids, EHT_ID_INT64, 0, 500, (void *)(uintptr_t)d_out, s,
					EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_DEVICE, NULL);
		CHECK(rc == -ESTALE || rc == -EIO);
		CHECK(strstr(eht_last_error(), file) != NULL && strstr(eht_last_error(), "offset") != NULL);
		eht_dev_stream_sync(s);
	}
	if (d_out)
		eht_dev_free(d_out);
	eht_lookup_destroy(lk);
	eht_table_close(t);
	t_rmtree(dir);
}

int main(void)
{
	if (!t_have_gpu())
		t_skip("no GPU");
	const char *fx = t_fixtures();
	if (eht_dev_use(0))
		t_skip("cannot use GPU 0");
	char single[1024], sharded[1024];
	snprintf(single, sizeof(single), "%s/safetensors/engram_single.safetensors", fx);
	snprintf(sharded, sizeof(sharded), "%s/safetensors/engram_sharded", fx);
	const char *paths[2] = {single, sharded};
	eht_stream s = NULL;
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), 0);
	uint64_t rs = 11;
	for (int p = 0; p < 2; p++) {
		uint64_t rows = 0, rb = 0;
		uint8_t *ref = ref_table(paths[p], 1, &rows, &rb);
		if (!ref)
			continue;
		int64_t *ids = malloc(N_IDS * sizeof(int64_t));
		ref_ids(ids, N_IDS, rows, &rs);
		eht_dptr d_ids = 0;
		CHECK_RC(eht_dev_alloc(&d_ids, N_IDS * sizeof(int64_t)), 0);
		CHECK_RC(eht_dev_h2d(d_ids, ids, N_IDS * sizeof(int64_t)), 0);
		/* From pageable memory the copy can return before its DMA lands; s does not wait for it. */
		CHECK_RC(eht_dev_sync(), 0);
		static const uint32_t tps[] = {1, 2, 4, 8};
		for (int k = 0; k < 4; k++)
			check_tp(paths[p], ref, rows, tps[k], ids, N_IDS, d_ids, s);
		eht_dev_free(d_ids);
		free(ids);
		free(ref);
	}
	check_truncated(s);
	eht_dev_stream_destroy(s);
	return t_done();
}
