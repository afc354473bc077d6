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
 *     checkpoint and tensor names)}]}
 * The worker imports each table by its "tier" (eht_table_import), which checks the description
 * against the descriptors before mapping anything.
 * The worker keeps the connection open: its end of the socket is how it learns that the server is
 * gone. It sends nothing; closing is detaching. */
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

#endif
