/* SPDX-License-Identifier: Apache-2.0 */
/* engram_hash.cu: Engram n-gram hashing, one thread per (token, layer, column) row id; the same
 * integer steps as the CPU (src/engram/hash_cpu.c), so the rows are bit-identical. Launched through
 * the driver API (src/engram/hash_gpu.c). */
#include <stdint.h>

#include "gpu/kernels/compat.h"

#define HIST_UNKNOWN (-1)
#define HIST_BLOCK (-2)

/* tab: the layout as uint64: mult[n_layers][max_ngram], then mod, off, rcp [n_layers][cols].
 * layer_sel < 0: rows[token][layer][col]; else only that layer: rows[token][col]. Entries the CPU
 * would reject (a token outside the map / vocabulary, a history entry < -2, starts out of order)
 * give -1 (a dead id) instead. */
extern "C" __global__ void eht_engram_hash_kernel(const unsigned long long *tab, unsigned n_layers, unsigned max_ngram,
						  unsigned n_heads, unsigned cols, long long pad,
						  unsigned long long vocab, const int *map, unsigned map_len,
						  const int *tokens, const unsigned char *dead, const unsigned *starts,
						  unsigned n_req, const int *hist, unsigned long long n_tokens,
						  int layer_sel, int *rows)
{
	const unsigned nl = layer_sel < 0 ? n_layers : 1u;
	const unsigned long long total = n_tokens * nl * cols;
	const unsigned long long *mult = tab, *mod = tab + (size_t)n_layers * max_ngram;
	const unsigned long long *off = mod + (size_t)n_layers * cols, *rcp = off + (size_t)n_layers * cols;
	const unsigned hl = max_ngram - 1;
	for (unsigned long long idx = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; idx < total;
	     idx += (unsigned long long)gridDim.x * blockDim.x) {
		unsigned c = (unsigned)(idx % cols);
		unsigned long long tl = idx / cols;
		unsigned li = layer_sel < 0 ? (unsigned)(tl % nl) : (unsigned)layer_sel;
		unsigned long long i = tl / nl;
		/* the request holding token i: the last r with starts[r] <= i */
		unsigned lo = 0, hi = n_req;
		while (hi - lo > 1) {
			unsigned mid = (lo + hi) / 2;
			if (starts[mid] <= i)
				lo = mid;
			else
				hi = mid;
		}
		unsigned long long s0 = starts[lo];
		bool bad = i < s0, blocked = false;
		unsigned top = c / n_heads + 1; /* R accumulates s = 0 .. top */
		unsigned long long R = 0;
		for (unsigned s = 0; s <= top && !bad; s++) {
			int e;
			if (i >= s0 + s) {
				unsigned long long j = i - s;
				int t = tokens[j];
				if (dead && dead[j]) {
					e = HIST_BLOCK;
				} else if (map) {
					bad |= t < 0 || (unsigned)t >= map_len;
					e = bad ? 0 : map[t];
				} else {
					bad |= t < 0 || (unsigned long long)t >= vocab;
					e = t;
				}
			} else {
				e = hist ? hist[(size_t)lo * hl + (s - (unsigned)(i - s0) - 1)] : HIST_BLOCK;
				bad |= e < HIST_BLOCK || (e >= 0 && (unsigned long long)e >= vocab);
			}
			blocked |= e == HIST_BLOCK;
			unsigned long long v = (blocked || e < 0) ? (unsigned long long)pad : (unsigned long long)e;
			R ^= v * mult[(size_t)li * max_ngram + s];
		}
		size_t cc = (size_t)li * cols + c;
		unsigned long long m = mod[cc], q = __umul64hi(R, rcp[cc]), y = R - q * m;
		if (y >= m)
			y -= m;
		rows[idx] = bad ? -1 : (int)(y + off[cc]);
	}
}
