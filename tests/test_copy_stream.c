/* SPDX-License-Identifier: Apache-2.0 */
/* test_copy_stream.c: eht_copy_stream (util/copy_stream.h) writes exactly what memcpy writes, for
 * every destination offset within a 16-byte line and lengths around the row sizes (264 B rows packed
 * back to back start 8 bytes off a line every other row), and not one byte outside [dst, dst + n). */
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "util/copy_stream.h"

int main(void)
{
	enum { CAP = 1024, GUARD = 64 };
	static uint8_t src[CAP + 32], got[CAP + 2 * GUARD + 32], want[CAP + 2 * GUARD + 32];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 131 + 7);
	static const size_t lens[] = {0, 1, 7, 8, 9, 15, 16, 17, 24, 56, 64, 256, 264, 272, 528, 1000, 1024};
	int cases = 0;
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t doff = 0; doff < 16; doff++)
			for (size_t soff = 0; soff < 16; soff += 3) {
				size_t n = lens[l];
				memset(got, 0xA5, sizeof(got));
				memset(want, 0xA5, sizeof(want));
				/* (GUARD is a multiple of 16: doff is the offset within a line) */
				eht_copy_stream(got + GUARD + doff, src + soff, n);
				eht_stream_fence();
				memcpy(want + GUARD + doff, src + soff, n);
				if (memcmp(got, want, sizeof(got)) != 0) {
					fprintf(stderr, "copy_stream: %zu bytes from +%zu to +%zu differ from memcpy\n", n, soff,
						doff);
					return 1;
				}
				cases++;
			}
	/* A batch of packed 264 B rows, as the gather writes them into staging. */
	static uint8_t rows[64 * 264], rows_want[64 * 264];
	uint8_t *big = NULL;
	CHECK(posix_memalign((void **)&big, 4096, 1 << 20) == 0);
	for (size_t i = 0; i < (1 << 20); i++)
		big[i] = (uint8_t)(i ^ (i >> 9));
	for (size_t r = 0; r < 64; r++) {
		size_t from = (r * 7919 % 3900) * 264;
		eht_copy_stream(rows + r * 264, big + from, 264);
		memcpy(rows_want + r * 264, big + from, 264);
	}
	eht_stream_fence();
	CHECK(memcmp(rows, rows_want, sizeof(rows)) == 0);
	free(big);
	printf("copy_stream: %d placements equal to memcpy, streaming stores %s\n", cases,
	       EHT_HAVE_COPY_STREAM ? "on" : "unavailable (memcpy)");
	return 0;
}
