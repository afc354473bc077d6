/* SPDX-License-Identifier: Apache-2.0 */
/* test_region_basic.c: names, sizes, geometry, modes, timeouts, open-only, list states, double close. */
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "os/numa.h"
#include "region_testutil.h"

static const char *dir;

static struct eht_region_opts opts(uint32_t flags)
{
	struct eht_region_opts o = {.size = sizeof(o), .flags = flags, .dir = dir, .timeout_s = 5};
	return o;
}

static void bad_names(void)
{
	static const char *bad[] = {"", "..", "a..b", ".hidden", "a/b", "a b", "x\n", "/abs", "é", "a*"};
	struct eht_region_opts o = opts(EHT_REGION_KEEP);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		eht_region *r = (eht_region *)1;
		CHECK_RC(eht_region_open(bad[i], 4096, &o, &r), -EINVAL);
		CHECK(r == NULL);
		CHECK_RC(eht_region_unlink(bad[i], dir), -EINVAL);
	}
	eht_region *r = NULL;
	CHECK_RC(eht_region_open(NULL, 4096, &o, &r), -EINVAL);
	char longname[202];
	memset(longname, 'a', 201);
	longname[201] = '\0';
	CHECK_RC(eht_region_open(longname, 4096, &o, &r), -EINVAL);
	longname[200] = '\0'; /* 200 characters are allowed */
	CHECK_RC(eht_region_open(longname, 4096, &o, &r), 0);
	CHECK(r && eht_region_is_creator(r));
	CHECK_RC(eht_region_close(&r), 0);
	/* Nothing was ever left behind: the creator closed before ready, which removes it. */
	CHECK(r_count_files(dir) == 0);
}

static void bad_options(void)
{
	eht_region *r = NULL;
	struct eht_region_opts o = opts(0);
	CHECK_RC(eht_region_open("x", 4096, &o, &r), -EINVAL); /* no unlink policy chosen */
	o.flags = EHT_REGION_KEEP | EHT_REGION_UNLINK_WHEN_MAPPED;
	CHECK_RC(eht_region_open("x", 4096, &o, &r), -EINVAL);
	o.flags = EHT_REGION_UNLINK_WHEN_MAPPED; /* expected_peers 0 */
	CHECK_RC(eht_region_open("x", 4096, &o, &r), -EINVAL);
	o.flags = EHT_REGION_KEEP | 0x80000000u;
	CHECK_RC(eht_region_open("x", 4096, &o, &r), -EINVAL);
	o.flags = EHT_REGION_KEEP;
	o.size = 0; /* not set (smaller sizes of older callers are accepted: test_opts_size) */
	CHECK_RC(eht_region_open("x", 4096, &o, &r), -EINVAL);
	o = opts(EHT_REGION_KEEP);
	CHECK_RC(eht_region_open("x", 0, &o, &r), -EINVAL);
	o.rows = 10;
	o.row_bytes = 100;
	CHECK_RC(eht_region_open("x", 4096, &o, &r), -EINVAL); /* 1000 != 4096 */
	o.flags |= EHT_REGION_NUMA_NODE;
	o.numa_node = 100000;
	CHECK_RC(eht_region_open("x", 1000, &o, &r), -EINVAL);
	CHECK_RC(eht_region_open("x", 4096, NULL, NULL), -EINVAL);
	CHECK(r_count_files(dir) == 0);
	/* The lifecycle is never changed silently; open-only of a missing region is -ENOENT. */
	o = opts(EHT_REGION_OPEN_ONLY);
	CHECK_RC(eht_region_open("missing", 0, &o, &r), -ENOENT);
	CHECK(strstr(eht_last_error(), "missing") != NULL);
	CHECK_RC(eht_region_unlink("missing", dir), -ENOENT);
}

static void create_reopen_sizes(void)
{
	struct eht_region_opts o = opts(EHT_REGION_KEEP);
	o.rows = 1000;
	o.row_bytes = 264;
	const uint64_t bytes = 264000;
	eht_region *c = NULL, *r = NULL;
	CHECK_RC(eht_region_open("geo", bytes, &o, &c), 0);
	if (!c)
		return;
	CHECK(eht_region_is_creator(c) && !eht_region_is_ready(c));
	CHECK(eht_region_bytes(c) == bytes && eht_region_rows(c) == 1000 && eht_region_row_bytes(c) == 264);
	CHECK(((uintptr_t)eht_region_data(c) % 4096) == 0);
	CHECK(!eht_region_is_pinned(c) && eht_region_device_ptr(c) == 0 && eht_region_device(c) == -1);
	CHECK(strcmp(eht_region_name(c), "geo") == 0);
	r_fill(eht_region_data(c), bytes, 7);

	char path[512];
	snprintf(path, sizeof(path), "%s/eht.geo", dir);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(st.st_uid == geteuid());

	/* While building, list says so. */
	struct eht_region_entry *v = NULL;
	int n = eht_region_list(dir, &v);
	CHECK(n == 1);
	if (n == 1) {
		CHECK(strcmp(v[0].name, "geo") == 0);
		CHECK(v[0].state == EHT_REGION_STATE_BUILDING);
		CHECK(v[0].creator_pid == getpid() && v[0].creator_alive);
		CHECK(v[0].bytes == bytes && v[0].rows == 1000 && v[0].mode == 0600);
		CHECK(v[0].allocated >= bytes); /* populated up front */
	}
	eht_region_list_free(v);

	/* An opener times out while the creator has not marked it ready, and says which region. */
	struct eht_region_opts w = opts(EHT_REGION_KEEP);
	w.timeout_s = 0.3;
	CHECK_RC(eht_region_open("geo", bytes, &w, &r), -ETIMEDOUT);
	CHECK(strstr(eht_last_error(), "geo") != NULL);
	CHECK(r == NULL);
	CHECK_RC(eht_region_mark_ready(c), 0);
	CHECK_RC(eht_region_mark_ready(c), -EALREADY);

	/* Wrong size, wrong geometry, wrong lifecycle: -EINVAL naming both. */
	CHECK_RC(eht_region_open("geo", bytes + 1, &w, &r), -EINVAL);
	CHECK(strstr(eht_last_error(), "264000") && strstr(eht_last_error(), "264001"));
	struct eht_region_opts g = opts(EHT_REGION_KEEP);
	g.rows = 2000;
	g.row_bytes = 132;
	CHECK_RC(eht_region_open("geo", bytes, &g, &r), -EINVAL);
	CHECK(strstr(eht_last_error(), "2000") && strstr(eht_last_error(), "1000"));
	struct eht_region_opts u = opts(EHT_REGION_UNLINK_WHEN_MAPPED);
	u.expected_peers = 2;
	CHECK_RC(eht_region_open("geo", bytes, &u, &r), -EINVAL);

	/* A right open sees the bytes; open-only with size 0 takes any size. */
	CHECK_RC(eht_region_open("geo", bytes, &o, &r), 0);
	CHECK(r && !eht_region_is_creator(r) && eht_region_is_ready(r));
	if (r)
		CHECK(r_hash(eht_region_data(r), bytes) == r_hash(eht_region_data(c), bytes));
	CHECK_RC(eht_region_mark_ready(r), -EINVAL);
	eht_region *r2 = NULL;
	struct eht_region_opts oo = opts(EHT_REGION_OPEN_ONLY);
	CHECK_RC(eht_region_open("geo", 0, &oo, &r2), 0);
	CHECK(r2 && eht_region_bytes(r2) == bytes && eht_region_rows(r2) == 1000);

	n = eht_region_list(dir, &v);
	CHECK(n == 1 && v[0].state == EHT_REGION_STATE_READY);
	eht_region_list_free(v);

	/* Close is idempotent: the second close of the same handle is a no-op. */
	CHECK_RC(eht_region_close(&r2), 0);
	CHECK(r2 == NULL);
	CHECK_RC(eht_region_close(&r2), 0);
	CHECK_RC(eht_region_close(&r), 0);
	CHECK_RC(eht_region_close(&c), 0);
	CHECK_RC(eht_region_close(&c), 0);
	CHECK_RC(eht_region_close(NULL), 0);

	/* Kept, mapped by nobody: idle; gc leaves it; unlink removes it. */
	n = eht_region_list(dir, &v);
	CHECK(n == 1 && v[0].state == EHT_REGION_STATE_IDLE);
	eht_region_list_free(v);
	CHECK_RC(eht_region_gc(dir, 0, NULL, NULL), 0);
	CHECK(r_count_files(dir) == 1);
	CHECK_RC(eht_region_unlink("geo", dir), 0);
	CHECK(r_count_files(dir) == 0);
}

static void group_mode(void)
{
	struct eht_region_opts o = opts(EHT_REGION_UNLINK_WHEN_MAPPED | EHT_REGION_GROUP);
	o.expected_peers = 2;
	o.gid = getegid();
	eht_region *c = NULL;
	mode_t old = umask(077); /* the mode asked for wins over the umask */
	CHECK_RC(eht_region_open("grp", 8192, &o, &c), 0);
	umask(old);
	char path[512];
	snprintf(path, sizeof(path), "%s/eht.grp", dir);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0660 && st.st_gid == getegid());
	CHECK_RC(eht_region_mark_ready(c), 0);
	CHECK(r_count_files(dir) == 1); /* one of two peers attached */
	eht_region *p = NULL;
	CHECK_RC(eht_region_open("grp", 8192, &o, &p), 0);
	CHECK(r_count_files(dir) == 0); /* the second peer unlinked it; the memory lives while mapped */
	if (p && c) {
		((volatile char *)eht_region_data(c))[100] = 42;
		CHECK(((volatile char *)eht_region_data(p))[100] == 42);
	}
	CHECK_RC(eht_region_close(&p), 0);
	CHECK_RC(eht_region_close(&c), 0);
}

static void thp_region(void)
{
	struct eht_region_opts o = opts(EHT_REGION_UNLINK_WHEN_MAPPED | EHT_REGION_THP);
	o.expected_peers = 1;
	eht_region *c = NULL;
	CHECK_RC(eht_region_open("thp", 3u << 20, &o, &c), 0);
	if (!c)
		return;
	CHECK(((uintptr_t)eht_region_data(c) % (2u << 20)) == 0);
	CHECK(eht_region_page_size(c) == (2u << 20) || eht_region_page_size(c) == 4096);
	memset(eht_region_data(c), 1, 3u << 20);
	CHECK_RC(eht_region_mark_ready(c), 0);
	CHECK(r_count_files(dir) == 0); /* one expected peer: unlinked at ready */
	CHECK_RC(eht_region_close(&c), 0);
}

static void numa_node0(void)
{
	struct eht_region_opts o = opts(EHT_REGION_UNLINK_WHEN_MAPPED | EHT_REGION_NUMA_NODE);
	o.expected_peers = 1;
	o.numa_node = 0;
	eht_region *c = NULL;
	CHECK_RC(eht_region_open("numa0", 4u << 20, &o, &c), 0);
	if (!c)
		return;
	CHECK(eht_region_numa_node(c) == 0);
	int where = eht_numa_node_of(eht_region_data(c));
	CHECK(where == -1 || where == 0); /* -1: get_mempolicy not allowed here */
	/* mbind itself: binding an anonymous range to node 0 works or is refused by a sandbox. */
	void *m = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int b = eht_numa_bind(m, 1u << 20, 0, true);
	CHECK(b == 0 || b == -EPERM || b == -ENOSYS);
	CHECK_RC(eht_numa_bind(m, 1u << 20, -1, true), -EINVAL);
	munmap(m, 1u << 20);
	CHECK_RC(eht_region_mark_ready(c), 0);
	CHECK_RC(eht_region_close(&c), 0);
}

int main(void)
{
	dir = r_tmpdir("region-basic");
	bad_names();
	bad_options();
	create_reopen_sizes();
	group_mode();
	thp_region();
	numa_node0();
	CHECK(r_count_files(dir) == 0);
	t_rmtree(dir);
	return t_done();
}
