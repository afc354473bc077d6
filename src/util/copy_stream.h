/* SPDX-License-Identifier: Apache-2.0 */
/* copy_stream.h: copies whose stores bypass the CPU's caches (non-temporal), for rows gathered into a
 * buffer that the copy engine reads next, not this CPU. A plain store first reads the destination's
 * line into the cache (a read for ownership) and later writes it back: for a batch's staging, larger
 * than the cache a thread gets, that doubles the memory traffic of the gather's writes. Streaming
 * stores write whole lines straight to memory. They are weakly ordered: eht_stream_fence() must run
 * before another thread, or the GPU, is told the rows are there. */
#ifndef EHT_UTIL_COPY_STREAM_H
#define EHT_UTIL_COPY_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define EHT_HAVE_COPY_STREAM 1
#else
#define EHT_HAVE_COPY_STREAM 0
#endif

/* Copies n bytes from src to dst, with streaming stores where dst and n are multiples of 8 (rows of
 * 264 B packed back to back: every other one starts 8 bytes off a 16-byte line), else memcpy. */
static inline void eht_copy_stream(void *restrict dst, const void *restrict src, size_t n)
{
#if EHT_HAVE_COPY_STREAM
	uint8_t *d = dst;
	const uint8_t *s = src;
	if ((((uintptr_t)d | n) & 7) == 0) {
		size_t o = 0;
		if (((uintptr_t)d & 15) && n >= 8) {
			long long v;
			memcpy(&v, s, 8);
			_mm_stream_si64((long long *)(void *)d, v);
			o = 8;
		}
		for (; o + 16 <= n; o += 16)
			_mm_stream_si128((__m128i *)(void *)(d + o), _mm_loadu_si128((const __m128i *)(const void *)(s + o)));
		if (o < n) {
			long long v;
			memcpy(&v, s + o, 8);
			_mm_stream_si64((long long *)(void *)(d + o), v);
		}
		return;
	}
#endif
	memcpy(dst, src, n);
}

/* Makes every streaming store of this thread visible before the stores that follow it (a chunk's
 * ready flag, a doorbell's answer). */
static inline void eht_stream_fence(void)
{
#if EHT_HAVE_COPY_STREAM
	_mm_sfence();
#endif
}

#endif
