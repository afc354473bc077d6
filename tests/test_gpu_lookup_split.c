/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_lookup_split.c: tables in vLLM's split layout (weights [rows, 256] then scales [rows, 8])
 * made GPU-readable by eht_table_wrap_split2: every strategy, raw and bf16, int32 and int64 ids (with an
 * offset), ids in host and GPU memory, dead ids, batches over max_batch, must give the packed table's
 * bytes bit for bit (and the CPU reference's), eager, captured in a CUDA graph and replayed, through GPU
 * dedup, a hot set and AUTO's split of the distinct rows. Storage: one allocation, two, memory the
 * engine pinned itself (cuMemHostAlloc, cuMemHostRegister: left registered at close), a cuMem
 * host-NUMA mapping, unaligned arrays (raw in place, bf16 refused by the in-place strategies), and a
 * read-only mapping of a file (packed too: registered read-only).
 * The errors: memory no GPU can register. Exit 77 without a GPU. */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpu/vmm.h"
#include "gpu_lookup_ref.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define ROWS 60000u
#define NMAX 20000

static struct t_lookup_ref g_ref; /* the packed rows */
static eht_table *g_packed;       /* ... wrapped and pinned for GPU 0 */

/* The packed rows as weights w [ROWS, 256] and scales s [ROWS, 8]. */
static void split_rows(uint8_t *w, uint8_t *s)
{
	for (uint64_t r = 0; r < ROWS; r++) {
		memcpy(w + r * 256, g_ref.rows + r * RB, 256);
		memcpy(s + r * 8, g_ref.rows + r * RB + 256, 8);
	}
}

static eht_table *wrap(const void *w, const void *s, const char *name, unsigned flags)
{
	struct eht_wrap_split_opts o = {.size = sizeof(o), .flags = flags, .device = 0, .name = name};
	eht_table *t = NULL;
	int rc = eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, &t);
	if (rc)
		fprintf(stderr, "%s: %s\n", name, eht_last_error());
	CHECK_RC(rc, 0);
	return t;
}

/* n ids through both engines: the same bytes, the reference's, the same dead count. */
static void same_run(const char *name, eht_lookup *sp, eht_lookup *pk, int strategy, int fmt, size_t n, int id64,
		     int64_t off, int gpu_ids, eht_stream s, uint64_t *rs)
{
	const size_t ob = fmt == EHT_LOOKUP_BF16 ? 512 : RB, isz = id64 ? 8 : 4;
	int64_t *abs_ids = malloc(n * 8 + 8);
	void *ids = malloc(n * 8 + 8);
	uint8_t *a = malloc(n * ob + 8), *b = malloc(n * ob + 8);
	eht_dptr d_ids = 0, d_a = 0, d_b = 0;
	if (!abs_ids || !ids || !a || !b || t_cu(eht_dev_alloc(&d_ids, n * 8 + 8)) ||
	    t_cu(eht_dev_alloc(&d_a, n * ob + 8)) || t_cu(eht_dev_alloc(&d_b, n * ob + 8)))
		goto out;
	t_lookup_ids(&g_ref, abs_ids, n, rs);
	for (size_t i = 0; i < n; i++) {
		if (id64)
			((int64_t *)ids)[i] = abs_ids[i] - off;
		else
			((int32_t *)ids)[i] = (int32_t)(abs_ids[i] - off);
	}
	if (gpu_ids && n)
		t_cu(eht_dev_h2d(d_ids, ids, n * isz));
	t_cu(eht_dev_memset8(d_a, 0xab, n * ob + 8));
	t_cu(eht_dev_memset8(d_b, 0xcd, n * ob + 8));
	t_cu(eht_dev_sync()); /* s is non-blocking: the poison and the ids first */
	const void *pid = gpu_ids ? (const void *)(uintptr_t)d_ids : ids;
	uint64_t da = 7, db = 9;
	unsigned fl = EHT_LOOKUP_RUN_STRATEGY(strategy);
	int ra = eht_lookup_run(sp, pid, id64 ? EHT_ID_INT64 : EHT_ID_INT32, off, n, (void *)(uintptr_t)d_a, s, fl, &da);
	if (ra)
		fprintf(stderr, "%s %s fmt %d n %zu: %s\n", name, eht_lookup_strategy_name(strategy), fmt, n, eht_last_error());
	int rb = eht_lookup_run(pk, pid, id64 ? EHT_ID_INT64 : EHT_ID_INT32, off, n, (void *)(uintptr_t)d_b, s, fl, &db);
	CHECK_RC(ra, 0);
	CHECK_RC(rb, 0);
	t_cu(eht_dev_stream_sync(s));
	t_cu(eht_dev_d2h(a, d_a, n * ob + 8));
	t_cu(eht_dev_d2h(b, d_b, n * ob + 8));
	uint64_t dead = 0;
	size_t bad = t_lookup_compare(&g_ref, d_a, abs_ids, n, fmt, &dead);
	bool same = memcmp(a, b, n * ob) == 0;
	if (bad || !same || da != db || da != dead)
		fprintf(stderr, "%s %s fmt %d n %zu id64 %d gpu-ids %d off %lld: %zu rows differ from the reference, "
			"%s the packed table's; dead %llu, packed %llu, want %llu\n", name,
			eht_lookup_strategy_name(strategy), fmt, n, id64, gpu_ids, (long long)off, bad,
			same ? "same as" : "NOT", (unsigned long long)da, (unsigned long long)db, (unsigned long long)dead);
	CHECK(bad == 0 && same);
	CHECK(da == db && da == dead);
	int past = 0; /* nothing written past the output */
	for (size_t i = 0; i < 8; i++)
		past += a[n * ob + i] != 0xab;
	CHECK(past == 0);
out:
	if (d_ids)
		eht_dev_free(d_ids);
	if (d_a)
		eht_dev_free(d_a);
	if (d_b)
		eht_dev_free(d_b);
	free(abs_ids);
	free(ids);
	free(a);
	free(b);
}

/* mode 0: plain engines; 1: GPU dedup with a hot set; 2: GPU dedup, AUTO splitting the distinct rows
 * between the GPU and the CPU (EHT_TEST_DEDUP_SHARE). */
static void check_engines(const char *name, eht_table *t, eht_stream s, uint64_t *rs)
{
	static const size_t ns[] = {1, 100, 6144, NMAX + 1};
	int64_t *hot = malloc(ROWS / 3 * sizeof(*hot));
	for (size_t i = 0; hot && i < ROWS / 3; i++)
		hot[i] = (int64_t)(i * 3);
	for (int mode = 0; mode < 3 && hot; mode++)
		for (int fmt = 0; fmt < 2; fmt++)
			for (int strategy = 0; strategy < eht_lookup_strategy_count(); strategy++) {
				if (mode == 2 && strategy != EHT_LOOKUP_AUTO)
					continue;
				struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strategy, .format = fmt, .device = 0,
							    .numa_node = -1, .threads = 4, .max_batch = NMAX,
							    .flags = mode ? EHT_LOOKUP_GPU_DEDUP : 0};
				if (mode == 2)
					t_setenv("EHT_TEST_DEDUP_SHARE", "0.4");
				eht_lookup *sp = NULL, *pk = NULL;
				CHECK_RC(eht_lookup_create(t, &o, &sp), 0);
				CHECK_RC(eht_lookup_create(g_packed, &o, &pk), 0);
				t_setenv("EHT_TEST_DEDUP_SHARE", NULL);
				if (sp && pk && mode == 1) {
					CHECK_RC(eht_lookup_set_hotset(sp, hot, ROWS / 3), 0);
					CHECK_RC(eht_lookup_set_hotset(pk, hot, ROWS / 3), 0);
				}
				char what[96];
				snprintf(what, sizeof(what), "%s/%s", name, mode == 0 ? "plain" : mode == 1 ? "hot" : "dedup-split");
				for (size_t k = 0; sp && pk && k < sizeof(ns) / sizeof(ns[0]); k++)
					for (int v = 0; v < 4; v++) {
						same_run(what, sp, pk, strategy, fmt, ns[k], v & 1, 0, v >> 1, s, rs);
						same_run(what, sp, pk, strategy, fmt, ns[k], v & 1, 1000, v >> 1, s, rs);
					}
				if (sp) /* eager GPU ids, then a CUDA graph captured once and replayed (with GPU dedup:
					 * of GPU ids only) */
					t_lookup_check_engine(&g_ref, what, sp, strategy, fmt, s, NMAX, mode != 0, rs);
				eht_lookup_destroy(sp);
				eht_lookup_destroy(pk);
			}
	free(hot);
	fprintf(stderr, "%s done\n", name);
}

static void check_info(eht_table *t)
{
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_table_get_info(t, &ti), 0);
	CHECK(ti.device == 0 && ti.device_ptr == 0 && ti.host == NULL && ti.row_bytes == RB && ti.rows == ROWS);
}

/* Storage the engine mapped for the GPU itself: pinned by cuMemHostAlloc, or registered by it. The table
 * uses it as it is and leaves it registered. */
static void check_engine_pinned(eht_stream s, uint64_t *rs)
{
	uint8_t *buf = NULL;
	if (!t_cu(eht_dev_host_alloc((void **)&buf, (size_t)ROWS * RB, EHT_DEV_HOST_MAPPED | EHT_DEV_HOST_PORTABLE))) {
		split_rows(buf, buf + (size_t)ROWS * 256);
		eht_table *t = wrap(buf, buf + (size_t)ROWS * 256, "split-host-alloc", 0);
		if (t) {
			check_info(t);
			check_engines("split-host-alloc", t, s, rs);
		}
		CHECK_RC(eht_table_close(t), 0);
		eht_dev_host_free(buf);
	}
	uint8_t *w = malloc((size_t)ROWS * 256), *sc = malloc((size_t)ROWS * 8);
	if (!w || !sc || t_cu(eht_dev_host_register(w, (size_t)ROWS * 256, EHT_DEV_HOST_MAPPED | EHT_DEV_HOST_PORTABLE))) {
		free(w);
		free(sc);
		return;
	}
	split_rows(w, sc);
	/* The weights registered by the engine, the scales not: one used as it is, the other pinned. */
	eht_table *t = wrap(w, sc, "split-registered", 0);
	if (t) {
		check_info(t);
		check_engines("split-registered", t, s, rs);
	}
	CHECK_RC(eht_table_close(t), 0);
	CHECK_RC(eht_dev_host_unregister(w), 0); /* still the engine's registration */
	eht_dptr d = 0;
	CHECK(eht_dev_host_mapped(sc, (size_t)ROWS * 8, &d) == -ENOENT); /* the table's own went with it */
	free(w);
	free(sc);
}

/* A cuMem host-NUMA mapping GPU 0 may read (vLLM's and eht's shared tables): read at its own address. */
static void check_vmm(eht_stream s, uint64_t *rs)
{
	int numa = 0;
	size_t gran = 0, bytes;
	if (!eht_dev_has(EHT_DEV_FEAT_VMM) || eht_dev_attr(0, EHT_DEV_ATTR_HOST_NUMA_ID, &numa) || numa < 0 ||
	    eht_vmm_granularity(numa, EHT_VMM_NONE, &gran)) {
		fprintf(stderr, "no host-NUMA allocations here (%s): that case skipped\n", eht_last_error());
		return;
	}
	bytes = ((size_t)ROWS * RB + gran - 1) / gran * gran;
	eht_vmm_mem h = 0;
	eht_dptr va = 0;
	if (t_cu(eht_vmm_create(&h, bytes, numa, EHT_VMM_NONE)))
		return;
	if (!t_cu(eht_vmm_reserve(&va, bytes, gran)) && !t_cu(eht_vmm_map(va, bytes, h)) &&
	    !t_cu(eht_vmm_access(va, bytes, 0, numa, true))) {
		uint8_t *buf = (uint8_t *)(uintptr_t)va;
		split_rows(buf, buf + (size_t)ROWS * 256);
		eht_dptr d = 0;
		CHECK(eht_dev_host_mapped(buf, (size_t)ROWS * RB, &d) == 0 && d == va);
		eht_table *t = wrap(buf, buf + (size_t)ROWS * 256, "split-host-numa", 0);
		if (t) {
			check_info(t);
			check_engines("split-host-numa", t, s, rs);
		}
		CHECK_RC(eht_table_close(t), 0);
		eht_vmm_unmap(va, bytes);
	}
	if (va)
		eht_vmm_free_va(va, bytes);
	eht_vmm_release(h);
}

/* 6,144 ids through sp and an engine of the same options over `ref`, 4 ways (int32 / int64 ids, in
 * host / GPU memory): the same bytes. Destroys sp. */
static void same_with(const char *name, eht_lookup *sp, eht_table *ref, const struct eht_lookup_opts *o, int strategy,
		      int fmt, eht_stream s, uint64_t *rs)
{
	eht_lookup *pk = NULL;
	CHECK_RC(eht_lookup_create(ref, o, &pk), 0);
	for (int v = 0; sp && pk && v < 4; v++)
		same_run(name, sp, pk, strategy, fmt, 6144, v & 1, 3, v >> 1, s, rs);
	eht_lookup_destroy(sp);
	eht_lookup_destroy(pk);
}

/* Arrays at odd addresses: raw rows in place with byte loads; bf16 refused by the in-place strategies
 * (naming why), served by AUTO (as HOST) and HOST. */
static void check_unaligned(eht_stream s, uint64_t *rs)
{
	uint8_t *buf = malloc((size_t)ROWS * RB + 1);
	if (!buf)
		return;
	split_rows(buf + 1, buf + 1 + (size_t)ROWS * 256);
	eht_table *t = wrap(buf + 1, buf + 1 + (size_t)ROWS * 256, "split-odd", 0);
	for (int strategy = 0; t && strategy < eht_lookup_strategy_count(); strategy++)
		for (int fmt = 0; fmt < 2; fmt++) {
			struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strategy, .format = fmt, .device = 0,
						    .numa_node = -1, .threads = 4, .max_batch = NMAX};
			eht_lookup *sp = NULL;
			int rc = eht_lookup_create(t, &o, &sp);
			if (fmt == EHT_LOOKUP_BF16 && (strategy == EHT_LOOKUP_DIRECT || strategy == EHT_LOOKUP_SORTED)) {
				CHECK_RC(rc, -EINVAL);
				CHECK(strstr(eht_last_error(), "split-odd") && strstr(eht_last_error(), "bf16"));
				continue;
			}
			CHECK_RC(rc, 0);
			same_with("split-odd", sp, g_packed, &o, strategy, fmt, s, rs);
		}
	CHECK_RC(eht_table_close(t), 0);
	free(buf);
}

/* A read-only mapping of a file (a reader's mmap of an engine's table file), packed and split: the
 * driver registers such memory only read-only, so the wrap must ask for that; then every strategy
 * reads it in place like the writable tables. */
static void check_readonly_file(eht_stream s, uint64_t *rs)
{
	const size_t n = (size_t)ROWS * RB;
	uint8_t *buf = malloc(2 * n);
	if (!buf)
		return;
	char *dir = t_tmpdir("split-ro"), path[600];
	snprintf(path, sizeof(path), "%s/rows", dir);
	memcpy(buf, g_ref.rows, n);
	split_rows(buf + n, buf + n + (size_t)ROWS * 256);
	CHECK_RC(t_write_file(path, buf, 2 * n), 0);
	free(buf);
	int fd = open(path, O_RDONLY);
	void *p = fd < 0 ? MAP_FAILED : mmap(NULL, 2 * n, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED);
	if (fd >= 0)
		close(fd);
	if (p == MAP_FAILED) {
		t_rmtree(dir);
		return;
	}
	const uint8_t *packed = p, *one = packed + n;
	eht_table *pt = NULL, *st = wrap(one, one + (size_t)ROWS * 256, "split-readonly-file", 0);
	CHECK_RC(eht_table_wrap((void *)(uintptr_t)packed, ROWS, RB, 0, "packed-readonly-file", &pt), 0);
	struct eht_table_info pi = {.size = sizeof(pi)};
	CHECK(pt && eht_table_get_info(pt, &pi) == 0 && pi.device == 0 && pi.device_ptr != 0);
	if (st)
		check_info(st);
	for (int strategy = 0; st && pt && pi.device_ptr && strategy < eht_lookup_strategy_count(); strategy++)
		for (int fmt = 0; fmt < 2; fmt++) {
			struct eht_lookup_opts o = {.size = sizeof(o), .strategy = strategy, .format = fmt, .device = 0,
						    .numa_node = -1, .threads = 4, .max_batch = NMAX};
			eht_lookup *sp = NULL;
			CHECK_RC(eht_lookup_create(st, &o, &sp), 0);
			same_with("readonly-file", sp, pt, &o, strategy, fmt, s, rs);
		}
	CHECK_RC(eht_table_close(st), 0);
	CHECK_RC(eht_table_close(pt), 0);
	munmap(p, 2 * n);
	t_rmtree(dir);
}

/* Memory no GPU can register (PROT_NONE): an error naming the table and the array; with
 * EHT_WRAP_SPLIT_CPU_FALLBACK a CPU-only table, which the in-place strategies refuse. */
static void check_errors(void)
{
	size_t n = (size_t)ROWS * RB;
	void *p = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	uint8_t *w = p, *s = w + (size_t)ROWS * 256;
	struct eht_wrap_split_opts o = {.size = sizeof(o), .device = 0, .name = "split-none"};
	eht_table *t = NULL;
	int rc = eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, &t);
	CHECK(rc < 0 && t == NULL);
	CHECK(strstr(eht_last_error(), "split-none") && strstr(eht_last_error(), "GPU 0"));
	o.flags = EHT_WRAP_SPLIT_CPU_FALLBACK;
	CHECK_RC(eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, &t), 0);
	struct eht_table_info ti = {.size = sizeof(ti)};
	CHECK_RC(eht_table_get_info(t, &ti), 0);
	CHECK(ti.device == -1 && ti.device_ptr == 0);
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = EHT_LOOKUP_DIRECT, .device = 0, .numa_node = -1};
	eht_lookup *lk = NULL;
	CHECK_RC(eht_lookup_create(t, &lo, &lk), -EINVAL);
	CHECK(strstr(eht_last_error(), "split-none") != NULL);
	CHECK_RC(eht_table_close(t), 0);
	o = (struct eht_wrap_split_opts){.size = sizeof(o), .device = 999, .name = "split-gpu999"};
	CHECK(eht_table_wrap_split2(w, 256, s, 8, ROWS, &o, &t) < 0 && strstr(eht_last_error(), "split-gpu999"));
	munmap(p, n);
}

int main(void)
{
	eht_stream s = t_gpu_test_stream();
	uint64_t rs = 4242;
	g_packed = t_lookup_ref_table(&g_ref, ROWS, &rs, "packed");
	uint8_t *rows = (uint8_t *)g_ref.rows;
	for (uint64_t r = 0; rows && r < ROWS; r += 97) { /* NaN weights, NaN / overflowing / tiny scales */
		rows[r * RB + 3] = 0x7f;
		rows[r * RB + 256] = 0xff;
		rows[r * RB + 257] = 250;
		rows[r * RB + 258] = 0;
	}
	uint8_t *one = malloc((size_t)ROWS * RB), *w = malloc((size_t)ROWS * 256), *sc = malloc((size_t)ROWS * 8);
	if (!g_packed || !rows || !s || !one || !w || !sc) {
		free(one);
		free(w);
		free(sc);
		return t_done();
	}
	split_rows(one, one + (size_t)ROWS * 256);
	split_rows(w, sc);
	eht_table *t1 = wrap(one, one + (size_t)ROWS * 256, "split-one", 0), *t2 = wrap(w, sc, "split-two", 0);
	if (t1 && t2) {
		check_info(t1);
		check_info(t2);
		check_engines("split-one", t1, s, &rs);
		check_engines("split-two", t2, s, &rs);
	}
	CHECK_RC(eht_table_close(t1), 0);
	CHECK_RC(eht_table_close(t2), 0);
	eht_dptr d = 0; /* the table's registrations went with it */
	CHECK(eht_dev_host_mapped(one, (size_t)ROWS * RB, &d) == -ENOENT);
	check_engine_pinned(s, &rs);
	check_vmm(s, &rs);
	check_unaligned(s, &rs);
	check_readonly_file(s, &rs);
	check_errors();
	eht_table_close(g_packed);
	eht_dev_stream_destroy(s);
	free((void *)g_ref.rows);
	free(one);
	free(w);
	free(sc);
	return t_done();
}
