/* SPDX-License-Identifier: Apache-2.0 */
/* serve_status.h: what a running server tells `eht status` (private to src/serve).
 *
 * Beside its attach socket, a server listens on the abstract Unix socket
 * "eht.status.<uid>.<key>". A client (same uid, root, or of the EHT_SERVE_ALLOW_GID group) connects and receives a uint32 length then
 * that many bytes of JSON: {"key", "checkpoint", "pid", "uid", "device", "state": "loading" | "ready", "ready": bool, "uptime_s", "bytes" (in memory, once ready), "loaded_bytes" and "load_bytes" (loading
 * progress), "tables": [{"name", "tier",
 * "rows", "row_bytes", "bytes", "numa_node", "page_size", "cpu_page_size" and "cpu_pages" (eht_table_page_size, and in words), and with a hot set "hotset_rows" and
 * "hotset" (its file)}], "workers": [{"pid", "uid", "gid",
 * "device", "attached_s", "numa_node", "copy", "pool_threads"}], "copies": [{"index", "numa_node",
 * "bytes", "workers"}] (one entry without --per-numa), "copies_note" (why one copy where more were
 * asked for, else null), "cpu_budget": {"cores", "workers", "per_worker", "usable_cores", "source"}.
 * A worker's device, node and copy are null when it did not say them (an older eht). */
#ifndef EHT_SERVE_SERVE_STATUS_H
#define EHT_SERVE_SERVE_STATUS_H

#include <stdint.h>

#include "eht.h"

struct serve_status;

/* Starts answering status queries for key (checkpoint path, the GPU the tables are placed for) to
 * whom the attach socket serves (allow_gid: serve_client_allowed). Returns 0 or -errno; -EADDRINUSE
 * (someone holds the status name) fails the server like a taken key, any other error leaves it
 * without status. */
int serve_status_start(const char *key, const char *path, int device, long allow_gid, struct serve_status **out);
/* Puts the status's progress callback (loaded_bytes / load_bytes while loading) in front of the
 * caller's, which it still calls. */
void serve_status_wrap_progress(struct serve_status *st, eht_serve_progress_fn *fn, void **arg);
/* The tables are loaded and attaches are served: records their description. */
void serve_status_ready(struct serve_status *st, const eht_server *server);
/* A worker attached on socket fd / the worker of socket fd is gone. */
void serve_status_attached(struct serve_status *st, int fd);
void serve_status_detached(struct serve_status *st, int fd);
/* What the worker of socket fd said (GPU, NUMA node; -1: unknown), the copy it was sent and its
 * pool's thread budget. */
void serve_status_placed(struct serve_status *st, int fd, int device, int numa_node, int copy, unsigned pool_threads);
/* Stops answering and frees; NULL is a no-op. */
void serve_status_stop(struct serve_status *st);

#endif
