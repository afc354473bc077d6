/* SPDX-License-Identifier: Apache-2.0 */
/* gather_split.cu: gather.cu's in-place gathers over a table in vLLM's split layout (weights [rows, wb]
 * then scales [rows, sb], eht_table_wrap_split2): the same outputs, bit for bit, as from the packed
 * table of the same rows. */
#include "rows_split.cuh"

/* eht_lk_direct over split rows. */
extern "C" __global__ void eht_lk_direct_split(const void *ids, int id64, long long off, unsigned long long n,
					       long long lo, long long hi, const uint8_t *W, const uint8_t *S,
					       uint32_t wb, uint32_t sb, uint8_t *out, int fmt, int vec,
					       unsigned long long *counters, struct eht_lk_idview view,
					       unsigned long long *h_dead)
{
	const bool lane0 = (threadIdx.x & (WARP - 1)) == 0;
	const uint32_t ob = out_bytes(wb + sb, fmt);
	unsigned dead = 0;
	for_rows_split(n, W, S, wb, sb, fmt, vec, [&](unsigned long long p, unsigned long long *loc, uint8_t **dst) {
		if (!to_local(direct_id(ids, id64, view, p), off, lo, hi, loc)) {
			*loc = NO_ROW;
			if (lane0)
				dead++;
		}
		*dst = out + p * ob;
	});
	direct_dead(dead, counters, h_dead);
}

/* eht_lk_gather_uniq over split rows: packed raw rows of wb + sb bytes into compact. */
extern "C" __global__ void eht_lk_gather_uniq_split(const uint32_t *uniq, const unsigned long long *counters,
						    float share, const uint8_t *W, const uint8_t *S, uint32_t wb,
						    uint32_t sb, uint8_t *compact, int vec)
{
	const uint32_t rb = wb + sb;
	for_rows_split(split_at(counters[1], share), W, S, wb, sb, FMT_RAW, vec,
		       [&](unsigned long long u, unsigned long long *loc, uint8_t **dst) {
			       *loc = uniq[u];
			       *dst = compact + u * rb;
		       });
}
