/* SPDX-License-Identifier: Apache-2.0 */
/* bench_disk.c: `eht bench disk`: lookups on a disk-tier table (an Engram-shaped checkpoint of at
 * least --file-gib GiB, written once and reused), cold (page cache dropped) and warm, at the prefill
 * and decode shapes; beside the drive's own 4 KiB random-read IOPS at high queue depth and the
 * in-memory HOST strategy on the same rows, both measured in the same run. */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"
#include "cli.h"
#include "bench_disk_mem.h"
#include "os/numa.h"
#include "gpu/dev.h"
#include "eht.h"
#include "util/clock.h"

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

/* Reuses path when it holds the two tensors with `rows` rows (*created 0); else writes it (*created 1,
 * set before the write so that a signal during it removes path.tmp). */
static int ensure_file(const char *path, uint64_t rows, FILE *info, volatile sig_atomic_t *created)
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
	double t0 = eht_now_s();
	*created = 1; /* a failed write leaves nothing behind (path.tmp and a rename) */
	int rc = eht_st_write(path, t, 2, NULL, 0);
	if (!rc)
		fprintf(info, "wrote %s: %.2f GiB in %.1f s\n", path, (double)rows * RB / (1 << 30), eht_now_s() - t0);
	return rc;
}

/* ------------------------------------------------------------------- options */
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


struct disk_opts {
	double gib, cache_mib, mem_limit;
	const char *dir, *workload;
	size_t shapes[MAX_SHAPES];
	int nshapes, reps, json, cpu, dev, no_mem, keep, steps, cache_set, ids_set;
	unsigned threads, io_threads, iops_threads;
	long long hotset;
};

/* A thread count >= 0 into *out; 0 or 2. */
static int parse_threads(const char *name, const char *arg, unsigned *out)
{
	int v = 0;
	if (cli_int("bench disk", name, arg, &v))
		return 2;
	if (v < 0)
		return cli_errorf("bench disk", 2, "%s: thread counts are >= 0", name);
	*out = (unsigned)v;
	return 0;
}

/* A GiB size above 0 (not an explicit 0: 0 means "size it for me" only when not given). */
static int parse_gib(const char *name, const char *arg, double *out)
{
	if (cli_double("bench disk", name, arg, out))
		return 2;
	if (!(*out > 0))
		return cli_errorf("bench disk", 2, "%s %s: give a size above 0 GiB", name, arg);
	return 0;
}

/* One option; 0, 2 (a message printed) or -1 (--help printed: exit 0). */
static int parse_opt(struct disk_opts *o, int c, const char *arg)
{
	char *end = NULL;
	switch (c) {
	case 'j': o->json = 1; return 0;
	case 'C': o->cpu = 1; return 0;
	case 'M': o->no_mem = 1; return 0;
	case 'K': o->keep = 1; return 0;
	case 'D': o->dir = arg; return 0;
	case 'W': o->workload = arg; return 0;
	case 'g': return parse_gib("--file-gib", arg, &o->gib);
	case 'r': return cli_int("bench disk", "--reps", arg, &o->reps);
	case 't': return parse_threads("--threads", arg, &o->threads);
	case 'q': return parse_threads("--io-threads", arg, &o->io_threads);
	case 'Q': return parse_threads("--iops-threads", arg, &o->iops_threads);
	case 'd': return cli_int("bench disk", "--device", arg, &o->dev);
	case 'L': return parse_gib("--mem-limit", arg, &o->mem_limit);
	case 'c':
		o->cache_set = 1;
		return cli_double("bench disk", "--cache-mib", arg, &o->cache_mib);
	case 'i':
		o->ids_set = 1;
		return parse_list(arg, o->shapes, &o->nshapes);
	case 'S':
		if (cli_int("bench disk", "--steps", arg, &o->steps))
			return 2;
		if (o->steps < 5 || o->steps > 100000)
			return cli_errorf("bench disk", 2, "--steps %s: 5..100000", arg);
		return 0;
	case 'H':
		o->hotset = strtoll(arg, &end, 10);
		if (!*arg || *end || o->hotset < 1 || o->hotset >= (1ll << 31))
			return cli_errorf("bench disk", 2, "--hotset %s: a row count 1..2^31-1", arg);
		return 0;
	case 'h':
		usage(stdout);
		return -1;
	default:
		return 2;
	}
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_bench_disk[] = {{"json", no_argument, NULL, 'j'},
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

/* The command line into o; -1 to run, else the exit status. */
static int parse_args(int argc, char **argv, struct disk_opts *o)
{
	const struct option *longopts = cli_opts_bench_disk;
	*o = (struct disk_opts){.dir = getenv("EHT_BENCH_DIR") ? getenv("EHT_BENCH_DIR") : "/var/tmp/eht-bench-disk",
				.shapes = {196608, 6144}, .nshapes = 2, .reps = 10, .io_threads = 64,
				.iops_threads = 64, .workload = "uniform", .steps = 300};
	int c, rc;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "bench disk", "h", longopts)) != -1)
		if ((rc = parse_opt(o, c, optarg)))
			return rc < 0 ? 0 : 2;
	if (optind < argc)
		return cli_usage_error("bench disk", "unexpected argument");
	if (o->reps < 1 || o->reps > 1000 || o->nshapes == 0 || o->gib < 0 || o->io_threads == 0 ||
	    o->iops_threads == 0 || o->iops_threads > 1024)
		return cli_usage_error("bench disk", "--reps 1..1000, --file-gib >= 0, --io-threads >= 1, "
						     "--iops-threads 1..1024");
	return -1;
}

/* ------------------------------------------------------------------- the test file */
/* What the run made, undone on every exit (cli_undo_push: also from a signal handler). */
struct disk_files {
	char dir[4096], path[4200], tmp[4210];
	volatile sig_atomic_t made_dir, created;
	int keep;
};

static void files_undo(void *arg)
{
	struct disk_files *f = arg;
	if (f->created && !f->keep) {
		unlink(f->path);
		unlink(f->tmp); /* a write cut short */
	}
	if (f->made_dir)
		rmdir(f->dir); /* fails harmlessly when a kept file is in it */
	f->created = f->made_dir = 0;
}

/* The normal exit: files_undo, saying what it removed. */
static void files_remove(struct disk_files *f, FILE *info)
{
	/* Benches remove what they create: the test file (unless --keep), and its folder when empty. */
	if (f->created && !f->keep) {
		if (unlink(f->path) != 0 && errno != ENOENT)
			fprintf(stderr, "eht bench disk: cannot remove %s: %s\n", f->path, strerror(errno));
		else
			fprintf(info, "removed %s (--keep keeps it for the next run)\n", f->path);
		f->created = 0;
	}
	files_undo(f);
}

/* The folder, and the file's size: 32 GiB where the disk has room (a reused file's own bytes count as
 * room), else scaled down. -1 to go on (*rows set), else the exit status. */
static int plan_file(struct disk_opts *o, struct disk_files *f, FILE *info, uint64_t *rows)
{
	snprintf(f->dir, sizeof(f->dir), "%s", o->dir);
	f->keep = o->keep;
	f->made_dir = mkdir(o->dir, 0755) == 0;
	if (!f->made_dir && errno != EEXIST) {
		char msg[600];
		snprintf(msg, sizeof(msg), "mkdir %s: %s", o->dir, strerror(errno));
		return cli_error("bench disk", o->json, msg);
	}
	snprintf(f->path, sizeof(f->path), "%s/eht-bench-disk.safetensors", o->dir);
	snprintf(f->tmp, sizeof(f->tmp), "%s.tmp", f->path);
	struct statvfs vfs;
	struct stat fst;
	uint64_t have = stat(f->path, &fst) == 0 ? (uint64_t)fst.st_size : 0;
	uint64_t room = statvfs(o->dir, &vfs) == 0 ? (uint64_t)vfs.f_bavail * vfs.f_frsize + have : 0;
	if (o->gib == 0) {
		o->gib = 32;
		if (room && room < (uint64_t)(34ull << 30)) {
			o->gib = floor((double)room * 0.8 / (1 << 30) * 4) / 4;
			if (o->gib < 0.25)
				o->gib = 0.25;
			fprintf(info, "only %.1f GiB free in %s: file scaled down to %.2f GiB (the target is 32)\n",
				(double)room / (1 << 30), o->dir, o->gib);
		}
	}
	*rows = (uint64_t)(o->gib * (double)(1ull << 30)) / RB;
	if (*rows < 1024 || *rows > INT32_MAX) {
		cli_errorf("bench disk", 2, "%.2f GiB gives %llu rows (1024..2^31-1 allowed)", o->gib,
			   (unsigned long long)*rows);
		files_undo(f);
		return 2;
	}
	if (room && (uint64_t)(o->gib * (1ull << 30)) > room)
		fprintf(stderr, "eht bench disk: warning: %.2f GiB file with %.1f GiB free\n", o->gib,
			(double)room / (1 << 30));
	return -1;
}

/* ------------------------------------------------------------------- the runs */
struct shape_res {
	size_t n;
	double cold_ms, cold_pf_ms, warm_ms, mem_ms;
	uint64_t distinct;
	uint64_t cold_resident, cold_uncached, cold_bytes; /* the default read's split in the cold step */
	int ok;
	char err[200];
};

struct disk_run {
	const struct disk_opts *o;
	const char *path;
	FILE *info;
	int gpu;
	uint64_t rows;
	size_t maxn;
	eht_table *t, *mt;
	eht_lookup *lk, *mlk;
	struct eht_lookup_opts lo;
	uint8_t *mem, *hout;
	int32_t *ids;
	double *times;
	eht_dptr dout;
	void *pout;
	unsigned run_flags;
	double iops;
	char inote[160];
	uint32_t split_mode;
	struct shape_res res[MAX_SHAPES];
};

/* One lookup of n ids to the last byte (a stream sync with a GPU). 0 or -errno. */
static int run_one(const struct disk_run *d, eht_lookup *lk, const int32_t *ids, size_t n)
{
	return eht_lookup_run(lk, ids, EHT_ID_INT32, 0, n, d->pout, NULL, d->run_flags, NULL) ||
	       (d->gpu && eht_dev_stream_sync(NULL));
}

/* The disk table, its engine, the output and the steps' ids. 0 or 1 (message printed). */
static int disk_setup(struct disk_run *d)
{
	const struct disk_opts *o = d->o;
	struct eht_disk_opts dop = {.size = sizeof(dop), .weight = WNAME, .scale = SNAME, .io_threads = o->io_threads,
				    .prefetch_rows = d->maxn, .prefetch_slots = 1,
				    .cache_bytes = o->cache_mib > 0 ? (uint64_t)(o->cache_mib * (1 << 20)) : EHT_DISK_NO_CACHE};
	if (eht_disk_open(d->path, &dop, &d->t))
		return cli_error("bench disk", o->json, NULL);
	d->lo = (struct eht_lookup_opts){.size = sizeof(d->lo), .strategy = EHT_LOOKUP_HOST, .device = d->gpu ? o->dev : -1,
					 .numa_node = -1, .threads = o->threads, .max_batch = d->maxn,
					 .flags = d->gpu ? 0 : EHT_LOOKUP_CPU_ONLY};
	if (eht_lookup_create(d->t, &d->lo, &d->lk))
		return cli_error("bench disk", o->json, NULL);
	if (d->gpu) {
		if (eht_dev_alloc(&d->dout, d->maxn * RB))
			return cli_error("bench disk", o->json, NULL);
	} else if (!(d->hout = malloc(d->maxn * RB))) {
		return cli_error("bench disk", o->json, "out of memory");
	}
	d->pout = d->gpu ? (void *)(uintptr_t)d->dout : d->hout;
	d->run_flags = EHT_LOOKUP_RUN_IDS_HOST | (d->gpu ? EHT_LOOKUP_RUN_OUT_DEVICE : EHT_LOOKUP_RUN_OUT_HOST);
	const int batches = o->reps + 4;
	d->ids = malloc((size_t)batches * d->maxn * sizeof(*d->ids));
	d->times = malloc((size_t)o->reps * sizeof(double));
	if (!d->ids || !d->times)
		return cli_error("bench disk", o->json, "out of memory for ids");
	uint64_t x = 0x853c49e6748fea9bull;
	for (size_t i = 0; i < (size_t)batches * d->maxn; i++)
		d->ids[i] = (int32_t)((x = mix(x)) % d->rows);
	return 0;
}

/* Cold: page cache dropped before each shape; once through the lookup's own pool (its threads are
 * the queue depth), once with a prefetch ticket (io_threads readers) then the lookup. */
static void cold_shape(struct disk_run *d, int k)
{
	struct shape_res *r = &d->res[k];
	r->n = d->o->shapes[k];
	const int32_t *a = d->ids + (size_t)k * d->maxn, *b = d->ids + (size_t)(k + 2) * d->maxn;
	struct eht_disk_stats s0 = {.size = sizeof(s0)}, s1 = {.size = sizeof(s1)};
	if (eht_disk_drop_cache(d->t) != 0 || eht_disk_stats(d->t, &s0) != 0)
		goto fail;
	double t0 = eht_now_s();
	if (run_one(d, d->lk, a, r->n))
		goto fail;
	r->cold_ms = (eht_now_s() - t0) * 1e3;
	if (eht_disk_stats(d->t, &s1) != 0 || eht_disk_drop_cache(d->t) != 0)
		goto fail;
	r->distinct = s1.rows_read - s0.rows_read;
	r->cold_resident = s1.resident_rows - s0.resident_rows;
	r->cold_uncached = s1.uncached_rows - s0.uncached_rows;
	r->cold_bytes = s1.uncached_bytes - s0.uncached_bytes;
	d->split_mode = s1.split_mode;
	eht_disk_ticket *tk = NULL;
	t0 = eht_now_s();
	if (eht_disk_prefetch(d->t, b, EHT_ID_INT32, 0, r->n, 0, &tk) || eht_disk_wait(tk) || run_one(d, d->lk, b, r->n)) {
		eht_disk_release(tk);
		goto fail;
	}
	r->cold_pf_ms = (eht_now_s() - t0) * 1e3;
	eht_disk_release(tk);
	r->ok = 1;
	return;
fail:
	snprintf(r->err, sizeof(r->err), "%s", eht_last_error());
}

/* Warm: read the whole file once (and pack the in-memory copy for HOST from the same reads). 0 or 1. */
static int warm_page_cache(struct disk_run *d, int no_mem)
{
	uint64_t rows = d->rows, avail = eht_mem_available();
	if (!no_mem && avail && rows * RB + (rows * RB) + (2ull << 30) > avail) {
		fprintf(d->info, "in-memory comparison skipped: %.1f GiB available, %.1f GiB needed beside the page cache\n",
			(double)avail / (1 << 30), 2.0 * (double)rows * RB / (1 << 30));
		no_mem = 1;
	}
	double t0 = eht_now_s();
	eht_ckpt *ck = NULL;
	struct eht_st_tensor_info w = {.size = sizeof(w)}, s = {.size = sizeof(s)};
	if (!no_mem && !(d->mem = malloc(rows * RB)))
		fprintf(d->info, "in-memory comparison skipped: out of memory\n");
	if (eht_ckpt_open(d->path, 0, &ck) || eht_ckpt_find(ck, WNAME, &w) || eht_ckpt_find(ck, SNAME, &s)) {
		cli_error("bench disk", d->o->json, NULL);
		eht_ckpt_close(ck);
		return 1;
	}
	const uint8_t *wp = w.data, *sp = s.data;
	uint64_t sum = 0;
	for (uint64_t r = 0; r < rows; r++) {
		if (d->mem) {
			memcpy(d->mem + r * RB, wp + r * 256, 256);
			memcpy(d->mem + r * RB + 256, sp + r * 8, 8);
		} else {
			for (int o = 0; o < 256; o += 4096 / 256 * 16) /* one byte per page is enough */
				sum += wp[r * 256 + (uint64_t)o];
			sum += sp[r * 8];
		}
	}
	eht_ckpt_close(ck);
	fprintf(d->info, "page cache warmed%s in %.1f s%s\n", d->mem ? " and in-memory copy packed" : "",
		eht_now_s() - t0, sum == 1 ? " " : "");
	/* Every row once through the disk table itself, so its mapping has every page entry (the cold
	 * runs' drop removed them): steady state, as in a server after its first steps. */
	t0 = eht_now_s();
	int32_t *seq = malloc(d->maxn * sizeof(*seq));
	for (uint64_t b = 0; seq && b < rows; b += d->maxn) {
		size_t n = rows - b < d->maxn ? (size_t)(rows - b) : d->maxn;
		for (size_t i = 0; i < n; i++)
			seq[i] = (int32_t)(b + i);
		if (run_one(d, d->lk, seq, n))
			break;
	}
	free(seq);
	fprintf(d->info, "disk table's mapping populated in %.1f s\n", eht_now_s() - t0);
	return 0;
}

/* Median of reps fresh steps of n ids on lk (2 untimed first) in ms; 0 or -1 (eht_last_error). */
static int warm_median(struct disk_run *d, eht_lookup *lk, size_t n, double *ms)
{
	const int reps = d->o->reps;
	for (int rep = -2; rep < reps; rep++) {
		const int32_t *a = d->ids + (size_t)(rep + 4) * d->maxn;
		double t0 = eht_now_s();
		if (run_one(d, lk, a, n))
			return -1;
		if (rep >= 0)
			d->times[rep] = eht_now_s() - t0;
	}
	struct bench_stats st;
	bench_stats(d->times, reps, 1e3, &st);
	*ms = st.median;
	return 0;
}

/* Warm steps on the disk table, then the HOST strategy on the in-memory copy. */
static void warm_runs(struct disk_run *d)
{
	for (int k = 0; k < d->o->nshapes; k++) {
		struct shape_res *r = &d->res[k];
		if (r->ok && warm_median(d, d->lk, r->n, &r->warm_ms)) {
			snprintf(r->err, sizeof(r->err), "%s", eht_last_error());
			r->ok = 0;
		}
	}
	if (!d->mem)
		return;
	if (eht_table_wrap(d->mem, d->rows, RB, d->gpu ? d->o->dev : -1, "bench-memory", &d->mt) ||
	    eht_lookup_create(d->mt, &d->lo, &d->mlk)) {
		fprintf(d->info, "in-memory comparison failed: %s\n", eht_last_error());
		return;
	}
	for (int k = 0; k < d->o->nshapes; k++) {
		double ms = 0;
		if (!warm_median(d, d->mlk, d->res[k].n, &ms))
			d->res[k].mem_ms = ms;
	}
}

/* ------------------------------------------------------------------- the report */
/* A shape's figures against the drive's IOPS. */
struct shape_fig {
	int has_iops;
	double frac, frac_pf, ratio, pfrac;
};

static struct shape_fig shape_fig(const struct shape_res *r, double iops)
{
	struct shape_fig f = {.has_iops = iops > 0};
	f.frac = f.has_iops && r->cold_ms > 0 ? (double)r->distinct / (r->cold_ms * 1e-3) / iops : 0;
	f.frac_pf = f.has_iops && r->cold_pf_ms > 0 ? (double)r->distinct / (r->cold_pf_ms * 1e-3) / iops : 0;
	f.ratio = r->mem_ms > 0 ? r->warm_ms / r->mem_ms : 0;
	/* Pages the split found uncached (a cold row reads a weight page and a scale page) per second. */
	f.pfrac = f.has_iops && r->cold_ms > 0 ? (double)r->cold_bytes / 4096 / (r->cold_ms * 1e-3) / iops : 0;
	return f;
}

static json_t *shape_json(const struct shape_res *r, double iops)
{
	struct shape_fig f = shape_fig(r, iops);
	json_t *e = json_pack("{s:I, s:b}", "ids", (json_int_t)r->n, "ok", r->ok);
	json_object_set_new(e, "distinct_rows", r->ok ? json_integer((json_int_t)r->distinct) : json_null());
	json_object_set_new(e, "cold_ms", bench_real_or_null(r->cold_ms, r->ok));
	json_object_set_new(e, "cold_resident_rows", json_integer((json_int_t)r->cold_resident));
	json_object_set_new(e, "cold_uncached_rows", json_integer((json_int_t)r->cold_uncached));
	json_object_set_new(e, "cold_uncached_pages", json_integer((json_int_t)(r->cold_bytes / 4096)));
	json_object_set_new(e, "cold_pages_fraction_of_iops", bench_real_or_null(f.pfrac, r->ok && f.has_iops && r->cold_bytes));
	json_object_set_new(e, "cold_fraction_of_iops", bench_real_or_null(f.frac, r->ok && f.has_iops));
	json_object_set_new(e, "cold_prefetch_ms", bench_real_or_null(r->cold_pf_ms, r->ok));
	json_object_set_new(e, "cold_prefetch_fraction_of_iops", bench_real_or_null(f.frac_pf, r->ok && f.has_iops));
	json_object_set_new(e, "warm_ms", bench_real_or_null(r->warm_ms, r->ok));
	json_object_set_new(e, "memory_host_ms", bench_real_or_null(r->mem_ms, r->ok && r->mem_ms > 0));
	json_object_set_new(e, "warm_vs_memory", bench_real_or_null(f.ratio, r->ok && r->mem_ms > 0));
	json_object_set_new(e, "error", r->ok ? json_null() : json_string(r->err));
	return e;
}

static void shape_row(const struct shape_res *r, double iops)
{
	if (!r->ok) {
		printf("%8zu  -- %s\n", r->n, r->err);
		return;
	}
	struct shape_fig f = shape_fig(r, iops);
	char m[16], q[16], u[16], pg[16];
	uint64_t cold = r->cold_resident + r->cold_uncached;
	bench_cell(m, sizeof(m), "%.3f", r->mem_ms, r->mem_ms > 0, "-");
	bench_cell(q, sizeof(q), "%.2fx", f.ratio, r->mem_ms > 0, "-");
	bench_cell(u, sizeof(u), "%.0f%%", cold ? 100.0 * (double)r->cold_uncached / (double)cold : 0, cold != 0, "-");
	bench_cell(pg, sizeof(pg), "%.0f%%", 100 * f.pfrac, r->cold_bytes && f.has_iops, "-");
	printf("%8zu %9llu %9.1f %6.0f%% %8s %8s %9.1f %6.0f%% %9.3f %9s %8s\n", r->n, (unsigned long long)r->distinct,
	       r->cold_ms, 100 * f.frac, u, pg, r->cold_pf_ms, 100 * f.frac_pf, r->warm_ms, m, q);
}

static void disk_report(const struct disk_run *d, int created)
{
	const struct disk_opts *o = d->o;
	uint32_t sm = d->split_mode;
	if (o->json) {
		json_t *report = bench_report_new("disk"), *arr = json_array();
		json_object_update_new(report, json_pack("{s:s, s:f, s:I, s:i, s:b, s:o, s:i, s:i}", "file", d->path,
							 "file_gib", o->gib, "rows", (json_int_t)d->rows, "row_bytes", RB,
							 "gpu", d->gpu, "drive_iops_4k", bench_real_or_null(d->iops, d->iops > 0),
							 "io_threads", (int)o->io_threads, "reps", o->reps));
		for (int k = 0; k < o->nshapes; k++)
			json_array_append_new(arr, shape_json(&d->res[k], d->iops));
		json_object_set_new(report, "results", arr);
		json_object_set_new(report, "split_mode", json_string(sm == 2 ? "io_uring" : sm == 1 ? "pread" : "none"));
		json_object_set_new(report, "file_kept", json_boolean(o->keep || !created));
		cli_print_json(report);
		return;
	}
	printf("%8s %9s %9s %7s %8s %8s %9s %7s %9s %9s %8s\n", "ids", "distinct", "cold ms", "of IOPS", "uncached",
	       "pg/IOPS", "cold+pf", "of IOPS", "warm ms", "memory", "warm/mem");
	for (int k = 0; k < o->nshapes; k++)
		shape_row(&d->res[k], d->iops);
	printf("reads: %s\n", sm == 2   ? "split (resident rows copied from the mapping, uncached rows with io_uring)"
			      : sm == 1 ? "split (resident rows copied from the mapping, uncached rows with pread)"
					: "no split (EHT_DISK_SPLIT=0, EHT_DISK_PREAD or EHT_DISK_URING)");
	printf("(cold: page cache dropped, one step; uncached: rows of the cold step read from the drive; pg/IOPS: their uncached pages (weight and scale) per second over the drive's IOPS; \"of IOPS\": distinct rows per second over the drive's 4 KiB "
	       "IOPS; cold+pf: prefetch ticket with %u readers, then the lookup; warm: median of %d, whole file in "
	       "the page cache; memory: HOST strategy on an in-memory copy; goal warm/mem <= 1.5x)\n",
	       o->io_threads, o->reps);
}

/* ------------------------------------------------------------------- main */
/* Cold, warm and in-memory runs on the file, then the report. 0 or 1. */
static int disk_runs(struct disk_run *d, int created)
{
	if (disk_setup(d))
		return 1;
	/* The drive's own ceiling, measured first (the page cache does not matter to O_DIRECT). */
	d->iops = bench_drive_iops(d->path, d->o->iops_threads, 3.0, d->rows * 256, d->inote, sizeof(d->inote));
	fprintf(d->info, "drive: 4 KiB O_DIRECT random reads: %.1f k IOPS (%s)\n", d->iops / 1e3, d->inote);
	for (int k = 0; k < d->o->nshapes; k++)
		cold_shape(d, k);
	if (warm_page_cache(d, d->o->no_mem))
		return 1;
	warm_runs(d);
	disk_report(d, created);
	return 0;
}

static void disk_run_free(struct disk_run *d)
{
	eht_lookup_destroy(d->lk);
	eht_lookup_destroy(d->mlk);
	eht_table_close(d->mt);
	eht_table_close(d->t);
	if (d->dout)
		eht_dev_free(d->dout);
	free(d->hout);
	free(d->mem);
	free(d->ids);
	free(d->times);
}

int bench_disk(int argc, char **argv)
{
	struct disk_opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	FILE *info = bench_info(o.json);
	int gpu = bench_gpu(o.cpu, o.dev);
	size_t mem_ids = o.ids_set ? o.shapes[0] : 6144;
	if (o.mem_limit > 0 && bench_disk_mem_refuse(o.mem_limit, mem_ids, (size_t)o.hotset, gpu,
						     o.cache_set && o.cache_mib <= 0))
		return 2;
	if (!gpu)
		fprintf(info, "no GPU%s: rows gathered into host memory\n", o.cpu ? " (--cpu)" : "");
	static struct disk_files files; /* static: the signal handler reads it */
	memset(&files, 0, sizeof(files));
	if (cli_undo_push(files_undo, &files))
		return cli_error("bench disk", o.json, "too many cleanups");
	uint64_t rows = 0;
	if ((rc = plan_file(&o, &files, info, &rows)) >= 0)
		goto out;
	rc = 1;
	if (ensure_file(files.path, rows, info, &files.created)) {
		cli_error("bench disk", o.json, NULL);
		goto out;
	}
	if (o.mem_limit > 0) {
		struct bench_disk_mem_args ma = {.path = files.path, .rows = rows, .mem_limit_gib = o.mem_limit,
						 .workload = o.workload, .ids = mem_ids, .steps = o.steps,
						 .threads = o.threads, .no_cache = o.cache_set && o.cache_mib <= 0,
						 .json = o.json, .gpu = gpu, .device = o.dev, .hotset = (size_t)o.hotset};
		rc = bench_disk_mem(&ma);
		goto out;
	}
	struct disk_run d = {.o = &o, .path = files.path, .info = info, .gpu = gpu, .rows = rows};
	for (int i = 0; i < o.nshapes; i++)
		d.maxn = o.shapes[i] > d.maxn ? o.shapes[i] : d.maxn;
	rc = disk_runs(&d, files.created);
	disk_run_free(&d);
out:
	files_remove(&files, info);
	cli_undo_pop();
	return rc;
}
