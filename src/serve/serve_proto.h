/* SPDX-License-Identifier: Apache-2.0 */
/* serve_proto.h: the attach protocol between `eht serve` and its workers.
 *
 * The server listens on the abstract Unix socket "eht.serve.<uid>.<key>". For each worker that
 * connects (same uid, or root) it sends one struct serve_hello, then hello.json_len bytes of JSON
 * describing every table, then hello.nfds descriptors in batches of at most EHT_SOCK_FDS_PER_MSG,
 * each batch riding on one byte. The JSON (version 1):
 *   {"key": K, "tables": [{"name", "tier", "rows", "row_bytes", "fds": [first, count], and the
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
 * Trust: the worker reads nothing before SO_PEERCRED says the server is its own uid, root, or of
 * the group EHT_SERVE_ALLOW_GID names (anyone can bind an abstract name first). A region's
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

struct serve_hello {
	uint32_t magic;
	uint32_t version;
	int32_t status;    /* 0, or the server's -errno (then json holds {"error": message}) */
	uint32_t json_len;
	uint32_t nfds;
	uint32_t pad;
};

/* Fills the abstract address for key; returns its length, or -EINVAL (bad key, with a message). */
int serve_addr(const char *key, struct sockaddr_un *addr, socklen_t *len);
/* The credentials of the peer of a connected Unix socket. Returns 0 or -errno (no message). */
struct ucred;
int serve_peer(int fd, struct ucred *cred);
/* Whether a worker trusts the server on fd: its uid is ours or root, or its gid is the one
 * EHT_SERVE_ALLOW_GID names. Returns 0, or -EPERM naming the key and the peer's uid. */
int serve_peer_trusted(int fd, const char *key);

#endif
