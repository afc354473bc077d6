/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_sealed.c: the rows `eht serve` holds on the region tier cannot be rewritten by a
 * worker: it takes a descriptor of its table's pages (here through /proc/self/map_files, as root;
 * the descriptor it received is the same file), fchmods it, reopens it through /proc/self/fd with
 * write access (root needs no fchmod) and tries every way to write (write, a shared writable
 * mapping, a hole punch, truncation, mprotect of its own mapping). Each must fail, and the rows stay
 * the checkpoint's for this and every other worker. Needs root (map_files); skips otherwise. */
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/map_aligned.h"
#include "testutil.h"

/* The line of /proc/self/maps holding addr: its range into lo, hi. */
static int mapping_of(const void *addr, unsigned long *lo, unsigned long *hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%lx-%lx", lo, hi) == 2 && (unsigned long)addr >= *lo && (unsigned long)addr < *hi;
	if (f)
		fclose(f);
	return found;
}

int main(void)
{
	if (geteuid() != 0)
		t_skip("needs root: a worker's descriptor is taken through /proc/self/map_files");
	const char *cli = getenv("EHT_CLI");
	if (!cli)
		return 1;
	char *dir = t_tmpdir("sealed");
	char ckpt[600], ready[600], args[2048], key[64];
	snprintf(ckpt, sizeof(ckpt), "%s/ck", dir);
	snprintf(ready, sizeof(ready), "%s/ready.json", dir);
	snprintf(key, sizeof(key), "eht-test-sealed-%d", (int)getpid());
	snprintf(args, sizeof(args), "synth '%s' --rows 4096", ckpt);
	CHECK(t_cli_run(args, 60, NULL, 0, NULL, 0) == 0);
	t_setenv("EHT_SHM_DIR", dir);
	pid_t srv = fork();
	if (srv == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		execl(cli, "eht", "serve", ckpt, "--key", key, "--tier", "region", "--ready-file", ready, (char *)NULL);
		_exit(127);
	}
	struct stat st;
	for (int i = 0; i < 600 && stat(ready, &st) != 0; i++)
		usleep(50 * 1000);
	eht_client *c = NULL;
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 20000};
	CHECK_RC(eht_attach(key, &ao, &c), 0);
	eht_table *t = NULL;
	if (c)
		CHECK_RC(eht_client_find(c, "layers.1.engram.embed", &t), 0);
	struct eht_table_info ti = {.size = sizeof(ti)};
	if (t)
		CHECK_RC(eht_table_get_info(t, &ti), 0);
	unsigned long lo = 0, hi = 0;
	if (ti.host && mapping_of(ti.host, &lo, &hi)) {
		size_t bytes = (size_t)(ti.rows * ti.row_bytes);
		uint8_t *copy = malloc(bytes);
		memcpy(copy, ti.host, bytes);
		off_t off = (off_t)((unsigned long)ti.host - lo); /* the rows' place in the file */
		char mf[128], proc[64];
		snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx", lo, hi);
		int fd = open(mf, O_RDONLY | O_CLOEXEC);
		CHECK(fd >= 0);
		if (fd >= 0) {
			(void)!fchmod(fd, 0666); /* a worker of the server's uid may; the seal must not care */
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
			int w = open(proc, O_RDWR | O_CLOEXEC);
			if (w >= 0) {
				static const char junk[4096] = "rewritten";
				/* A hugetlb memfd (the table on huge pages) has no write(2) at all: EINVAL. */
				struct stat ws;
				bool hugetlb = fstat(w, &ws) == 0 && ws.st_blksize >= (2 << 20);
				CHECK(pwrite(w, junk, sizeof(junk), off) < 0 && (errno == EPERM || (hugetlb && errno == EINVAL)));
				/* One page of the file, placed at an address aligned to it as the kernel would:
				 * an emulator's mmap (qemu-user) does not align a hugetlb file's, and fails EINVAL
				 * before the seal is looked at. */
				size_t pg = hugetlb ? (size_t)ws.st_blksize : 4096;
				void *m = eht_map_aligned(w, pg, PROT_READ | PROT_WRITE, MAP_SHARED, pg);
				CHECK(m == MAP_FAILED && errno == EPERM);
				if (m != MAP_FAILED) {
					memset((char *)m + (off & 4095), 'x', 64);
					munmap(m, pg);
				}
				CHECK(fallocate(w, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off & ~4095, 8192) != 0);
				CHECK(ftruncate(w, 0) != 0);
				int seals = fcntl(w, F_GET_SEALS);
				CHECK(seals >= 0 && (seals & (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)) ==
							    (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW));
				close(w);
			}
			close(fd);
		}
		/* Its own mapping cannot become writable either. */
		CHECK(mprotect((void *)lo, 4096, PROT_READ | PROT_WRITE) != 0);
		if (memcmp(copy, ti.host, bytes) != 0) {
			fprintf(stderr, "the served rows were rewritten through a reopened descriptor\n");
			t_failures++;
		}
		free(copy);
	} else {
		fprintf(stderr, "no mapping of the table found\n");
		t_failures++;
	}
	if (c)
		CHECK_RC(eht_detach(c), 0);
	/* Another worker reads the checkpoint's rows. */
	snprintf(args, sizeof(args), "worker %s --check '%s'", key, ckpt);
	char out[8192];
	CHECK(t_cli_run(args, 60, out, sizeof(out), out, sizeof(out)) == 0 && strstr(out, "rows match the checkpoint"));
	kill(srv, SIGTERM);
	int ws = 0;
	CHECK(waitpid(srv, &ws, 0) == srv && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	t_rmtree(dir);
	return t_done();
}
