/* SPDX-License-Identifier: Apache-2.0 */
/* test_st_write.c: the writer (byte-identical to the official writer on the fixtures, round trips of
 * every dtype, data and fill sources, its refusals) and the synthetic checkpoint generator. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static unsigned char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = NULL;
	*len = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	fclose(f);
	return b;
}

/* Re-writes every tensor of src (with its metadata) to dst; the bytes must match src exactly. */
static void rewrite_identical(const char *src, const char *dst)
{
	eht_st_file *f = NULL;
	CHECK_RC(eht_st_open(src, 0, &f), 0);
	if (!f)
		return;
	size_t n = eht_st_count(f), nm = eht_st_metadata_count(f);
	struct eht_st_write_tensor *w = calloc(n + 1, sizeof(*w));
	const char **meta = calloc(2 * nm + 1, sizeof(char *));
	/* reverse order in: the writer must sort */
	for (size_t i = 0; i < n; i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		CHECK_RC(eht_st_tensor(f, n - 1 - i, &t), 0);
		w[i] = (struct eht_st_write_tensor){.name = t.name, .dtype = t.dtype, .ndim = t.ndim,
						    .shape = t.shape, .data = t.data};
	}
	for (size_t i = 0; i < nm; i++)
		CHECK_RC(eht_st_metadata_at(f, nm - 1 - i, &meta[2 * i], &meta[2 * i + 1]), 0);
	CHECK_RC(eht_st_write(dst, w, n, nm ? meta : NULL, 0), 0);
	size_t la, lb;
	unsigned char *a = read_all(src, &la), *b = read_all(dst, &lb);
	if (!a || !b || la != lb || memcmp(a, b, la)) {
		fprintf(stderr, "%s: rewrite differs from the official writer's file (%zu vs %zu bytes)\n", src, lb, la);
		t_failures++;
	}
	free(a);
	free(b);
	free(w);
	free(meta);
	eht_st_close(f);
}

static int fill_pattern(void *ctx, uint64_t off, void *buf, size_t len)
{
	unsigned char *b = buf;
	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char)((off + i) * 7 + (uintptr_t)ctx);
	return 0;
}

static int fill_fail(void *ctx, uint64_t off, void *buf, size_t len) { return -EIO; }

static void round_trip(const char *dir)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/all.safetensors", dir);
	struct eht_st_write_tensor w[EHT_DTYPE_COUNT];
	uint64_t shapes[EHT_DTYPE_COUNT][2];
	unsigned char data[EHT_DTYPE_COUNT][64];
	size_t n = 0;
	for (int d = 1; d < EHT_DTYPE_COUNT; d++, n++) {
		shapes[n][0] = 3;
		shapes[n][1] = 4; /* 12 elements: whole bytes for 4- and 6-bit dtypes too */
		for (int i = 0; i < 64; i++)
			data[n][i] = (unsigned char)(d * 31 + i);
		char *name = malloc(32);
		snprintf(name, 32, "t.%s", eht_dtype_name(d));
		w[n] = (struct eht_st_write_tensor){.name = name, .dtype = d, .ndim = 2, .shape = shapes[n]};
		if (d % 2)
			w[n].data = data[n];
		else {
			w[n].fill = fill_pattern;
			w[n].ctx = (void *)(uintptr_t)d;
		}
	}
	uint64_t big_shape[1] = {3u << 20}; /* more than one fill chunk */
	w[n++] = (struct eht_st_write_tensor){.name = "big", .dtype = EHT_DTYPE_U8, .ndim = 1, .shape = big_shape,
					      .fill = fill_pattern, .ctx = (void *)5};
	const char *meta[] = {"z", "last", "a", "first \"quoted\"\n", NULL};
	CHECK_RC(eht_st_write(p, w, n, meta, 0), 0);
	eht_st_file *f = NULL;
	CHECK_RC(eht_st_open(p, 0, &f), 0);
	CHECK(eht_st_count(f) == n);
	CHECK(eht_st_data_start(f) % 8 == 0);
	CHECK(f && !strcmp(eht_st_metadata_get(f, "a"), "first \"quoted\"\n"));
	const char *k0 = NULL;
	CHECK(f && eht_st_metadata_at(f, 0, &k0, NULL) == 0 && !strcmp(k0, "a"));
	int prev_dtype = EHT_DTYPE_COUNT;
	for (size_t i = 0; i < n && f; i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		CHECK_RC(eht_st_find(f, w[i].name, &t), 0);
		int bits = eht_dtype_bits(w[i].dtype);
		CHECK(t.dtype == w[i].dtype && t.ndim == w[i].ndim && t.shape[0] == w[i].shape[0]);
		CHECK(t.nbytes == w[i].shape[0] * (w[i].ndim > 1 ? w[i].shape[1] : 1) * (uint64_t)bits / 8);
		if (w[i].data)
			CHECK(memcmp(t.data, w[i].data, (size_t)t.nbytes) == 0);
		else
			for (uint64_t b = 0; b < t.nbytes; b++)
				if (((const unsigned char *)t.data)[b] != (unsigned char)(b * 7 + (uintptr_t)w[i].ctx)) {
					CHECK(!"fill bytes differ");
					break;
				}
		/* layout: dtypes in descending order */
		CHECK_RC(eht_st_tensor(f, i, &t), 0);
		CHECK(t.dtype <= prev_dtype);
		prev_dtype = t.dtype;
	}
	eht_st_close(f);
	for (size_t i = 0; i + 1 < n; i++)
		free((char *)w[i].name);

	/* refusals */
	uint64_t s3[1] = {3};
	unsigned char buf[16] = {0};
	struct eht_st_write_tensor bad = {.name = "x", .dtype = EHT_DTYPE_F4, .ndim = 1, .shape = s3, .data = buf};
	CHECK_RC(eht_st_write(p, &bad, 1, NULL, 0), -EINVAL);
	CHECK(strstr(eht_last_error(), "not a multiple of 8"));
	bad.dtype = 0;
	CHECK_RC(eht_st_write(p, &bad, 1, NULL, 0), -EINVAL);
	bad.dtype = EHT_DTYPE_U8;
	bad.name = "__metadata__";
	CHECK_RC(eht_st_write(p, &bad, 1, NULL, 0), -EINVAL);
	bad.name = "bad\xff";
	CHECK_RC(eht_st_write(p, &bad, 1, NULL, 0), -EINVAL);
	bad.name = "x";
	bad.data = NULL;
	CHECK_RC(eht_st_write(p, &bad, 1, NULL, 0), -EINVAL);
	bad.data = buf;
	CHECK_RC(eht_st_write(p, &bad, 1, NULL, 4), -EINVAL);
	struct eht_st_write_tensor two[2] = {bad, bad};
	two[1].dtype = EHT_DTYPE_I8;
	CHECK_RC(eht_st_write(p, two, 2, NULL, 0), -EINVAL);
	CHECK(strstr(eht_last_error(), "duplicate tensor name"));
	const char *dupmeta[] = {"k", "1", "k", "2", NULL};
	CHECK_RC(eht_st_write(p, &bad, 1, dupmeta, 0), -EINVAL);
	uint64_t huge[2] = {1ull << 62, 8};
	bad.shape = huge;
	bad.ndim = 2;
	CHECK_RC(eht_st_write(p, &bad, 1, NULL, 0), -EOVERFLOW);
	bad.shape = s3;
	bad.ndim = 1;
	bad.data = NULL;
	bad.fill = fill_fail;
	CHECK_RC(eht_st_write(p, &bad, 1, NULL, 0), -EIO);
	/* a failed write leaves neither the file replaced nor a temporary behind */
	f = NULL;
	CHECK_RC(eht_st_open(p, 0, &f), 0);
	CHECK(eht_st_count(f) == n);
	eht_st_close(f);
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	CHECK(access(tmp, F_OK) != 0);
	/* zero tensors: "{}" padded */
	CHECK_RC(eht_st_write(p, NULL, 0, NULL, 0), 0);
	size_t len;
	unsigned char *b = read_all(p, &len);
	CHECK(len == 16 && b && !memcmp(b + 8, "{}      ", 8));
	free(b);
}

/* Bytes of every tensor of a checkpoint, concatenated in name order (for comparisons). */
static void synth_checks(const char *dir)
{
	char a[512], b[512], c[512];
	snprintf(a, sizeof(a), "%s/syn1", dir);
	snprintf(b, sizeof(b), "%s/syn3", dir);
	snprintf(c, sizeof(c), "%s/synx", dir);
	struct eht_synth_opts o = {.size = sizeof(o), .tables = 3, .rows = 777, .shards = 1, .seed = 42};
	CHECK_RC(eht_synth_checkpoint(a, &o), 0);
	o.shards = 3;
	CHECK_RC(eht_synth_checkpoint(b, &o), 0);
	o.shards = 1;
	o.seed = 43;
	CHECK_RC(eht_synth_checkpoint(c, &o), 0);
	eht_ckpt *ca = NULL, *cb = NULL, *cc = NULL;
	CHECK_RC(eht_ckpt_open(a, 0, &ca), 0);
	CHECK_RC(eht_ckpt_open(b, 0, &cb), 0);
	CHECK_RC(eht_ckpt_open(c, 0, &cc), 0);
	if (!ca || !cb || !cc)
		goto out;
	CHECK(eht_ckpt_kind(ca) == EHT_CKPT_DIR && eht_ckpt_kind(cb) == EHT_CKPT_INDEX);
	CHECK(eht_ckpt_file_count(ca) == 1 && eht_ckpt_file_count(cb) == 3);
	CHECK(eht_ckpt_count(ca) == 7 && eht_ckpt_count(cb) == 7);
	int differ = 0;
	for (uint32_t i = 0; i < 3; i++) {
		char wn[96], sn[96];
		snprintf(wn, sizeof(wn), "layers.%u.engram.embed.weight", eht_synth_layer(i));
		snprintf(sn, sizeof(sn), "layers.%u.engram.embed.scale", eht_synth_layer(i));
		struct eht_st_tensor_info w1 = {.size = sizeof(w1)}, w3 = w1, wx = w1, s1 = w1;
		CHECK_RC(eht_ckpt_find(ca, wn, &w1), 0);
		CHECK_RC(eht_ckpt_find(cb, wn, &w3), 0);
		CHECK_RC(eht_ckpt_find(cc, wn, &wx), 0);
		CHECK_RC(eht_ckpt_find(ca, sn, &s1), 0);
		if (!w1.data || !w3.data || !wx.data || !s1.data)
			continue;
		CHECK(w1.dtype == EHT_DTYPE_F8_E4M3 && w1.shape[0] == 777 && w1.shape[1] == 256);
		CHECK(s1.dtype == EHT_DTYPE_F8_E8M0 && s1.shape[0] == 777 && s1.shape[1] == 8);
		/* same seed: same bytes whatever the sharding; another seed: other bytes */
		CHECK(memcmp(w1.data, w3.data, (size_t)w1.nbytes) == 0);
		differ += memcmp(w1.data, wx.data, (size_t)w1.nbytes) != 0;
		const unsigned char *p = w1.data;
		size_t nan = 0, zero = 0;
		for (uint64_t k = 0; k < w1.nbytes; k++) {
			nan += (p[k] & 0x7f) == 0x7f;
			zero += p[k] == 0;
		}
		CHECK(nan == 0 && zero < w1.nbytes / 64);
		p = s1.data;
		unsigned lo = 255, hi = 0;
		for (uint64_t k = 0; k < s1.nbytes; k++) {
			lo = p[k] < lo ? p[k] : lo;
			hi = p[k] > hi ? p[k] : hi;
		}
		CHECK(lo == 120 && hi == 134);
	}
	CHECK(differ == 3);
	struct eht_st_tensor_info d = {.size = sizeof(d)};
	CHECK_RC(eht_ckpt_find(ca, "layers.0.attn.dummy", &d), 0);
	CHECK(d.dtype == EHT_DTYPE_BF16 && d.nbytes == 8192);
out:
	eht_ckpt_close(ca);
	eht_ckpt_close(cb);
	eht_ckpt_close(cc);

	/* re-synthesizing over a sharded directory as one file leaves one checkpoint */
	o.shards = 1;
	o.seed = 42;
	CHECK_RC(eht_synth_checkpoint(b, &o), 0);
	CHECK_RC(eht_ckpt_open(b, 0, &cb), 0);
	CHECK(cb && eht_ckpt_kind(cb) == EHT_CKPT_DIR && eht_ckpt_file_count(cb) == 1 && eht_ckpt_count(cb) == 7);
	eht_ckpt_close(cb);
	/* defaults, and refusals */
	CHECK_RC(eht_synth_checkpoint(c, NULL), 0);
	CHECK_RC(eht_ckpt_open(c, 0, &cc), 0);
	struct eht_st_tensor_info t = {.size = sizeof(t)};
	CHECK_RC(eht_ckpt_find(cc, "layers.14.engram.embed.weight", &t), 0);
	CHECK(t.shape[0] == EHT_SYNTH_DEFAULT_ROWS && eht_ckpt_count(cc) == 2 * EHT_SYNTH_DEFAULT_TABLES + 1);
	eht_ckpt_close(cc);
	o.shards = 8; /* 7 tensors */
	CHECK_RC(eht_synth_checkpoint(c, &o), -EINVAL);
	o.shards = 1;
	o.flags = 2;
	CHECK_RC(eht_synth_checkpoint(c, &o), -EINVAL);
	o.flags = 0;
	o.size = 0; /* not set (smaller sizes of older callers are accepted: test_opts_size) */
	CHECK_RC(eht_synth_checkpoint(c, &o), -EINVAL);
}

/* A disk that fills part way (RLIMIT_FSIZE in a child: a shard past 256 KiB fails with EFBIG) leaves
 * no partial checkpoint: the shards written before are removed, and the directory if synth made it
 * (a directory that was there stays, with the files that are not a checkpoint's). */
static void synth_full_disk(const char *dir)
{
	pid_t p = fork();
	if (p == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit rl;
		int bad = getrlimit(RLIMIT_FSIZE, &rl) != 0;
		rl.rlim_cur = 256 << 10;
		bad |= setrlimit(RLIMIT_FSIZE, &rl) != 0;
		char made[600], kept[600], other[700];
		snprintf(made, sizeof(made), "%s/full-new", dir);
		snprintf(kept, sizeof(kept), "%s/full-old", dir);
		snprintf(other, sizeof(other), "%s/notes.txt", kept);
		struct eht_synth_opts o = {.size = sizeof(o), .tables = 2, .rows = 4000, .shards = 3};
		bad |= eht_synth_checkpoint(made, &o) != -EFBIG;
		bad |= strstr(eht_last_error(), "safetensors") == NULL;
		struct stat st;
		bad |= stat(made, &st) == 0; /* made here: gone */
		bad |= mkdir(kept, 0755) != 0;
		FILE *f = fopen(other, "w");
		bad |= !f || fputs("mine\n", f) < 0;
		if (f)
			fclose(f);
		bad |= eht_synth_checkpoint(kept, &o) != -EFBIG;
		int n = 0;
		DIR *d = opendir(kept);
		for (struct dirent *e; d && (e = readdir(d));)
			n += e->d_name[0] != '.';
		if (d)
			closedir(d);
		bad |= !d || n != 1 || stat(other, &st) != 0; /* only the user's file is left */
		if (bad)
			fprintf(stderr, "synth on a full disk: %s\n", eht_last_error());
		_exit(bad);
	}
	int st = 0;
	CHECK(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	char *dir = strdup(t_tmpdir("st-write"));
	char src[1024], dst[1024];
	const char *fx = getenv("EHT_FIXTURES");
	struct stat st;
	if (fx && stat(fx, &st) == 0) {
		static const char *const files[] = {"engram_single.safetensors", "misc.safetensors",
			"engram_sharded/model-00001-of-00003.safetensors",
			"engram_sharded/model-00003-of-00003.safetensors"};
		for (size_t i = 0; i < 4; i++) {
			snprintf(src, sizeof(src), "%s/safetensors/%s", fx, files[i]);
			snprintf(dst, sizeof(dst), "%s/rewrite%zu.safetensors", dir, i);
			rewrite_identical(src, dst);
		}
	} else {
		fprintf(stderr, "note: no fixtures; skipping the byte-identical rewrite\n");
	}
	round_trip(dir);
	synth_checks(dir);
	synth_full_disk(dir);
	t_rmtree(dir);
	free(dir);
	return t_done();
}
