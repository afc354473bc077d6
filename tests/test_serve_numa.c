/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_numa.c: one copy of the tables per NUMA node and one CPU budget for the node, on a
 * one-node CPU machine with the topology forced (EHT_TEST_NUMA_NODES, EHT_TEST_WORKER_NUMA,
 * EHT_TEST_NUMA_AVAIL): eht serve --per-numa makes copy 0 and copy 1, a worker of node 1 gets copy
 * 1 and one of node 0 copy 0 (the same bytes, distinct memory: each worker maps the inode of its
 * copy), status shows the copies and who reads which; too little memory gives one
 * copy and a note saying why; the budget hands each worker cores / workers pool threads (at least
 * 1), EHT_THREADS and eht_lookup_opts.threads win over it; eht_table_share with EHT_SHARE_PER_NUMA
 * over 3 forked ranks on nodes 0, 1, 1 gives each its node's copy and one writer per copy. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lookup/core.h"
#include "serve/serve_impl.h"
#include "testutil.h"

/* The inode of the mapping holding addr (/proc/self/maps), 0 when none. */
static unsigned long inode_of(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	unsigned long found = 0, a = (unsigned long)addr;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		char perms[8], dev[16];
		if (sscanf(line, "%lx-%lx %7s %lx %15s %lu", &lo, &hi, perms, &off, dev, &ino) == 6 && a >= lo && a < hi) {
			found = ino;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* Attaches as a worker of NUMA node `node` (EHT_TEST_WORKER_NUMA); NULL on failure. */
static eht_client *attach_on(const char *key, int node)
{
	char v[16];
	snprintf(v, sizeof(v), "%d", node);
	t_setenv("EHT_TEST_WORKER_NUMA", v);
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 10000};
	eht_client *c = NULL;
	CHECK_RC(eht_attach(key, &ao, &c), 0);
	t_setenv("EHT_TEST_WORKER_NUMA", NULL);
	return c;
}

static struct eht_table_copy copy_of(eht_client *c, eht_table **t, struct eht_table_info *info)
{
	struct eht_table_copy cp = {.size = sizeof(cp), .index = -1};
	*t = NULL;
	*info = (struct eht_table_info){.size = sizeof(*info)};
	if (c && eht_client_table(c, 0, t) == 0) {
		CHECK_RC(eht_table_copy(*t, &cp), 0);
		CHECK_RC(eht_table_get_info(*t, info), 0);
	}
	return cp;
}

/* The pool size a CPU-only lookup engine on t gets (the process's pool is made anew: no other
 * engine holds it). */
static unsigned pool_threads(eht_table *t, unsigned threads)
{
	struct eht_lookup_opts lo = {.size = sizeof(lo), .strategy = EHT_LOOKUP_HOST, .flags = EHT_LOOKUP_CPU_ONLY,
				     .device = -1, .threads = threads};
	eht_lookup *lk = NULL;
	if (!t || eht_lookup_create(t, &lo, &lk) != 0)
		return 0;
	unsigned n = lk->nthreads;
	eht_lookup_destroy(lk);
	return n;
}

static void per_numa(const char *ckpt)
{
	char key[64];
	snprintf(key, sizeof(key), "eht-test-numa-%d", (int)getpid());
	t_setenv("EHT_TEST_NUMA_NODES", "0,1");
	struct eht_serve_opts so = {.size = sizeof(so), .key = key, .tier = EHT_TIER_REGION,
				    .flags = EHT_SERVE_PER_NUMA, .workers = 4, .cpu_budget = 8};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &so, &s), 0);
	t_setenv("EHT_TEST_NUMA_NODES", NULL);
	if (!s)
		return;
	eht_client *c1 = attach_on(key, 1), *c0 = attach_on(key, 0);
	eht_table *t1, *t0;
	struct eht_table_info i1, i0;
	struct eht_table_copy p1 = copy_of(c1, &t1, &i1), p0 = copy_of(c0, &t0, &i0);
	CHECK(p1.index == 1 && p1.count == 2 && p1.numa_node == 1 && p1.writer == 0);
	CHECK(p0.index == 0 && p0.count == 2 && p0.numa_node == 0 && p0.writer == 0);
	CHECK(p1.pool_threads == 2 && p0.pool_threads == 2); /* 8 cores for 4 workers */
	uint64_t bytes = i1.rows * i1.row_bytes;
	CHECK(t1 && t0 && i1.host && i0.host && i1.host != i0.host && bytes == 700 * 264);
	/* Same bytes as copy 0, which eht serve filled from the checkpoint as it always did. */
	struct eht_table_info srv = {.size = sizeof(srv)};
	CHECK_RC(eht_serve_table_info(s, 0, &srv), 0);
	if (t1 && t0 && i1.host && i0.host && srv.host) {
		CHECK(memcmp(i1.host, i0.host, bytes) == 0);
		CHECK(memcmp(i1.host, srv.host, bytes) == 0);
		/* Distinct memory, each worker on its own node's: the node-1 worker maps the file (or
		 * memfd) of the server's copy 1, the node-0 worker another one, copy 0's (the server's
		 * mappings are sealed read-only: compared by the inode behind each address). */
		const struct served *sv = serve_table_at(s, 0);
		struct eht_table_info c1i = {.size = sizeof(c1i)};
		CHECK(sv && sv->copies[1] && eht_table_get_info(sv->copies[1], &c1i) == 0);
		unsigned long n1 = inode_of(i1.host), n0 = inode_of(i0.host);
		CHECK(n1 && n0 && n1 != n0);
		CHECK(n1 == inode_of(c1i.host) && n0 == inode_of(srv.host));
	}
	/* The budget, and what overrides it. */
	CHECK(pool_threads(t1, 0) == 2);
	t_setenv("EHT_THREADS", "5");
	CHECK(pool_threads(t1, 0) == 5);
	t_setenv("EHT_THREADS", NULL);
	CHECK(pool_threads(t1, 3) == 3);

	/* Status: two copies, one worker each, and each worker's node and copy. */
	json_t *j = NULL, *w = NULL;
	for (int i = 0; i < 3000; i++) { /* the attach thread records a worker right after sending (30 s) */
		json_decref(j);
		j = t_serve_status(key);
		w = json_object_get(j, "workers");
		if (json_array_size(w) == 2)
			break;
		usleep(10000);
	}
	json_t *copies = json_object_get(j, "copies");
	CHECK(json_array_size(copies) == 2);
	CHECK(json_integer_value(json_object_get(json_array_get(copies, 1), "numa_node")) == 1);
	CHECK(json_integer_value(json_object_get(json_array_get(copies, 0), "workers")) == 1);
	CHECK(json_integer_value(json_object_get(json_array_get(copies, 1), "workers")) == 1);
	CHECK(json_is_null(json_object_get(j, "copies_note")));
	CHECK(json_array_size(w) == 2);
	size_t i;
	json_t *e;
	int seen = 0;
	json_array_foreach(w, i, e)
	{
		json_int_t node = json_integer_value(json_object_get(e, "numa_node"));
		CHECK(json_integer_value(json_object_get(e, "copy")) == node);
		CHECK(json_integer_value(json_object_get(e, "pool_threads")) == 2);
		seen |= 1 << node;
	}
	CHECK(seen == 3);
	json_t *b = json_object_get(j, "cpu_budget");
	CHECK(json_integer_value(json_object_get(b, "cores")) == 8 && json_integer_value(json_object_get(b, "workers")) == 4);
	CHECK(json_integer_value(json_object_get(j, "bytes")) == 2 * 2 * 700 * 264); /* both copies in memory */
	json_decref(j);

	/* `eht status` in words names both copies. */
	char out[8192], cmd[128];
	snprintf(cmd, sizeof(cmd), "status %s", key);
	CHECK(t_cli_run(cmd, 20, out, sizeof(out), NULL, 0) == 0);
	CHECK(strstr(out, "copy 1 on NUMA node 1") && strstr(out, "read by 1 worker(s)") && strstr(out, "copy 1"));
	eht_detach(c1);
	eht_detach(c0);
	CHECK_RC(eht_serve_stop(s), 0);
}

/* The copies do not fit: one copy, a note saying why, every worker on it. */
static void one_copy_when_short(const char *ckpt)
{
	char key[64];
	snprintf(key, sizeof(key), "eht-test-numa1-%d", (int)getpid());
	t_setenv("EHT_TEST_NUMA_NODES", "0,1");
	t_setenv("EHT_TEST_NUMA_AVAIL", "100K"); /* the two tables need 361 KiB */
	struct eht_serve_opts so = {.size = sizeof(so), .key = key, .tier = EHT_TIER_REGION,
				    .flags = EHT_SERVE_PER_NUMA, .workers = 16, .cpu_budget = 4};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &so, &s), 0);
	t_setenv("EHT_TEST_NUMA_NODES", NULL);
	t_setenv("EHT_TEST_NUMA_AVAIL", NULL);
	if (!s)
		return;
	eht_client *c = attach_on(key, 1);
	eht_table *t;
	struct eht_table_info info;
	struct eht_table_copy p = copy_of(c, &t, &info);
	CHECK(p.index == 0 && p.count == 1);
	CHECK(p.pool_threads == 1); /* 4 cores for 16 workers: at least one each */
	json_t *j = t_serve_status(key);
	const char *note = json_string_value(json_object_get(j, "copies_note"));
	CHECK(note && strstr(note, "do not fit") && strstr(note, "NUMA node 0 has 0.10 MiB available"));
	CHECK(json_array_size(json_object_get(j, "copies")) == 1);
	json_decref(j);
	eht_detach(c);
	CHECK_RC(eht_serve_stop(s), 0);

	/* --per-numa on a machine whose GPUs name no node (none here): one copy, saying so. */
	CHECK_RC(eht_serve_start(ckpt, &so, &s), 0);
	j = s ? t_serve_status(key) : NULL;
	note = json_string_value(json_object_get(j, "copies_note"));
	CHECK(note && strstr(note, "no GPU of this machine names its NUMA node"));
	json_decref(j);
	CHECK_RC(eht_serve_stop(s), 0);
	/* A node list naming a node this machine lacks is an error, not a silent single copy. */
	static const int bad_nodes[] = {0, 4000};
	struct eht_serve_opts bo = so;
	bo.numa_nodes = bad_nodes;
	bo.nnuma_nodes = 2;
	CHECK_RC(eht_serve_start(ckpt, &bo, &s), -EINVAL);
	CHECK(strstr(eht_last_error(), "NUMA node 4000: no such node"));
	char out[2048], cmd[700];
	snprintf(cmd, sizeof(cmd), "serve %s --per-numa=0,x", ckpt);
	CHECK(t_cli_run(cmd, 20, out, sizeof(out), out, sizeof(out)) == 2 && strstr(out, "--per-numa=NODES"));
	snprintf(cmd, sizeof(cmd), "serve %s --workers 0", ckpt);
	CHECK(t_cli_run(cmd, 20, out, sizeof(out), out, sizeof(out)) == 2 && strstr(out, "--workers takes a count"));

	/* Without --cpu-budget: the usable cores less 2 per worker, shared. */
	t_setenv("EHT_TEST_CORES", "20");
	struct eht_serve_opts d = {.size = sizeof(d), .key = key, .tier = EHT_TIER_REGION, .workers = 4};
	CHECK_RC(eht_serve_start(ckpt, &d, &s), 0);
	t_setenv("EHT_TEST_CORES", NULL);
	c = s ? attach_on(key, 0) : NULL;
	p = copy_of(c, &t, &info);
	CHECK(p.index == 0 && p.count == 1 && p.pool_threads == 3); /* (20 - 2 x 4) / 4 */
	CHECK(pool_threads(t, 0) == 3);
	eht_detach(c);
	CHECK_RC(eht_serve_stop(s), 0);
}

/* eht_table_share, EHT_SHARE_PER_NUMA: rank r on node nodes[r]. */
#define RANKS 3
static const int rank_node[RANKS] = {0, 1, 1};
#define SHARE_BYTES (1u << 20)

static int rank_main(const char *gkey, int rank, int short_mem)
{
	char v[16];
	snprintf(v, sizeof(v), "%d", rank_node[rank]);
	t_setenv("EHT_TEST_WORKER_NUMA", v);
	if (short_mem)
		t_setenv("EHT_TEST_NUMA_AVAIL", "512K");
	eht_group *g = NULL;
	struct eht_group_opts go = {.size = sizeof(go), .timeout_ms = 20000};
	if (eht_group_create(gkey, rank, RANKS, &go, &g))
		return 3;
	struct eht_share_opts so = {.size = sizeof(so), .flags = EHT_SHARE_PER_NUMA, .tier = EHT_TIER_REGION,
				    .device = -1, .name = "numa-share"};
	eht_table *t = NULL;
	int bad = 0;
	if (eht_table_share(SHARE_BYTES, g, &so, &t) != 0)
		return 4;
	struct eht_table_copy cp = {.size = sizeof(cp)};
	struct eht_table_info info = {.size = sizeof(info)};
	bad |= eht_table_copy(t, &cp) != 0 || eht_table_get_info(t, &info) != 0;
	if (!info.host)
		return 5;
	if (short_mem)
		bad |= (cp.count != 1 || cp.index != 0 || cp.writer != (rank == 0)) << 1;
	else
		bad |= (cp.count != 2 || cp.index != rank_node[rank] || cp.numa_node != rank_node[rank] ||
			cp.writer != (rank < 2)) << 2;
	/* Each writer fills its copy with the same bytes, then copy 0's writer marks a byte: ranks of
	 * node 1 (copy 1) must not see it, with two copies. */
	if (cp.writer)
		memset(info.host, 0xab, SHARE_BYTES);
	bad |= (eht_group_barrier(g) != 0) << 3;
	unsigned char *p = info.host;
	bad |= (p[SHARE_BYTES - 1] != 0xab) << 4;
	if (rank == 0)
		p[7] = 0x11;
	bad |= (eht_group_barrier(g) != 0) << 3;
	int see = p[7] == 0x11;
	bad |= (see != (short_mem || rank_node[rank] == 0)) << 5;
	bad |= (eht_group_barrier(g) != 0) << 3;
	eht_table_close(t);
	eht_group_destroy(g);
	return bad ? 10 + bad : 0;
}

static void share_per_numa(int short_mem)
{
	char gkey[64];
	snprintf(gkey, sizeof(gkey), "numa-share-%d-%d", (int)getpid(), short_mem);
	pid_t pids[RANKS];
	for (int r = 0; r < RANKS; r++) {
		pids[r] = fork();
		if (pids[r] == 0)
			_exit(rank_main(gkey, r, short_mem));
	}
	for (int r = 0; r < RANKS; r++) {
		int st = 0;
		CHECK(waitpid(pids[r], &st, 0) == pids[r]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fprintf(stderr, "share rank %d (short memory %d): status 0x%x\n", r, short_mem, st);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	char *dir = t_tmpdir("numa");
	char ckpt[600];
	snprintf(ckpt, sizeof(ckpt), "%s/ck", dir);
	struct eht_synth_opts so = {.size = sizeof(so), .rows = 700};
	CHECK_RC(eht_synth_checkpoint(ckpt, &so), 0);
	per_numa(ckpt);
	one_copy_when_short(ckpt);
	share_per_numa(0);
	share_per_numa(1);
	t_rmtree(dir);
	return t_done();
}
