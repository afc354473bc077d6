/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_disk.c: `eht bench disk`: lookups on a disk-tier table (an Engram-shaped checkpoint of at
 * least --file-gib GiB, written once and reused), cold (page cache dropped) and warm, at the prefill
 * and decode shapes; beside the drive's own 4 KiB random-read IOPS at high queue depth and the
 * in-memory HOST strategy on the same rows, both measured in the same run. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "os/numa.h"
#include "cuda/cu_driver.h"
#include "eht.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define MAX_SHAPES 8
#define WNAME "bench.engram.weight"
#define SNAME "bench.engram.scale"

static inline uint64_t mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Tensor bytes: a hash of each 8-byte word's position (salted per tensor). */
static int fill_bytes(void *ctx, uint64_t off, void *buf, size_t len)
{
	uint64_t salt = (uint64_t)(uintptr_t)ctx;
	uint8_t *p = buf;
	size_t i = 0;
	while (i < len && ((off + i) & 7))
		p[i] = (uint8_t)(mix(((off + i) >> 3) + salt) >> (((off + i) & 7) * 8)), i++;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix(((off + i) >> 3) + salt);
		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(mix(((off + i) >> 3) + salt) >> (((off + i) & 7) * 8));
	return 0;
}

/* Reuses path when it holds the two tensors with `rows` rows; else writes it. */
static int ensure_file(const char *path, uint64_t rows, FILE *info)
{
	eht_ckpt *ck = NULL;
	if (eht_ckpt_open(path, 0, &ck) == 0) {
		struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
		int ok = eht_ckpt_find(ck, WNAME, &w) == 0 && eht_ckpt_find(ck, SNAME, &s) == 0 && w.ndim == 2 &&
			 s.ndim == 2 && w.shape[0] == rows && w.shape[1] == 256 && s.shape[0] == rows && s.shape[1] == 8;
		eht_ckpt_close(ck);
		if (ok) {
			fprintf(info, "reusing %s\n", path);
			return 0;
		}
	}
	uint64_t ws[2] = {rows, 256}, ss[2] = {rows, 8};
	struct eht_st_write_tensor t[2] = {
		{.name = WNAME, .dtype = EHT_DTYPE_F8_E4M3, .ndim = 2, .shape = ws, .fill = fill_bytes, .ctx = (void *)1},
		{.name = SNAME, .dtype = EHT_DTYPE_F8_E8M0, .ndim = 2, .shape = ss, .fill = fill_bytes, .ctx = (void *)2},
	};
	double t0 = cli_now_s();
	int rc = eht_st_write(path, t, 2, NULL, 0);
	if (!rc)
		fprintf(info, "wrote %s: %.2f GiB in %.1f s\n", path, (double)rows * RB / (1 << 30), cli_now_s() - t0);
	return rc;
}

/* ------------------------------------------------------------------- drive IOPS */
struct iops_job {
	int fd;
	uint64_t blocks;
	double until;
	atomic_uint_fast64_t done;
	atomic_int err;
	uint64_t seed;
};

static void *iops_thread(void *v)
{
	struct iops_job *j = v;
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, 4096))
		return NULL;
	uint64_t x = mix(atomic_fetch_add(&j->done, 0) + (uint64_t)(uintptr_t)&buf), n = 0;
	while (cli_now_s() < j->until) {
		for (int k = 0; k < 32; k++) {
			x = mix(x);
			if (pread(j->fd, buf, 4096, (off_t)((x % j->blocks) * 4096)) != 4096) {
				atomic_store(&j->err, errno ? errno : EIO);
				goto out;
			}
			n++;
		}
	}
out:
	atomic_fetch_add(&j->done, n);
	free(buf);
	return NULL;
}

/* 4 KiB O_DIRECT random reads from nthreads threads for `seconds`; IOPS or 0. */
static double drive_iops(const char *path, unsigned nthreads, double seconds, uint64_t bytes, char *note, size_t nl)
{
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		snprintf(note, nl, "O_DIRECT open failed (%s): IOPS not measured", strerror(errno));
		return 0;
	}
	struct iops_job j = {.fd = fd, .blocks = bytes / 4096};
	atomic_init(&j.done, 0);
	atomic_init(&j.err, 0);
	pthread_t *th = calloc(nthreads, sizeof(*th));
	unsigned started = 0;
	double t0 = cli_now_s();
	j.until = t0 + seconds;
	for (unsigned i = 0; th && i < nthreads; i++)
		if (pthread_create(&th[i], NULL, iops_thread, &j) == 0)
			started++;
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	double el = cli_now_s() - t0;
	free(th);
	close(fd);
	if (atomic_load(&j.err)) {
		snprintf(note, nl, "O_DIRECT reads failed (%s): IOPS not measured", strerror(atomic_load(&j.err)));
		return 0;
	}
	snprintf(note, nl, "%u threads, %.1f s", started, el);
	return (double)atomic_load(&j.done) / el;
}

/* ------------------------------------------------------------------- main */
static void usage(void)
{
	fprintf(stderr, "usage: eht bench disk [--file-gib G] [--dir D] [--ids N,N...] [--reps R] [--threads T]\n"
			"                      [--io-threads Q] [--iops-threads Q] [--cache-mib M] [--no-memory] [--cpu]\n"
			"                      [--device D] [--json]\n");
}

struct shape_res {
	size_t n;
	double cold_ms, cold_pf_ms, warm_ms, mem_ms;
	uint64_t distinct;
	int ok;
	char err[200];
};

int bench_disk(int argc, char **argv)
{
	double gib = 0;
	const char *dir = getenv("EHT_BENCH_DIR") ? getenv("EHT_BENCH_DIR") : "/var/tmp/eht-bench-disk";
	size_t shapes[MAX_SHAPES] = {196608, 6144};
	int nshapes = 2, reps = 10, json = 0, cpu = 0, dev = 0, no_mem = 0;
	unsigned threads = 0, io_threads = 64, iops_threads = 64;
	double cache_mib = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json"))
			json = 1;
		else if (!strcmp(a, "--cpu"))
			cpu = 1;
		else if (!strcmp(a, "--no-memory"))
			no_mem = 1;
		else if (!strcmp(a, "--file-gib") && v)
			gib = atof(v), i++;
		else if (!strcmp(a, "--dir") && v)
			dir = v, i++;
		else if (!strcmp(a, "--reps") && v)
			reps = atoi(v), i++;
		else if (!strcmp(a, "--threads") && v)
			threads = (unsigned)atoi(v), i++;
		else if (!strcmp(a, "--io-threads") && v)
			io_threads = (unsigned)atoi(v), i++;
		else if (!strcmp(a, "--iops-threads") && v)
			iops_threads = (unsigned)atoi(v), i++;
		else if (!strcmp(a, "--cache-mib") && v)
			cache_mib = atof(v), i++;
		else if (!strcmp(a, "--device") && v)
			dev = atoi(v), i++;
		else if (!strcmp(a, "--ids") && v) {
			nshapes = 0;
			for (char *s = argv[++i], *end; *s && nshapes < MAX_SHAPES; s = *end ? end + 1 : end) {
				long long n = strtoll(s, &end, 10);
				if (n <= 0 || n >= (1ll << 31) || (*end && *end != ',')) {
					usage();
					return 2;
				}
				shapes[nshapes++] = (size_t)n;
			}
		} else {
			usage();
			return 2;
		}
	}
	if (reps < 1 || reps > 1000 || nshapes == 0 || gib < 0 || io_threads == 0 || iops_threads == 0 ||
	    iops_threads > 1024) {
		usage();
		return 2;
	}
	FILE *info = json ? stderr : stdout;
	int gpu = !cpu && eht_cu_device_count() > dev;
	if (!gpu)
		fprintf(info, "no GPU%s: rows gathered into host memory\n", cpu ? " (--cpu)" : "");
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "eht bench disk: mkdir %s: %s\n", dir, strerror(errno));
		return 1;
	}
	char path[4200];
	snprintf(path, sizeof(path), "%s/eht-bench-disk.safetensors", dir);

	/* File size: 32 GiB where the disk has room (the file's own bytes count as room when reused). */
	struct statvfs vfs;
	struct stat fst;
	uint64_t have = stat(path, &fst) == 0 ? (uint64_t)fst.st_size : 0;
	uint64_t room = statvfs(dir, &vfs) == 0 ? (uint64_t)vfs.f_bavail * vfs.f_frsize + have : 0;
	if (gib == 0) {
		gib = 32;
		if (room && room < (uint64_t)(34ull << 30)) {
			gib = floor((double)room * 0.8 / (1 << 30) * 4) / 4;
			if (gib < 0.25)
				gib = 0.25;
			fprintf(info, "only %.1f GiB free in %s: file scaled down to %.2f GiB (the target is 32)\n",
				(double)room / (1 << 30), dir, gib);
		}
	}
	uint64_t rows = (uint64_t)(gib * (double)(1ull << 30)) / RB;
	if (rows < 1024 || rows > INT32_MAX) {
		fprintf(stderr, "eht bench disk: %.2f GiB gives %llu rows (1024..2^31-1 allowed)\n", gib, (unsigned long long)rows);
		return 2;
	}
	if (room && (uint64_t)(gib * (1ull << 30)) > room)
		fprintf(stderr, "eht bench disk: warning: %.2f GiB file with %.1f GiB free\n", gib, (double)room / (1 << 30));

	int rc = 1;
	eht_table *t = NULL, *mt = NULL;
	eht_lookup *lk = NULL, *mlk = NULL;
	uint8_t *mem = NULL, *hout = NULL;
	int32_t *ids = NULL;
	double *times = NULL;
	CUdeviceptr dout = 0;
	struct shape_res res[MAX_SHAPES];
	memset(res, 0, sizeof(res));
	size_t maxn = 0;
	for (int i = 0; i < nshapes; i++)
		maxn = shapes[i] > maxn ? shapes[i] : maxn;

	if (ensure_file(path, rows, info)) {
		cli_fail("bench disk", NULL);
		goto out;
	}
	struct eht_disk_opts dop = {.size = sizeof(dop), .weight = WNAME, .scale = SNAME, .io_threads = io_threads,
				    .prefetch_rows = maxn, .prefetch_slots = 1,
				    .cache_bytes = cache_mib > 0 ? (uint64_t)(cache_mib * (1 << 20)) : EHT_DISK_NO_CACHE};
	if (eht_disk_open(path, &dop, &t)) {
		cli_fail("bench disk", NULL);
		goto out;
	}
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = EHT_LOOKUP_HOST, .device = gpu ? dev : -1,
				     .numa_node = -1, .threads = threads, .max_batch = maxn,
				     .flags = gpu ? 0 : EHT_LOOKUP_CPU_ONLY};
	if (eht_lookup_create(t, &lo, &lk)) {
		cli_fail("bench disk", NULL);
		goto out;
	}
	if (gpu) {
		if (EHT_CU_CHECK(cuMemAlloc(&dout, maxn * RB))) {
			cli_fail("bench disk", NULL);
			goto out;
		}
	} else if (!(hout = malloc(maxn * RB))) {
		fprintf(stderr, "eht bench disk: out of memory\n");
		goto out;
	}
	void *pout = gpu ? (void *)(uintptr_t)dout : hout;
	const unsigned run_flags = EHT_LOOKUP_RUN_IDS_HOST | (gpu ? EHT_LOOKUP_RUN_OUT_DEVICE : EHT_LOOKUP_RUN_OUT_HOST);
	const int batches = reps + 4;
	ids = malloc((size_t)batches * maxn * sizeof(*ids));
	times = malloc((size_t)reps * sizeof(double));
	if (!ids || !times) {
		fprintf(stderr, "eht bench disk: out of memory for ids\n");
		goto out;
	}
	uint64_t x = 0x853c49e6748fea9bull;
	for (size_t i = 0; i < (size_t)batches * maxn; i++)
		ids[i] = (int32_t)((x = mix(x)) % rows);

	/* The drive's own ceiling, measured first (the page cache does not matter to O_DIRECT). */
	char inote[160];
	double iops = drive_iops(path, iops_threads, 3.0, rows * 256, inote, sizeof(inote));
	fprintf(info, "drive: 4 KiB O_DIRECT random reads: %.1f k IOPS (%s)\n", iops / 1e3, inote);

#define RUN(lkp, pid, n) (eht_lookup_run(lkp, pid, EHT_ID_INT32, 0, n, pout, NULL, run_flags, NULL) || \
			  (gpu && EHT_CU_CHECK(cuStreamSynchronize(NULL))))
	/* Cold: page cache dropped before each shape; once through the lookup's own pool (its threads are
	 * the queue depth), once with a prefetch ticket (io_threads readers) then the lookup. */
	for (int k = 0; k < nshapes; k++) {
		struct shape_res *r = &res[k];
		r->n = shapes[k];
		const int32_t *a = ids + (size_t)k * maxn, *b = ids + (size_t)(k + 2) * maxn;
		struct eht_disk_stats s0 = {.size = sizeof(s0)}, s1 = {.size = sizeof(s1)};
		if (eht_disk_drop_cache(t) != 0 || eht_disk_stats(t, &s0) != 0) {
			snprintf(r->err, sizeof(r->err), "%s", eht_last_error());
			continue;
		}
		double t0 = cli_now_s();
		if (RUN(lk, a, r->n)) {
			snprintf(r->err, sizeof(r->err), "%s", eht_last_error());
			continue;
		}
		r->cold_ms = (cli_now_s() - t0) * 1e3;
		if (eht_disk_stats(t, &s1) != 0 || eht_disk_drop_cache(t) != 0) {
			snprintf(r->err, sizeof(r->err), "%s", eht_last_error());
			continue;
		}
		r->distinct = s1.rows_read - s0.rows_read;
		eht_disk_ticket *tk = NULL;
		t0 = cli_now_s();
		if (eht_disk_prefetch(t, b, EHT_ID_INT32, 0, r->n, 0, &tk) || eht_disk_wait(tk) || RUN(lk, b, r->n)) {
			snprintf(r->err, sizeof(r->err), "%s", eht_last_error());
			eht_disk_release(tk);
			continue;
		}
		r->cold_pf_ms = (cli_now_s() - t0) * 1e3;
		eht_disk_release(tk);
		r->ok = 1;
	}

	/* Warm: read the whole file once (and pack the in-memory copy for HOST from the same reads). */
	uint64_t avail = eht_mem_available();
	if (!no_mem && avail && rows * RB + (rows * RB) + (2ull << 30) > avail) {
		fprintf(info, "in-memory comparison skipped: %.1f GiB available, %.1f GiB needed beside the page cache\n",
			(double)avail / (1 << 30), 2.0 * (double)rows * RB / (1 << 30));
		no_mem = 1;
	}
	{
		double t0 = cli_now_s();
		eht_ckpt *ck = NULL;
		struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
		if (!no_mem && !(mem = malloc(rows * RB))) {
			fprintf(info, "in-memory comparison skipped: out of memory\n");
			no_mem = 1;
		}
		if (eht_ckpt_open(path, 0, &ck) || eht_ckpt_find(ck, WNAME, &w) || eht_ckpt_find(ck, SNAME, &s)) {
			cli_fail("bench disk", NULL);
			eht_ckpt_close(ck);
			goto out;
		}
		const uint8_t *wp = w.data, *sp = s.data;
		uint64_t sum = 0;
		for (uint64_t r = 0; r < rows; r++) {
			if (mem) {
				memcpy(mem + r * RB, wp + r * 256, 256);
				memcpy(mem + r * RB + 256, sp + r * 8, 8);
			} else {
				for (int o = 0; o < 256; o += 4096 / 256 * 16) /* one byte per page is enough */
					sum += wp[r * 256 + (uint64_t)o];
				sum += sp[r * 8];
			}
		}
		eht_ckpt_close(ck);
		fprintf(info, "page cache warmed%s in %.1f s%s\n", mem ? " and in-memory copy packed" : "", cli_now_s() - t0,
			sum == 1 ? " " : "");
	}
	{
		/* Every row once through the disk table itself, so its mapping has every page entry (the cold
		 * runs' drop removed them): steady state, as in a server after its first steps. */
		double t0 = cli_now_s();
		int32_t *seq = malloc(maxn * sizeof(*seq));
		for (uint64_t b = 0; seq && b < rows; b += maxn) {
			size_t n = rows - b < maxn ? (size_t)(rows - b) : maxn;
			for (size_t i = 0; i < n; i++)
				seq[i] = (int32_t)(b + i);
			if (RUN(lk, seq, n))
				break;
		}
		free(seq);
		fprintf(info, "disk table's mapping populated in %.1f s\n", cli_now_s() - t0);
	}
	for (int k = 0; k < nshapes; k++) {
		struct shape_res *r = &res[k];
		if (!r->ok)
			continue;
		for (int rep = -2; rep < reps; rep++) {
			const int32_t *a = ids + (size_t)(rep + 4) * maxn;
			double t0 = cli_now_s();
			if (RUN(lk, a, r->n)) {
				snprintf(r->err, sizeof(r->err), "%s", eht_last_error());
				r->ok = 0;
				break;
			}
			if (rep >= 0)
				times[rep] = cli_now_s() - t0;
		}
		if (!r->ok)
			continue;
		qsort(times, (size_t)reps, sizeof(double), cli_cmp_double);
		r->warm_ms = times[reps / 2] * 1e3;
	}
	if (mem) {
		if (eht_table_wrap(mem, rows, RB, gpu ? dev : -1, "bench-memory", &mt) || eht_lookup_create(mt, &lo, &mlk)) {
			fprintf(info, "in-memory comparison failed: %s\n", eht_last_error());
		} else {
			for (int k = 0; k < nshapes; k++) {
				struct shape_res *r = &res[k];
				int bad = 0;
				for (int rep = -2; rep < reps && !bad; rep++) {
					const int32_t *a = ids + (size_t)(rep + 4) * maxn;
					double t0 = cli_now_s();
					bad = RUN(mlk, a, r->n);
					if (rep >= 0)
						times[rep] = cli_now_s() - t0;
				}
				if (!bad) {
					qsort(times, (size_t)reps, sizeof(double), cli_cmp_double);
					r->mem_ms = times[reps / 2] * 1e3;
				}
			}
		}
	}
#undef RUN

	/* Report. */
	if (json)
		printf("{\"file\": \"%s\", \"file_gib\": %.3f, \"rows\": %llu, \"row_bytes\": %d, \"gpu\": %s, "
		       "\"drive_iops_4k\": %.0f, \"io_threads\": %u, \"reps\": %d, \"results\": [",
		       path, gib, (unsigned long long)rows, RB, gpu ? "true" : "false", iops, io_threads, reps);
	else
		printf("%8s %9s %9s %7s %9s %7s %9s %9s %8s\n", "ids", "distinct", "cold ms", "of IOPS", "cold+pf", "of IOPS",
		       "warm ms", "memory", "warm/mem");
	for (int k = 0; k < nshapes; k++) {
		struct shape_res *r = &res[k];
		double frac = iops > 0 && r->cold_ms > 0 ? (double)r->distinct / (r->cold_ms * 1e-3) / iops : 0;
		double frac_pf = iops > 0 && r->cold_pf_ms > 0 ? (double)r->distinct / (r->cold_pf_ms * 1e-3) / iops : 0;
		double ratio = r->mem_ms > 0 ? r->warm_ms / r->mem_ms : 0;
		if (json) {
			printf("%s{\"ids\": %zu, \"ok\": %s", k ? ", " : "", r->n, r->ok ? "true" : "false");
			if (r->ok)
				printf(", \"distinct_rows\": %llu, \"cold_ms\": %.3f, \"cold_fraction_of_iops\": %.3f, "
				       "\"cold_prefetch_ms\": %.3f, \"cold_prefetch_fraction_of_iops\": %.3f, \"warm_ms\": %.4f, "
				       "\"memory_host_ms\": %.4f, \"warm_vs_memory\": %.3f",
				       (unsigned long long)r->distinct, r->cold_ms, frac, r->cold_pf_ms, frac_pf, r->warm_ms,
				       r->mem_ms, ratio);
			else
				printf(", \"error\": \"%s\"", r->err);
			printf("}");
		} else if (!r->ok) {
			printf("%8zu  -- %s\n", r->n, r->err);
		} else {
			char m[16] = "-", q[16] = "-";
			if (r->mem_ms > 0)
				snprintf(m, sizeof(m), "%.3f", r->mem_ms), snprintf(q, sizeof(q), "%.2fx", ratio);
			printf("%8zu %9llu %9.1f %6.0f%% %9.1f %6.0f%% %9.3f %9s %8s\n", r->n, (unsigned long long)r->distinct,
			       r->cold_ms, 100 * frac, r->cold_pf_ms, 100 * frac_pf, r->warm_ms, m, q);
		}
	}
	if (json)
		printf("]}\n");
	else
		printf("(cold: page cache dropped, one step; \"of IOPS\": distinct rows per second over the drive's 4 KiB "
		       "IOPS; cold+pf: prefetch ticket with %u readers, then the lookup; warm: median of %d, whole file in "
		       "the page cache; memory: HOST strategy on an in-memory copy; goal warm/mem <= 1.5x)\n",
		       io_threads, reps);
	rc = 0;
out:
	eht_lookup_destroy(lk);
	eht_lookup_destroy(mlk);
	eht_table_close(mt);
	eht_table_close(t);
	if (dout)
		eht_cu.cuMemFree(dout);
	free(hout);
	free(mem);
	free(ids);
	free(times);
	return rc;
}
