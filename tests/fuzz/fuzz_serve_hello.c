/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_serve_hello.c: libFuzzer target for what a worker parses from `eht serve`: the hello and
 * the JSON table descriptions, as received on its socket. Input: byte 0 picks the hello's fields
 * (status, a json_len that lies, nfds), the rest is the JSON. Any input must fail with a message
 * or attach; never crash, hang or leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eht.h"
#include "serve/serve_client.h"
#include "serve/serve_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 60000) /* the whole answer must fit the socket buffer: no reader thread */
		return 0;
	static int once;
	if (!once) {
		setenv("EHT_NO_CUDA", "1", 1);
		setenv("EHT_LOG", "error", 1);
		eht_settings_reload(); /* libeht reads its settings once */
		once = 1;
	}
	uint8_t mode = data[0];
	const char *json = (const char *)data + 1;
	size_t jlen = size - 1;
	struct serve_hello h = {.magic = SERVE_MAGIC, .version = SERVE_VERSION, .json_len = (uint32_t)jlen};
	if (mode & 1)
		h.status = -(int32_t)(mode >> 4);
	if (mode & 2)
		h.json_len += (mode >> 4); /* claims more than is sent: the read must end, not hang */
	if (mode & 4)
		h.nfds = mode >> 5; /* descriptors announced but never sent */
	if (mode & 8)
		h.magic ^= 1;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return 0;
	if (write(sv[0], &h, sizeof(h)) != (ssize_t)sizeof(h) || write(sv[0], json, jlen) != (ssize_t)jlen) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	shutdown(sv[0], SHUT_WR);
	struct eht_attach_opts o = {.size = sizeof(o), .device = -1, .timeout_ms = 200};
	eht_client *c = NULL;
	int rc = serve_attach_fd(sv[1], "fuzz", &o, &c);
	if (rc == 0) {
		/* Walk what was attached: every table's info must be sane. */
		for (size_t i = 0; i < eht_client_table_count(c); i++) {
			eht_table *t = NULL;
			struct eht_table_info info = {.size = sizeof(info)};
			if (eht_client_table(c, i, &t) != 0 || eht_table_get_info(t, &info) != 0 || !info.name)
				abort();
		}
		eht_detach(c);
	} else if (!eht_last_error()[0]) {
		abort(); /* every failure must say why */
	}
	close(sv[0]);
	return 0;
}
