/* SPDX-License-Identifier: Apache-2.0 */
/* sock_io.h: whole-message I/O on nonblocking Unix stream sockets, with SCM_RIGHTS descriptors and
 * deadlines (monotonic ms, eht_now_ms() of util/clock.h). Used by groups and by eht serve's attach
 * protocol. */
#ifndef EHT_OS_SOCK_IO_H
#define EHT_OS_SOCK_IO_H

#include <stddef.h>
#include <stdint.h>

/* Descriptors that travel with one message (below the kernel's SCM_MAX_FD of 253). */
#define EHT_SOCK_FDS_PER_MSG 200

/* Waits for events on fd until the deadline. Returns 0 (ready, or HUP/ERR), -ETIMEDOUT or -errno. */
int eht_sock_wait(int fd, short events, int64_t deadline);
/* Sends all of buf; fds (at most EHT_SOCK_FDS_PER_MSG) ride on the first byte. A dead peer is
 * -ECONNRESET (MSG_NOSIGNAL: never SIGPIPE). Descriptors over the user's in-flight limit wait for
 * the peers to read, until the deadline: -ETOOMANYREFS then. Returns 0, -ETIMEDOUT or -errno. */
int eht_sock_send_all(int fd, const void *buf, size_t len, const int *fds, size_t nfds, int64_t deadline);
/* Receives exactly len bytes; descriptors arriving with them go to fds (up to maxfds, *nfds counts
 * them); extra descriptors are closed and the call fails with -EPROTO, or -EMFILE where this process
 * had no room for them (its open-file limit). EOF is -ECONNRESET. */
int eht_sock_recv_all(int fd, void *buf, size_t len, int *fds, size_t maxfds, size_t *nfds, int64_t deadline);
/* Closes fds[0..n) that are >= 0 and sets them to -1. */
void eht_sock_close_fds(int *fds, size_t n);

#endif
