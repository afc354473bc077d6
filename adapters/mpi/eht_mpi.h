/* SPDX-License-Identifier: Apache-2.0 */
/* eht_mpi.h: eht over MPI (libeht_mpi): node groups split from a communicator, eht's collectives on
 * the node communicator, each bounded by a deadline. libeht itself never needs MPI. */
#ifndef EHT_MPI_H
#define EHT_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "eht.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eht_mpi_group eht_mpi_group;

struct eht_mpi_opts {
	uint32_t size;       /* sizeof(struct eht_mpi_opts) */
	uint32_t flags;      /* none yet: must be 0 */
	uint32_t timeout_ms; /* deadline of every collective, and of eht_mpi_group_create as a whole;
			      * 0: $EHT_GROUP_TIMEOUT_MS or 300000 */
	const char *key;     /* names the group in messages ([A-Za-z0-9._-], 1..64); NULL: "mpi" */
};

/* Collective over comm: splits it into node groups (MPI_Comm_split_type SHARED, then by
 * eht_node_id() so that $EHT_NODE_ID can simulate several nodes on one machine) and makes an
 * eht_group over this rank's node communicator, all within one timeout_ms: it first checks that
 * every rank of comm has arrived (the splits themselves cannot be bounded), so a rank that comes
 * late makes the others fail with -ETIMEDOUT at their deadline (and itself at its own). Returns 0, -EINVAL (bad options, EHT_NODE_ID),
 * -ETIMEDOUT (a rank did not join within the deadline), -EIO (an MPI call failed) or eht_group_create's
 * errors; eht_mpi_last_error() or eht_last_error() says why. */
int eht_mpi_group_create(MPI_Comm comm, const struct eht_mpi_opts *opts, eht_mpi_group **out);
/* A node collective that passes its deadline makes the eht call fail with -ETIMEDOUT (and a message
 * on stderr naming the world rank and the operation) and leaves its MPI request pending: the job
 * cannot go on and should MPI_Abort, as examples/mpi/mpi_share.c does. */
/* Frees the eht group and the node communicator; NULL is a no-op. */
void eht_mpi_group_destroy(eht_mpi_group *group);
eht_group *eht_mpi_group_eht(const eht_mpi_group *group); /* the node's eht group */
MPI_Comm eht_mpi_node_comm(const eht_mpi_group *group);   /* the node communicator */
int eht_mpi_node_index(const eht_mpi_group *group);       /* 0..nodes-1, in order of first rank */
int eht_mpi_node_count(const eht_mpi_group *group);

/* MPI_Allgather / MPI_Bcast of bytes that give up after timeout_ms (non-blocking collectives,
 * polled): 0, -ETIMEDOUT (a rank died or stalled; the communicator is then unusable: MPI_Abort),
 * -EINVAL (len over INT_MAX) or -EIO. */
int eht_mpi_allgather(MPI_Comm comm, const void *in, size_t len, void *out, uint32_t timeout_ms);
int eht_mpi_bcast(MPI_Comm comm, void *buf, size_t len, int root, uint32_t timeout_ms);
int eht_mpi_barrier(MPI_Comm comm, uint32_t timeout_ms);
/* This thread's last libeht_mpi failure ("" when none). */
const char *eht_mpi_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
