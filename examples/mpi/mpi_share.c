/* SPDX-License-Identifier: Apache-2.0 */
/* mpi_share.c: one table copy per node under mpirun: every rank joins its node's eht group
 * (libeht_mpi), the node shares a table (host-NUMA, else pinned region, else region, all-or-none
 * per node), node rank 0 passes a descriptor inside its node (each rank must get its own node's),
 * and world rank 0 reports each node's tier and the memory the copies take.
 *
 *   mpirun -np 4 example_mpi_share --bytes 64M [--tier auto|host-numa|region-pinned|region]
 *          [--expect-copies N] [--expect-tiers T0,T1,..] [--die-rank R] [--stall-rank R]
 *          [--late-rank R --late-ms MS] [--timeout-ms MS]
 * (--late-rank: that rank calls eht_mpi_group_create MS late: the others give up at the deadline.)
 *
 * Memory: every rank reads every page and reports the file behind its mapping (device, inode) and
 * that file's allocated bytes (st_blocks: the tmpfs pages the copy holds); world rank 0 adds the
 * allocated bytes of each distinct file: copies = that sum / table bytes. The sum of Pss over all
 * ranks is printed too (it can overcount when one rank maps a huge page whole and another in small
 * pages), and MemAvailable before and after on world rank 0, the only measure for host-NUMA cuMem
 * memory, which has no file of its own (its mappings show one shared anonymous inode). Exit: 0 when every expectation holds, 1 otherwise,
 * 2 when a group failed (MPI_Abort after a clear message). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "eht_mpi.h"

struct report {
	int32_t node, node_rank, tier, rc, fd_foreign;
	uint64_t dev, ino, pss_kb, file_bytes, page_bytes;
	char id[EHT_NODE_ID_MAX];
	char err[200];
};

static uint64_t parse_size(const char *s)
{
	char *end = NULL;
	uint64_t v = strtoull(s, &end, 10);
	switch (end && *end ? *end : 0) {
	case 'G': case 'g': return v << 30;
	case 'M': case 'm': return v << 20;
	case 'K': case 'k': return v << 10;
	default: return v;
	}
}

static int tier_of(const char *s)
{
	if (!strcmp(s, "auto"))
		return 0;
	for (int t = EHT_TIER_HOST_NUMA; t <= EHT_TIER_REGION; t++)
		if (!strcmp(s, eht_tier_name(t)))
			return t;
	return -1;
}

static uint64_t mem_available_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	uint64_t kb = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %" SCNu64, &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* Sums Pss over the mappings that overlap [p, p + len) and gives the file (dev, inode) behind the
 * first one (0, 0 for anonymous or device memory). */
static void mapping_of(const void *p, uint64_t len, struct report *r)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	int in = 0;
	uintptr_t a = (uintptr_t)p, b = a + len;
	while (f && fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		unsigned maj, min;
		unsigned long long ino;
		uint64_t kb;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %*s %x:%x %llu", &lo, &hi, &maj, &min, &ino) == 5) {
			in = lo < b && hi > a;
			if (in && !r->ino && ino) {
				r->dev = ((uint64_t)maj << 32) | min;
				r->ino = ino;
			}
		} else if (in && sscanf(line, "Pss: %" SCNu64, &kb) == 1) {
			r->pss_kb += kb;
		}
	}
	if (f)
		fclose(f);
	/* The file's allocated blocks are the memory this copy holds (tmpfs pages), whoever maps it. */
	DIR *d = r->ino ? opendir("/proc/self/fd") : NULL;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, 0) == 0 && (uint64_t)st.st_ino == r->ino) {
			r->file_bytes = (uint64_t)st.st_blocks * 512;
			r->page_bytes = (uint64_t)st.st_blksize; /* 2 MiB on a huge page file */
			break;
		}
	}
	if (d)
		closedir(d);
}

/* Descriptors stay inside a node: node rank 0 passes a memfd holding its node identity through the
 * eht group (SCM_RIGHTS over the node's own socket); every rank must read its own node's identity.
 * Returns 0, 1 (another node's descriptor) or -errno from the group. */
static int fd_check(eht_group *g, const char *id)
{
	char got[EHT_NODE_ID_MAX] = {0};
	int fd = -1, rc;
	if (eht_group_rank(g) == 0) {
		fd = memfd_create("eht-node-id", MFD_CLOEXEC);
		if (fd < 0 || pwrite(fd, id, strlen(id) + 1, 0) != (ssize_t)(strlen(id) + 1)) {
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
	}
	rc = eht_group_broadcast_fds(g, &fd, 1);
	if (rc)
		return rc;
	if (fd < 0 || pread(fd, got, sizeof(got) - 1, 0) <= 0)
		rc = 1;
	else
		rc = strcmp(got, id) != 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

static int die(const char *why, int rc)
{
	int wrank = -1;
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	fprintf(stderr, "mpi_share: world rank %d: %s%s%s\n", wrank, why, rc ? ": " : "", rc ? eht_last_error() : "");
	MPI_Abort(MPI_COMM_WORLD, 2);
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t bytes = 64ull << 20;
	int tier = 0, expect_copies = -1, die_rank = -1, stall_rank = -1, late_rank = -1, late_ms = 0;
	uint32_t timeout_ms = 0;
	const char *expect_tiers = NULL;
	MPI_Init(&argc, &argv);
	int wrank = 0, wsize = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			fprintf(stderr, "mpi_share: %s needs a value\n", a);
			MPI_Finalize();
			return 1;
		}
		if (!strcmp(a, "--bytes"))
			bytes = parse_size(v);
		else if (!strcmp(a, "--tier"))
			tier = tier_of(v);
		else if (!strcmp(a, "--expect-copies"))
			expect_copies = atoi(v);
		else if (!strcmp(a, "--expect-tiers"))
			expect_tiers = v;
		else if (!strcmp(a, "--die-rank"))
			die_rank = atoi(v);
		else if (!strcmp(a, "--stall-rank"))
			stall_rank = atoi(v);
		else if (!strcmp(a, "--late-rank"))
			late_rank = atoi(v);
		else if (!strcmp(a, "--late-ms"))
			late_ms = atoi(v);
		else if (!strcmp(a, "--timeout-ms"))
			timeout_ms = (uint32_t)strtoul(v, NULL, 10);
		else {
			fprintf(stderr, "mpi_share: unknown option %s\n", a);
			MPI_Finalize();
			return 1;
		}
	}
	if (tier < 0 || bytes == 0) {
		fprintf(stderr, "mpi_share: bad --tier or --bytes\n");
		MPI_Finalize();
		return 1;
	}

	if (wrank == late_rank && late_ms > 0) {
		fprintf(stderr, "mpi_share: world rank %d: joining %d ms late (--late-rank)\n", wrank, late_ms);
		struct timespec ts = {late_ms / 1000, (long)(late_ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	eht_mpi_group *mg = NULL;
	struct eht_mpi_opts mo = {.size = sizeof(mo), .timeout_ms = timeout_ms, .key = "mpi-share"};
	int rc = eht_mpi_group_create(MPI_COMM_WORLD, &mo, &mg);
	if (rc)
		return die("eht_mpi_group_create failed", rc);
	eht_group *g = eht_mpi_group_eht(mg);
	timeout_ms = timeout_ms ? timeout_ms : 300000;

	/* Failure drills: a rank that vanishes (SIGKILL, no clean-up) or hangs before the collective. */
	if (wrank == die_rank) {
		fprintf(stderr, "mpi_share: world rank %d: killing myself before the share (--die-rank)\n", wrank);
		raise(SIGKILL);
	}
	if (wrank == stall_rank) {
		fprintf(stderr, "mpi_share: world rank %d: stalling before the share (--stall-rank)\n", wrank);
		for (;;)
			pause();
	}

	struct report me = {.node = eht_mpi_node_index(mg), .node_rank = eht_group_rank(g), .tier = EHT_TIER_NONE};
	eht_node_id(me.id, sizeof(me.id));
	uint64_t avail_before = wrank == 0 ? mem_available_kb() : 0;
	eht_table *t = NULL;
	struct eht_share_opts so = {.size = sizeof(so), .tier = tier, .device = -1, .row_bytes = 256, .name = "mpi-share"};
	rc = eht_table_share(bytes, g, &so, &t);
	if (rc == -ETIMEDOUT || rc == -ECONNRESET || rc == -EPROTO) {
		fprintf(stderr, "mpi_share: world rank %d (node %d rank %d): the node group failed: %s\n", wrank,
			me.node, me.node_rank, eht_last_error());
		MPI_Abort(MPI_COMM_WORLD, 2);
		return 2;
	}
	me.rc = rc;
	if (rc) {
		snprintf(me.err, sizeof(me.err), "%s", eht_last_error());
	} else {
		struct eht_table_info info = {.size = sizeof(info)};
		if (eht_table_get_info(t, &info) != 0)
			return die("eht_table_get_info failed", -EINVAL);
		me.tier = info.tier;
		volatile const uint8_t *p = info.host;
		uint64_t sum = 0;
		for (uint64_t off = 0; p && off < bytes; off += 4096)
			sum += p[off];
		(void)sum;
		if (p)
			mapping_of(info.host, bytes, &me);
	}

	rc = fd_check(g, me.id);
	if (rc < 0)
		return die("passing a descriptor inside the node failed", rc);
	me.fd_foreign = rc;

	struct report *all = calloc((size_t)wsize, sizeof(*all));
	if (!all)
		return die("out of memory", 0);
	if (eht_mpi_allgather(MPI_COMM_WORLD, &me, sizeof(me), all, timeout_ms))
		return die("a world collective failed (see above)", 0);
	int bad = 0;
	if (wrank == 0) {
		uint64_t avail_after = mem_available_kb(), pss = 0, held = 0, rounding = 0;
		int nodes = eht_mpi_node_count(mg), copies_ok = 0, have_pss = 1;
		for (int i = 0; i < wsize; i++) {
			struct report *r = &all[i];
			/* Host-NUMA cuMem memory shows in /proc/self/maps as one anonymous inode that every
			 * allocation shares and that holds no bytes: not a file that measures a copy. */
			if (r->tier == EHT_TIER_HOST_NUMA)
				r->ino = 0, r->dev = 0;
			printf("rank %d: node %d (%s) rank %d: tier %s, file %" PRIu64 ":%" PRIu64 " holding %" PRIu64
			       " bytes, Pss %" PRIu64 " kB%s%s\n", i, r->node, r->id, r->node_rank, eht_tier_name(r->tier),
			       r->dev >> 32, r->ino, r->file_bytes, r->pss_kb, r->rc ? ", error: " : "", r->rc ? r->err : "");
			pss += r->pss_kb;
			if (r->fd_foreign) {
				printf("FAIL: rank %d received a descriptor that is not its node's\n", i);
				bad = 1;
			}
			if (r->rc == 0 && !r->ino)
				have_pss = 0;
			int first = 1;
			for (int j = 0; j < i; j++)
				first &= !(all[j].ino == r->ino && all[j].dev == r->dev);
			if (r->ino && first) {
				held += r->file_bytes;
				rounding += r->page_bytes; /* a file's header and size round up to its pages */
			}
			for (int j = 0; j < i; j++) {
				struct report *q = &all[j];
				int same_node = q->node == r->node;
				/* All-or-none inside a node; one file per node, never one across nodes. */
				if (same_node && (q->tier != r->tier || !q->rc != !r->rc)) {
					printf("FAIL: node %d: ranks %d and %d ended differently\n", r->node, j, i);
					bad = 1;
				}
				if (r->ino && q->ino && same_node != (q->ino == r->ino && q->dev == r->dev)) {
					printf("FAIL: ranks %d and %d (nodes %d, %d) %s one mapping\n", j, i, q->node, r->node,
					       same_node ? "do not share" : "share");
					bad = 1;
				}
			}
		}
		for (int n = 0; n < nodes; n++)
			for (int i = 0; i < wsize; i++)
				if (all[i].node == n && all[i].rc == 0) {
					copies_ok++;
					break;
				}
		double by_file = (double)held / (double)bytes, by_pss = (double)pss * 1024.0 / (double)bytes;
		double by_avail = avail_before > avail_after ? (double)(avail_before - avail_after) * 1024.0 / (double)bytes : 0;
		printf("nodes %d, ranks %d, table %" PRIu64 " bytes: %d node copies made; memory held by the mapped "
		       "files %" PRIu64 " bytes = %.2f copies%s; sum of Pss %.2f copies; MemAvailable fell by %.2f "
		       "table sizes\n", nodes, wsize, bytes, copies_ok, held, by_file,
		       have_pss ? "" : " (some mappings have no file: cuMem memory)", by_pss, by_avail);
		if (expect_copies >= 0) {
			/* MemAvailable also moves with CUDA contexts and everything else on the machine. */
			double measured = have_pss ? by_file : by_avail, slack = have_pss ? 0.25 : 0.5;
			double over = have_pss ? (double)rounding / (double)bytes : 0;
			if (copies_ok != expect_copies || measured < expect_copies - slack ||
			    measured > expect_copies + slack + over) {
				printf("FAIL: expected %d copies, made %d, measured %.2f\n", expect_copies, copies_ok, measured);
				bad = 1;
			}
		}
		for (int n = 0; expect_tiers && n < nodes; n++) {
			char want[64] = "";
			const char *s = expect_tiers;
			for (int k = 0; k < n && s; k++)
				s = (s = strchr(s, ',')) ? s + 1 : NULL;
			if (s)
				snprintf(want, sizeof(want), "%.*s", (int)strcspn(s, ","), s);
			for (int i = 0; i < wsize; i++)
				if (all[i].node == n && strcmp(want, eht_tier_name(all[i].tier))) {
					printf("FAIL: node %d: tier %s, expected %s\n", n, eht_tier_name(all[i].tier), want);
					bad = 1;
					break;
				}
		}
		printf("%s\n", bad ? "mpi_share: FAILED" : "mpi_share: OK");
		fflush(stdout);
	}
	free(all);
	if (eht_mpi_bcast(MPI_COMM_WORLD, &bad, sizeof(bad), 0, timeout_ms))
		return die("a world collective failed (see above)", 0);
	eht_table_close(t);
	eht_mpi_group_destroy(mg);
	MPI_Finalize();
	return bad;
}
