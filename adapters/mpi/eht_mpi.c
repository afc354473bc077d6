/* SPDX-License-Identifier: Apache-2.0 */
/* eht_mpi.c: libeht_mpi: an eht_group_adapter over an MPI node communicator, with deadlines. */
#include "eht_mpi.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TIMEOUT_MS 300000u

struct eht_mpi_group {
	MPI_Comm shm, node;
	uint32_t timeout_ms;
	int64_t deadline; /* while eht_mpi_group_create runs: its one deadline for every step; else 0 */
	int node_index, node_count;
	eht_group *g;
	struct eht_group_adapter ad;
};

static _Thread_local char last_err[512];

const char *eht_mpi_last_error(void) { return last_err; }

static int fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_err, sizeof(last_err), fmt, ap);
	va_end(ap);
	/* libeht's own message for an adapter failure is generic: say the cause where users look. */
	fprintf(stderr, "eht_mpi: %s\n", last_err);
	return -err;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int world_rank(void)
{
	int r = -1;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	return r;
}

/* Polls a non-blocking collective until done or the deadline (now_ms; timeout_ms is what the
 * message names): a blocking MPI collective would wait forever for a rank that stalls (and for one
 * that died, until mpirun notices). */
static int wait_until(MPI_Request *req, MPI_Comm comm, int64_t deadline, uint32_t timeout_ms, const char *what)
{
	long sleep_ns = 20000;
	for (;;) {
		int done = 0;
		if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return fail(EIO, "world rank %d: MPI_Test of %s failed", world_rank(), what);
		if (done)
			return 0;
		if (now_ms() > deadline) {
			int n = 0;
			MPI_Comm_size(comm, &n);
			return fail(ETIMEDOUT,
				    "world rank %d: %s over %d ranks did not complete within %u ms: a rank died or "
				    "stalled (EHT_GROUP_TIMEOUT_MS sets the deadline)",
				    world_rank(), what, n, timeout_ms);
		}
		struct timespec ts = {0, sleep_ns};
		nanosleep(&ts, NULL);
		if (sleep_ns < 1000000)
			sleep_ns *= 2;
	}
}

static int allgather_until(MPI_Comm comm, const void *in, size_t len, void *out, int64_t deadline, uint32_t timeout_ms,
			   const char *what)
{
	if (len > INT_MAX)
		return fail(EINVAL, "all-gather of %zu bytes (at most %d)", len, INT_MAX);
	MPI_Request req;
	if (MPI_Iallgather(in, (int)len, MPI_BYTE, out, (int)len, MPI_BYTE, comm, &req) != MPI_SUCCESS)
		return fail(EIO, "world rank %d: MPI_Iallgather of %zu bytes failed", world_rank(), len);
	return wait_until(&req, comm, deadline, timeout_ms, what);
}

static int bcast_until(MPI_Comm comm, void *buf, size_t len, int root, int64_t deadline, uint32_t timeout_ms)
{
	if (len > INT_MAX)
		return fail(EINVAL, "broadcast of %zu bytes (at most %d)", len, INT_MAX);
	MPI_Request req;
	if (MPI_Ibcast(buf, (int)len, MPI_BYTE, root, comm, &req) != MPI_SUCCESS)
		return fail(EIO, "world rank %d: MPI_Ibcast of %zu bytes failed", world_rank(), len);
	return wait_until(&req, comm, deadline, timeout_ms, "broadcast");
}

static int barrier_until(MPI_Comm comm, int64_t deadline, uint32_t timeout_ms, const char *what)
{
	MPI_Request req;
	if (MPI_Ibarrier(comm, &req) != MPI_SUCCESS)
		return fail(EIO, "world rank %d: MPI_Ibarrier failed", world_rank());
	return wait_until(&req, comm, deadline, timeout_ms, what);
}

int eht_mpi_allgather(MPI_Comm comm, const void *in, size_t len, void *out, uint32_t timeout_ms)
{
	return allgather_until(comm, in, len, out, now_ms() + timeout_ms, timeout_ms, "all-gather");
}

int eht_mpi_bcast(MPI_Comm comm, void *buf, size_t len, int root, uint32_t timeout_ms)
{
	return bcast_until(comm, buf, len, root, now_ms() + timeout_ms, timeout_ms);
}

int eht_mpi_barrier(MPI_Comm comm, uint32_t timeout_ms)
{
	return barrier_until(comm, now_ms() + timeout_ms, timeout_ms, "barrier");
}

/* The deadline of a collective of m: eht_mpi_group_create's while it runs, else one timeout from
 * now (each operation of the group on its own). */
static int64_t deadline_of(const struct eht_mpi_group *m)
{
	return m->deadline ? m->deadline : now_ms() + m->timeout_ms;
}

/* Every rank of comm has entered eht_mpi_group_create, within the deadline. MPI_Comm_split_type
 * and MPI_Comm_split block with no deadline: they may only run once all ranks are known to be here.
 * Two rounds: a rank completes the first only once every rank posted it, and posts the second only
 * after completing the first; so a rank that completes the second knows that no rank gave up in
 * the first (a late rank whose first round completes against ranks that already timed out waits in
 * the second, and gives up at its own deadline instead of blocking in the split). */
static int all_arrived(MPI_Comm comm, int64_t deadline, uint32_t timeout_ms)
{
	int rc = barrier_until(comm, deadline, timeout_ms, "the arrival of every rank (a rank came late)");
	if (rc)
		return rc;
	char here = 1, *all = NULL;
	int n = 0;
	MPI_Comm_size(comm, &n);
	if (!(all = calloc((size_t)n, 1)))
		return fail(ENOMEM, "out of memory");
	rc = allgather_until(comm, &here, 1, all, deadline, timeout_ms, "the arrival check (a rank gave up)");
	free(all);
	return rc;
}

static int ad_bcast(void *user, void *buf, size_t len)
{
	struct eht_mpi_group *m = user;
	return bcast_until(m->node, buf, len, 0, deadline_of(m), m->timeout_ms);
}

static int ad_allgather(void *user, const void *in, size_t len, void *out)
{
	struct eht_mpi_group *m = user;
	return allgather_until(m->node, in, len, out, deadline_of(m), m->timeout_ms, "all-gather");
}

static int ad_barrier(void *user)
{
	struct eht_mpi_group *m = user;
	return barrier_until(m->node, deadline_of(m), m->timeout_ms, "barrier");
}

/* Splits the shared-memory communicator again by node identity: ranks of one machine with
 * different EHT_NODE_ID values end in different node communicators. */
static int split_by_id(struct eht_mpi_group *m)
{
	int srank = 0, ssize = 0, rc = 0;
	MPI_Comm_rank(m->shm, &srank);
	MPI_Comm_size(m->shm, &ssize);
	char mine[EHT_NODE_ID_MAX] = {0};
	rc = eht_node_id(mine, sizeof(mine));
	if (rc < 0)
		return fail(-rc, "world rank %d: %s", world_rank(), eht_last_error());
	char *all = calloc((size_t)ssize, sizeof(mine));
	if (!all)
		return fail(ENOMEM, "out of memory");
	rc = allgather_until(m->shm, mine, sizeof(mine), all, m->deadline, m->timeout_ms, "all-gather");
	int color = srank;
	for (int i = 0; !rc && i < ssize; i++)
		if (!strncmp(all + (size_t)i * sizeof(mine), mine, sizeof(mine))) {
			color = i;
			break;
		}
	free(all);
	if (rc)
		return rc;
	if (MPI_Comm_split(m->shm, color, srank, &m->node) != MPI_SUCCESS)
		return fail(EIO, "world rank %d: MPI_Comm_split by node identity failed", world_rank());
	return 0;
}

/* Numbers the nodes by their first rank in comm, so that every rank can name every node alike. */
static int number_nodes(struct eht_mpi_group *m, MPI_Comm comm)
{
	int crank = 0, csize = 0, leader = 0, rc;
	MPI_Comm_rank(comm, &crank);
	MPI_Comm_size(comm, &csize);
	leader = crank;
	rc = bcast_until(m->node, &leader, sizeof(leader), 0, m->deadline, m->timeout_ms);
	if (rc)
		return rc;
	int *leaders = calloc((size_t)csize, sizeof(int));
	if (!leaders)
		return fail(ENOMEM, "out of memory");
	rc = allgather_until(comm, &leader, sizeof(leader), leaders, m->deadline, m->timeout_ms, "all-gather");
	m->node_index = m->node_count = 0;
	for (int i = 0; !rc && i < csize; i++)
		if (leaders[i] == i) {
			if (i < leader)
				m->node_index++;
			m->node_count++;
		}
	free(leaders);
	return rc;
}

int eht_mpi_group_create(MPI_Comm comm, const struct eht_mpi_opts *opts, eht_mpi_group **out)
{
	last_err[0] = '\0';
	if (!out)
		return fail(EINVAL, "eht_mpi_group_create: NULL out");
	*out = NULL;
	if (opts && opts->size < sizeof(*opts))
		return fail(EINVAL, "eht_mpi_group_create: opts->size %u < %zu", opts->size, sizeof(*opts));
	if (opts && opts->flags)
		return fail(EINVAL, "eht_mpi_group_create: unknown flags 0x%x", opts->flags);
	struct eht_mpi_group *m = calloc(1, sizeof(*m));
	if (!m)
		return fail(ENOMEM, "out of memory");
	m->shm = m->node = MPI_COMM_NULL;
	m->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : 0;
	if (!m->timeout_ms) {
		const char *env = getenv("EHT_GROUP_TIMEOUT_MS");
		unsigned long v = env ? strtoul(env, NULL, 10) : 0;
		m->timeout_ms = v && v <= UINT32_MAX ? (uint32_t)v : DEFAULT_TIMEOUT_MS;
	}
	/* One deadline for the whole creation, every step inside it (not a timeout per step). */
	m->deadline = now_ms() + m->timeout_ms;
	int rc = all_arrived(comm, m->deadline, m->timeout_ms), crank = 0;
	if (rc)
		goto out;
	MPI_Comm_rank(comm, &crank);
	if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, crank, MPI_INFO_NULL, &m->shm) != MPI_SUCCESS) {
		rc = fail(EIO, "world rank %d: MPI_Comm_split_type(SHARED) failed", world_rank());
		goto out;
	}
	rc = split_by_id(m);
	if (!rc)
		rc = number_nodes(m, comm);
	if (rc)
		goto out;
	int nrank = 0, nsize = 0;
	MPI_Comm_rank(m->node, &nrank);
	MPI_Comm_size(m->node, &nsize);
	m->ad = (struct eht_group_adapter){.size = sizeof(m->ad), .user = m, .rank = nrank, .nranks = nsize,
					   .broadcast = ad_bcast, .allgather = ad_allgather, .barrier = ad_barrier};
	struct eht_group_opts go = {.size = sizeof(go), .timeout_ms = m->timeout_ms, .adapter = &m->ad};
	/* Its collectives at creation run through the adapter: under m->deadline still. */
	rc = eht_group_create(opts && opts->key ? opts->key : "mpi", -1, 0, &go, &m->g);
	if (rc)
		fail(-rc, "world rank %d: %s", world_rank(), eht_last_error());
	m->deadline = 0; /* from now on, a timeout per operation */
out:
	if (rc) {
		eht_mpi_group_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

void eht_mpi_group_destroy(eht_mpi_group *m)
{
	if (!m)
		return;
	eht_group_destroy(m->g);
	if (m->node != MPI_COMM_NULL)
		MPI_Comm_free(&m->node);
	if (m->shm != MPI_COMM_NULL)
		MPI_Comm_free(&m->shm);
	free(m);
}

eht_group *eht_mpi_group_eht(const eht_mpi_group *m) { return m ? m->g : NULL; }
MPI_Comm eht_mpi_node_comm(const eht_mpi_group *m) { return m ? m->node : MPI_COMM_NULL; }
int eht_mpi_node_index(const eht_mpi_group *m) { return m ? m->node_index : -1; }
int eht_mpi_node_count(const eht_mpi_group *m) { return m ? m->node_count : 0; }
