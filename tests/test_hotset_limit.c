/* SPDX-License-Identifier: Apache-2.0 */
/* test_hotset_limit.c: a hot set is sized from its file's header, against its table, before anything
 * is read or allocated. A well-formed sparse hot set of 2^26 entries (512 MiB of holes) for a
 * 14,032-row table is refused by eht_serve_start at once, naming the file, the entries and the limit,
 * in a child whose data segment may grow by 64 MiB only (RLIMIT_DATA: reading it, or its index, would
 * fail for memory instead); both file formats; and 2^31 entries are over the limit of any hot set. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "table/hotset.h"
#include "testutil.h"

#define ROWS 14032
#define BIG (1ull << 26)

/* A safetensors hot set whose one I64 tensor has n entries, all holes. 0 or -errno. */
static int sparse_safetensors(const char *path, uint64_t n)
{
	char hdr[256];
	int len = snprintf(hdr, sizeof(hdr),
			   "{\"__metadata__\":{\"format\":\"eht-hotset-1\"},\"hotset\":{\"dtype\":\"I64\",\"shape\":[%llu],"
			   "\"data_offsets\":[0,%llu]}}",
			   (unsigned long long)n, (unsigned long long)(8 * n));
	while (len % 8)
		hdr[len++] = ' ';
	unsigned char lenb[8];
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)((uint64_t)len >> (8 * i));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = fd < 0 || write(fd, lenb, 8) != 8 || write(fd, hdr, (size_t)len) != len ||
		 ftruncate(fd, (off_t)(8 + (uint64_t)len + 8 * n)) != 0;
	if (fd >= 0)
		close(fd);
	return rc ? -EIO : 0;
}

/* The first format ("EHTHOT1\n", count, rows) with n entries, all holes. */
static int sparse_ehthot1(const char *path, uint64_t n)
{
	unsigned char hdr[16];
	memcpy(hdr, EHT_HOTSET_MAGIC, 8);
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = (unsigned char)(n >> (8 * i));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = fd < 0 || write(fd, hdr, 16) != 16 || ftruncate(fd, (off_t)(16 + 8 * n)) != 0;
	if (fd >= 0)
		close(fd);
	return rc ? -EIO : 0;
}

static int names(const char *path, const char *count, const char *limit)
{
	const char *m = eht_last_error();
	int ok = strstr(m, path) && strstr(m, count) && strstr(m, limit);
	if (!ok)
		fprintf(stderr, "message: %s\n", m);
	return ok;
}

/* In a child limited to 64 MiB more data: eht_serve_start with the hot set fails naming it. */
static void serve_refuses(const char *ckpt, const char *hot)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl;
		FILE *f = fopen("/proc/self/statm", "r");
		unsigned long pages[7] = {0};
		if (!f || fscanf(f, "%lu %lu %lu %lu %lu %lu", &pages[0], &pages[1], &pages[2], &pages[3], &pages[4],
				 &pages[5]) != 6)
			_exit(3);
		fclose(f);
		/* statm's sixth field: data + stack pages now. */
		rl.rlim_cur = rl.rlim_max = (rlim_t)pages[5] * (rlim_t)sysconf(_SC_PAGESIZE) + (64u << 20);
		if (setrlimit(RLIMIT_DATA, &rl) != 0)
			_exit(3);
		char spec[700];
		snprintf(spec, sizeof(spec), "layers.1.engram.embed=%s", hot);
		const char *specs[] = {spec};
		char key[64];
		snprintf(key, sizeof(key), "hotlim-%d", (int)getpid());
		struct eht_serve_opts so = {.size = sizeof(so), .key = key, .device = -1, .hotsets = specs,
					    .nhotsets = 1, .threads = 1};
		eht_server *s = NULL;
		int rc = eht_serve_start(ckpt, &so, &s);
		int ok = rc == -EINVAL && names(hot, "67108864", "14032");
		if (!ok)
			fprintf(stderr, "eht_serve_start: %d\n", rc);
		if (s)
			eht_serve_stop(s);
		_exit(ok ? 0 : 1);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	setenv("EHT_NO_CUDA", "1", 1);
	char *tmp = t_tmpdir("hotlim");
	char ckpt[600], shm[600], st[600], old[600], huge[600];
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
	snprintf(shm, sizeof(shm), "%s/shm", tmp);
	snprintf(st, sizeof(st), "%s/big.safetensors", tmp);
	snprintf(old, sizeof(old), "%s/big.hot", tmp);
	snprintf(huge, sizeof(huge), "%s/huge.safetensors", tmp);
	mkdir(shm, 0700);
	setenv("EHT_SHM_DIR", shm, 1);
	struct eht_synth_opts sy = {.size = sizeof(sy), .tables = 1, .rows = ROWS, .seed = 3};
	CHECK_RC(eht_synth_checkpoint(ckpt, &sy), 0);
	CHECK_RC(sparse_safetensors(st, BIG), 0);
	CHECK_RC(sparse_ehthot1(old, BIG), 0);

	int64_t *rows = NULL;
	uint64_t n = 0;
	CHECK_RC(eht_hotset_read_max(st, ROWS, &rows, &n), -EINVAL);
	CHECK(names(st, "67108864", "14032") && rows == NULL && n == 0);
	CHECK_RC(eht_hotset_read_max(old, ROWS, &rows, &n), -EINVAL);
	CHECK(names(old, "67108864", "14032") && rows == NULL);
	serve_refuses(ckpt, st);
	serve_refuses(ckpt, old);

	/* 2^31 entries (16 GiB of holes): no hot set holds that many, whatever its table. (The file is
	 * mapped to be read: under an address-space limit below that, `ulimit -v`, the map fails first.) */
	struct rlimit as;
	if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && as.rlim_cur < (32ull << 30))
		fprintf(stderr, "note: address space limited to %llu bytes: the 16 GiB hot set not checked\n",
			(unsigned long long)as.rlim_cur);
	else if (sparse_safetensors(huge, 1ull << 31) == 0) {
		CHECK_RC(eht_hotset_read(huge, &rows, &n), -EINVAL);
		CHECK(names(huge, "2147483648", "2147483647") && rows == NULL);
	}
	t_rmtree(tmp);
	return t_done();
}
