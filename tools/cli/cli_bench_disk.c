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

#include <jansson.h>

#include "cli.h"
#include "cli_bench_disk_mem.h"
#include "os/numa.h"
#include "gpu/dev.h"
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

struct fill_ctx {
	uint64_t salt, base; /* base: bytes of the tensors written before this one */
	struct cli_progress *progress;
};

/* Tensor bytes: a hash of each 8-byte word's position (salted per tensor). */
static int fill_bytes(void *ctx, uint64_t off, void *buf, size_t len)
{
	const struct fill_ctx *fc = ctx;
	uint64_t salt = fc->salt;
	cli_progress_update(fc->progress, fc->base + off + len);
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

/* Reuses path when it holds the two tensors with `rows` rows (*created 0); else writes it (*created 1). */
static int ensure_file(const char *path, uint64_t rows, FILE *info, int *created)
{
	*created = 0;
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
	struct cli_progress pr;
	cli_progress_init(&pr, "eht bench disk: writing the test file", rows * RB);
	/* the writer lays tensors out by dtype, descending: E8M0 (scale) first */
	struct fill_ctx wc = {.salt = 1, .base = rows * 8, .progress = &pr}, sc = {.salt = 2, .progress = &pr};
	struct eht_st_write_tensor t[2] = {
		{.name = WNAME, .dtype = EHT_DTYPE_F8_E4M3, .ndim = 2, .shape = ws, .fill = fill_bytes, .ctx = &wc},
		{.name = SNAME, .dtype = EHT_DTYPE_F8_E8M0, .ndim = 2, .shape = ss, .fill = fill_bytes, .ctx = &sc},
	};
	double t0 = cli_now_s();
	*created = 1; /* a failed write leaves nothing behind (path.tmp and a rename) */
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
static void usage(FILE *f)
{
	fprintf(f, "usage: eht bench disk [--file-gib G] [--dir D] [--ids N,N...] [--reps R] [--threads T]\n"
		   "                      [--io-threads Q] [--iops-threads Q] [--cache-mib M] [--no-memory] [--cpu]\n"
		   "                      [--device D] [--keep] [--json]\n"
		   "       eht bench disk --mem-limit G [--workload uniform|text:FILE] [--steps N] [--ids N]\n"
		   "                      [--hotset K] [--file-gib G] [--dir D] [--threads T] [--cache-mib 0] [--cpu]\n"
		   "                      [--device D] [--keep] [--json]\n"
		   "Lookups on a disk-tier table, cold and warm, beside the drive's 4 KiB random-read IOPS and the\n"
		   "in-memory HOST strategy. The test file (default 32 GiB, less when the disk is short) is written\n"
		   "to --dir (default $EHT_BENCH_DIR, else /var/tmp/eht-bench-disk) and removed at the end unless\n"
		   "--keep (a kept file of the same size is reused).\n"
		   "--mem-limit G runs --steps steps (default 300) of --workload (default uniform) with the first of\n"
		   "--ids (default 6144) ids each under a memory limit of G GiB: a new cgroup (v2 memory.max, else v1\n"
		   "memory.limit_in_bytes), else a transient systemd scope; where none can be made, a table larger\n"
		   "than free memory is the limit, else the run says it is unlimited. Rows go to GPU memory (HOST\n"
		   "strategy) where there is a GPU; --hotset K gives the engine a GPU hot set of the K most frequent\n"
		   "rows of the text's second half (steps come from the first). Reports steady-state step times,\n"
		   "hit rates and bytes read per step. The hot-row cache takes 1/16 of G (--cache-mib 0: none).\n");
}

static int parse_list(const char *arg, size_t *shapes, int *nshapes)
{
	*nshapes = 0;
	char *end = NULL;
	for (const char *s = arg; *s && *nshapes < MAX_SHAPES; s = *end ? end + 1 : end) {
		long long n = strtoll(s, &end, 10);
		if (n <= 0 || n >= (1ll << 31) || (*end && *end != ','))
			return cli_usage_error("bench disk", "--ids takes counts like 196608,6144 (each 1..2^31-1)");
		shapes[(*nshapes)++] = (size_t)n;
	}
	return *nshapes ? 0 : cli_usage_error("bench disk", "--ids is empty");
}

struct shape_res {
	size_t n;
	double cold_ms, cold_pf_ms, warm_ms, mem_ms;
	uint64_t distinct;
	uint64_t cold_resident, cold_uncached, cold_bytes; /* the default read's split in the cold step */
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
	double cache_mib = 0, mem_limit = 0;
	const char *workload = "uniform";
	int steps = 300, cache_set = 0, ids_set = 0;
	long long hotset = 0;
	static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
						 {"cpu", no_argument, NULL, 'C'},
						 {"no-memory", no_argument, NULL, 'M'},
						 {"keep", no_argument, NULL, 'K'},
						 {"file-gib", required_argument, NULL, 'g'},
						 {"dir", required_argument, NULL, 'D'},
						 {"reps", required_argument, NULL, 'r'},
						 {"threads", required_argument, NULL, 't'},
						 {"io-threads", required_argument, NULL, 'q'},
						 {"iops-threads", required_argument, NULL, 'Q'},
						 {"cache-mib", required_argument, NULL, 'c'},
						 {"device", required_argument, NULL, 'd'},
						 {"ids", required_argument, NULL, 'i'},
						 {"mem-limit", required_argument, NULL, 'L'},
						 {"workload", required_argument, NULL, 'W'},
						 {"steps", required_argument, NULL, 'S'},
						 {"hotset", required_argument, NULL, 'H'},
						 {"help", no_argument, NULL, 'h'},
						 {0}};
	int c, bad = 0, keep = 0, v = 0;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "bench disk", "h", longopts)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'C':
			cpu = 1;
			break;
		case 'M':
			no_mem = 1;
			break;
		case 'K':
			keep = 1;
			break;
		case 'g':
			/* 0 means "size it for me" only when not given: an explicit 0 is an error. */
			bad = cli_double("bench disk", "--file-gib", optarg, &gib);
			if (!bad && !(gib > 0)) {
				fprintf(stderr, "eht bench disk: --file-gib %s: give a size above 0 GiB\n", optarg);
				return 2;
			}
			break;
		case 'D':
			dir = optarg;
			break;
		case 'r':
			bad = cli_int("bench disk", "--reps", optarg, &reps);
			break;
		case 't':
			bad = cli_int("bench disk", "--threads", optarg, &v) || v < 0;
			threads = (unsigned)v;
			break;
		case 'q':
			bad = cli_int("bench disk", "--io-threads", optarg, &v) || v < 0;
			io_threads = (unsigned)v;
			break;
		case 'Q':
			bad = cli_int("bench disk", "--iops-threads", optarg, &v) || v < 0;
			iops_threads = (unsigned)v;
			break;
		case 'c':
			bad = cli_double("bench disk", "--cache-mib", optarg, &cache_mib);
			cache_set = 1;
			break;
		case 'd':
			bad = cli_int("bench disk", "--device", optarg, &dev);
			break;
		case 'i':
			bad = parse_list(optarg, shapes, &nshapes);
			ids_set = 1;
			break;
		case 'L':
			bad = cli_double("bench disk", "--mem-limit", optarg, &mem_limit);
			if (!bad && !(mem_limit > 0)) {
				fprintf(stderr, "eht bench disk: --mem-limit %s: give a size above 0 GiB\n", optarg);
				return 2;
			}
			break;
		case 'W':
			workload = optarg;
			break;
		case 'S':
			bad = cli_int("bench disk", "--steps", optarg, &steps);
			if (!bad && (steps < 5 || steps > 100000)) {
				fprintf(stderr, "eht bench disk: --steps %s: 5..100000\n", optarg);
				return 2;
			}
			break;
		case 'H': {
			char *end = NULL;
			hotset = strtoll(optarg, &end, 10);
			if (!*optarg || *end || hotset < 1 || hotset >= (1ll << 31)) {
				fprintf(stderr, "eht bench disk: --hotset %s: a row count 1..2^31-1\n", optarg);
				return 2;
			}
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			return 2;
		}
		if (bad) {
			if (v < 0)
				fprintf(stderr, "eht bench disk: thread counts are >= 0\n");
			return 2;
		}
	}
	if (optind < argc)
		return cli_usage_error("bench disk", "unexpected argument");
	if (reps < 1 || reps > 1000 || nshapes == 0 || gib < 0 || io_threads == 0 || iops_threads == 0 ||
	    iops_threads > 1024)
		return cli_usage_error("bench disk", "--reps 1..1000, --file-gib >= 0, --io-threads >= 1, "
						     "--iops-threads 1..1024");
	FILE *info = json ? stderr : stdout;
	int gpu = !cpu && eht_dev_count() > dev;
	if (!gpu)
		fprintf(info, "no GPU%s: rows gathered into host memory\n", cpu ? " (--cpu)" : "");
	int made_dir = mkdir(dir, 0755) == 0;
	if (!made_dir && errno != EEXIST) {
		char msg[600];
		snprintf(msg, sizeof(msg), "mkdir %s: %s", dir, strerror(errno));
		return cli_error("bench disk", json, msg);
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
		if (made_dir)
			rmdir(dir);
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
	eht_dptr dout = 0;
	struct shape_res res[MAX_SHAPES];
	memset(res, 0, sizeof(res));
	size_t maxn = 0;
	for (int i = 0; i < nshapes; i++)
		maxn = shapes[i] > maxn ? shapes[i] : maxn;

	int created = 0;
	uint32_t split_mode = 0;
	if (ensure_file(path, rows, info, &created)) {
		cli_error("bench disk", json, NULL);
		goto out;
	}
	if (mem_limit > 0) {
		struct bench_disk_mem_args ma = {.path = path, .rows = rows, .mem_limit_gib = mem_limit,
						 .workload = workload, .ids = ids_set ? shapes[0] : 6144, .steps = steps,
						 .threads = threads, .no_cache = cache_set && cache_mib <= 0, .json = json,
						 .gpu = gpu, .device = dev, .hotset = (size_t)hotset};
		rc = bench_disk_mem(&ma);
		goto out;
	}
	struct eht_disk_opts dop = {.size = sizeof(dop), .weight = WNAME, .scale = SNAME, .io_threads = io_threads,
				    .prefetch_rows = maxn, .prefetch_slots = 1,
				    .cache_bytes = cache_mib > 0 ? (uint64_t)(cache_mib * (1 << 20)) : EHT_DISK_NO_CACHE};
	if (eht_disk_open(path, &dop, &t)) {
		cli_error("bench disk", json, NULL);
		goto out;
	}
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = EHT_LOOKUP_HOST, .device = gpu ? dev : -1,
				     .numa_node = -1, .threads = threads, .max_batch = maxn,
				     .flags = gpu ? 0 : EHT_LOOKUP_CPU_ONLY};
	if (eht_lookup_create(t, &lo, &lk)) {
		cli_error("bench disk", json, NULL);
		goto out;
	}
	if (gpu) {
		if (eht_dev_alloc(&dout, maxn * RB)) {
			cli_error("bench disk", json, NULL);
			goto out;
		}
	} else if (!(hout = malloc(maxn * RB))) {
		cli_error("bench disk", json, "out of memory");
		goto out;
	}
	void *pout = gpu ? (void *)(uintptr_t)dout : hout;
	const unsigned run_flags = EHT_LOOKUP_RUN_IDS_HOST | (gpu ? EHT_LOOKUP_RUN_OUT_DEVICE : EHT_LOOKUP_RUN_OUT_HOST);
	const int batches = reps + 4;
	ids = malloc((size_t)batches * maxn * sizeof(*ids));
	times = malloc((size_t)reps * sizeof(double));
	if (!ids || !times) {
		cli_error("bench disk", json, "out of memory for ids");
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
			  (gpu && eht_dev_stream_sync(NULL)))
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
		r->cold_resident = s1.resident_rows - s0.resident_rows;
		r->cold_uncached = s1.uncached_rows - s0.uncached_rows;
		r->cold_bytes = s1.uncached_bytes - s0.uncached_bytes;
		split_mode = s1.split_mode;
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
			cli_error("bench disk", json, NULL);
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
	json_t *report = NULL, *arr = NULL;
	if (json) {
		report = cli_report_new("disk");
		arr = json_array();
		json_object_update_new(report, json_pack("{s:s, s:f, s:I, s:i, s:b, s:o, s:i, s:i}", "file", path,
							 "file_gib", gib, "rows", (json_int_t)rows, "row_bytes", RB,
							 "gpu", gpu, "drive_iops_4k", cli_real_or_null(iops, iops > 0),
							 "io_threads", (int)io_threads, "reps", reps));
	} else {
		printf("%8s %9s %9s %7s %8s %8s %9s %7s %9s %9s %8s\n", "ids", "distinct", "cold ms", "of IOPS", "uncached", "pg/IOPS",
		       "cold+pf", "of IOPS", "warm ms", "memory", "warm/mem");
	}
	for (int k = 0; k < nshapes; k++) {
		struct shape_res *r = &res[k];
		int has_iops = iops > 0;
		double frac = has_iops && r->cold_ms > 0 ? (double)r->distinct / (r->cold_ms * 1e-3) / iops : 0;
		double frac_pf = has_iops && r->cold_pf_ms > 0 ? (double)r->distinct / (r->cold_pf_ms * 1e-3) / iops : 0;
		double ratio = r->mem_ms > 0 ? r->warm_ms / r->mem_ms : 0;
		/* Pages the split found uncached (a cold row reads a weight page and a scale page) per second. */
		double pfrac = has_iops && r->cold_ms > 0 ? (double)r->cold_bytes / 4096 / (r->cold_ms * 1e-3) / iops : 0;
		if (json) {
			json_t *e = json_pack("{s:I, s:b}", "ids", (json_int_t)r->n, "ok", r->ok);
			json_object_set_new(e, "distinct_rows", r->ok ? json_integer((json_int_t)r->distinct) : json_null());
			json_object_set_new(e, "cold_ms", cli_real_or_null(r->cold_ms, r->ok));
			json_object_set_new(e, "cold_resident_rows", json_integer((json_int_t)r->cold_resident));
			json_object_set_new(e, "cold_uncached_rows", json_integer((json_int_t)r->cold_uncached));
			json_object_set_new(e, "cold_uncached_pages", json_integer((json_int_t)(r->cold_bytes / 4096)));
			json_object_set_new(e, "cold_pages_fraction_of_iops", cli_real_or_null(pfrac, r->ok && has_iops && r->cold_bytes));
			json_object_set_new(e, "cold_fraction_of_iops", cli_real_or_null(frac, r->ok && has_iops));
			json_object_set_new(e, "cold_prefetch_ms", cli_real_or_null(r->cold_pf_ms, r->ok));
			json_object_set_new(e, "cold_prefetch_fraction_of_iops", cli_real_or_null(frac_pf, r->ok && has_iops));
			json_object_set_new(e, "warm_ms", cli_real_or_null(r->warm_ms, r->ok));
			json_object_set_new(e, "memory_host_ms", cli_real_or_null(r->mem_ms, r->ok && r->mem_ms > 0));
			json_object_set_new(e, "warm_vs_memory", cli_real_or_null(ratio, r->ok && r->mem_ms > 0));
			json_object_set_new(e, "error", r->ok ? json_null() : json_string(r->err));
			json_array_append_new(arr, e);
		} else if (!r->ok) {
			printf("%8zu  -- %s\n", r->n, r->err);
		} else {
			char m[16] = "-", q[16] = "-";
			if (r->mem_ms > 0)
				snprintf(m, sizeof(m), "%.3f", r->mem_ms), snprintf(q, sizeof(q), "%.2fx", ratio);
			char u[16] = "-", pg[16] = "-";
			if (r->cold_resident + r->cold_uncached)
				snprintf(u, sizeof(u), "%.0f%%", 100.0 * (double)r->cold_uncached /
									 (double)(r->cold_resident + r->cold_uncached));
			if (r->cold_bytes && has_iops)
				snprintf(pg, sizeof(pg), "%.0f%%", 100 * pfrac);
			printf("%8zu %9llu %9.1f %6.0f%% %8s %8s %9.1f %6.0f%% %9.3f %9s %8s\n", r->n,
			       (unsigned long long)r->distinct, r->cold_ms, 100 * frac, u, pg, r->cold_pf_ms, 100 * frac_pf, r->warm_ms, m, q);
		}
	}
	if (json) {
		json_object_set_new(report, "results", arr);
		json_object_set_new(report, "split_mode", json_string(split_mode == 2 ? "io_uring" : split_mode == 1 ? "pread" : "none"));
		json_object_set_new(report, "file_kept", json_boolean(keep || !created));
		cli_print_json(report);
	} else {
		printf("reads: %s\n", split_mode == 2 ? "split (resident rows copied from the mapping, uncached rows with io_uring)"
		       : split_mode == 1 ? "split (resident rows copied from the mapping, uncached rows with pread)"
					 : "no split (EHT_DISK_SPLIT=0, EHT_DISK_PREAD or EHT_DISK_URING)");
		printf("(cold: page cache dropped, one step; uncached: rows of the cold step read from the drive; pg/IOPS: their uncached pages (weight and scale) per second over the drive's IOPS; \"of IOPS\": distinct rows per second over the drive's 4 KiB "
		       "IOPS; cold+pf: prefetch ticket with %u readers, then the lookup; warm: median of %d, whole file in "
		       "the page cache; memory: HOST strategy on an in-memory copy; goal warm/mem <= 1.5x)\n",
		       io_threads, reps);
	}
	rc = 0;
out:
	eht_lookup_destroy(lk);
	eht_lookup_destroy(mlk);
	eht_table_close(mt);
	eht_table_close(t);
	if (dout)
		eht_dev_free(dout);
	free(hout);
	free(mem);
	free(ids);
	free(times);
	/* Benches remove what they create: the test file (unless --keep), and its folder when empty. */
	if (created && !keep) {
		if (unlink(path) != 0 && errno != ENOENT)
			fprintf(stderr, "eht bench disk: cannot remove %s: %s\n", path, strerror(errno));
		else
			fprintf(info, "removed %s (--keep keeps it for the next run)\n", path);
	}
	if (made_dir)
		rmdir(dir); /* fails harmlessly when a kept file is in it */
	return rc;
}
