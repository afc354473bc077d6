/* SPDX-License-Identifier: Apache-2.0 */
/* serve_proto.h: the attach protocol between `eht serve` and its workers.
 *
 * The server listens on the abstract Unix socket "eht.serve.<uid>.<key>". A worker first sends one
 * struct serve_request (its GPU and NUMA node: which copy of the tables it gets when there is one
 * per NUMA node, and what `eht status` shows); a server waits for it at most SERVE_REQUEST_MS
 * (SERVE_REQUEST_COPIES_MS with several copies), then treats the worker as one of an older eht
 * (copy 0, device unknown). For each worker that
 * connects (same uid, root, or the EHT_SERVE_ALLOW_GID group) it sends one struct serve_hello, then hello.json_len bytes of JSON
 * describing every table, then hello.nfds descriptors in batches of at most EHT_SOCK_FDS_PER_MSG,
 * each batch riding on one byte. The JSON (version 1):
 *   {"key": K, "copy": {"index", "count", "numa_node"} (the copy of every table this worker gets),
 *    "pool_threads": n (the server's CPU budget for this worker's lookup pool; 0: none),
 *    "tables": [{"name", "tier", "rows", "row_bytes", "fds": [first, count], and the
 *     fields the tier's export adds (eht_table_export; each tier's folder under src/table says which:
 *     host-numa the layout and FABRIC handles, region the data offset and file size, disk the
 *     checkpoint and tensor names), and for a table served with a hot set "hotset": {"rows": n,
 *     "fd": index} (one descriptor after the table's span: a sealed read-only memfd of the hot-set
 *     format, serve_hot.c)}]}
 * The worker imports each table by its "tier" (eht_table_import), which checks the description
 * against the descriptors before mapping anything; a hot set is checked (regular file of 16 + 8 n
 * bytes, sealed, header count n, rows distinct and inside the table) before the table keeps it. A
 * worker of an older eht ignores "hotset" and closes its descriptor with the rest.
 * The worker keeps the connection open: its end of the socket is how it learns that the server is
 * gone. It sends nothing; closing is detaching.
 * Trust: the worker reads nothing before SO_PEERCRED says the server is its own uid or root (anyone
 * can bind an abstract name first; a group is never trusted, any member could). The server serves
 * its own uid, root, and with EHT_SERVE_ALLOW_GID=G the members of group G; such a worker of
 * another uid (with EHT_SERVE_ALLOW_GID=G set too) looks for root's name when its own uid's is not
 * served. A region's
 * descriptor is a read-only open of a file without write bits; the worker checks with fstat that
 * it is a regular file covering file_bytes, and maps it PROT_READ. Each worker is sent its tables
 * by a thread of its own, under a deadline. */
#ifndef EHT_SERVE_SERVE_PROTO_H
#define EHT_SERVE_SERVE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#define SERVE_MAGIC 0x53544845u /* "EHTS" */
#define SERVE_VERSION 1u
#define SERVE_KEY_MAX 64
#define SERVE_JSON_MAX (64u << 20)
#define SERVE_FDS_MAX 65536u

#define SERVE_REQ_MAGIC 0x51544845u /* "EHTQ" */
#define SERVE_REQUEST_MS 250
#define SERVE_REQUEST_COPIES_MS 3000

struct serve_request {
	uint32_t magic;
	uint32_t version;
	int32_t device;    /* the worker's GPU, -1: none */
	int32_t numa_node; /* its GPU's host NUMA node, else its CPU's (EHT_TEST_WORKER_NUMA in tests) */
	uint32_t flags;    /* 0 */
	uint32_t pad;
};

struct serve_hello {
	uint32_t magic;
	uint32_t version;
	int32_t status;    /* 0, or the server's -errno (then json holds {"error": message}) */
	uint32_t json_len;
	uint32_t nfds;
	uint32_t pad;
};

/* Fills the abstract address for key ("eht.serve.<euid>.<key>"; serve_addr_of: of that uid);
 * returns 0, or -EINVAL (bad key, with a message). */
int serve_addr(const char *key, struct sockaddr_un *addr, socklen_t *len);
int serve_addr_of(const char *key, unsigned uid, struct sockaddr_un *addr, socklen_t *len);
/* The credentials of the peer of a connected Unix socket. Returns 0 or -errno (no message). */
struct ucred;
int serve_peer(int fd, struct ucred *cred);
/* The group EHT_SERVE_ALLOW_GID names, or -1 (unset or not a number). */
long serve_allowed_gid(void);
/* Server side: whether the client on fd (a worker, or `eht status`) is served: its uid is ours or
 * root, or it is a member of group gid (EHT_SERVE_ALLOW_GID when the server started; -1: none) by
 * its gid or a supplementary group (SO_PEERGROUPS). Fills *cred; returns 0, -EACCES or -errno (no
 * message). */
int serve_client_allowed(int fd, long gid, struct ucred *cred);
/* Client side: whether to trust the server holding fd's other end: its uid is ours or root, never
 * anyone else (a group's member could bind the name first). what is "attach" or "status".
 * Returns 0, or -EPERM naming the key and the peer's uid. */
int serve_peer_trusted(int fd, const char *what, const char *key);
/* eht_serve_start found a name of the key (what: "key", "status name of key") bound: -EADDRINUSE
 * with a message naming who holds it. */
int serve_name_taken(const char *what, const char *key, const struct sockaddr_un *addr, socklen_t alen);
/* Connects a non-blocking socket to addr, waiting at most until deadline (eht_now_ms) when the
 * listener's backlog is full: *fd is the connected socket, or -1. Returns 0, -ECONNREFUSED (no
 * listener: ENOENT too), -ETIMEDOUT or -errno; no message. */
int serve_connect(const struct sockaddr_un *addr, socklen_t len, int64_t deadline, int *fd);

#endif
