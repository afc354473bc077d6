/* SPDX-License-Identifier: Apache-2.0 */
/* gather.cu: in-place gathers from the table: DIRECT (rows in request order) and the distinct rows of a
 * sorted or deduplicated batch into the compact buffer. */
#include "rows.cuh"

/* ------------------------------------------------------------------------------ DIRECT */
/* In-place gather in request order: one warp per RPW ids, grid-stride; ids flat or an engine's view
 * (direct_id); dead ids counted as direct_dead says. */
extern "C" __global__ void eht_lk_direct(const void *ids, int id64, long long off, unsigned long long n,
					 long long lo, long long hi, const uint8_t *table, uint32_t rb,
					 uint8_t *out, int fmt, int vec, unsigned long long *counters,
					 struct eht_lk_idview view, unsigned long long *h_dead)
{
	const bool lane0 = (threadIdx.x & (WARP - 1)) == 0;
	const uint32_t ob = out_bytes(rb, fmt);
	unsigned dead = 0;
	for_rows(n, rb, fmt, vec,
		 [&](unsigned long long p, const uint8_t **src, uint8_t **dst) {
			 unsigned long long loc;
			 if (to_local(direct_id(ids, id64, view, p), off, lo, hi, &loc))
				 *src = table + loc * rb;
			 else if (lane0)
				 dead++;
			 *dst = out + p * ob;
		 },
		 no_after);
	direct_dead(dead, counters, h_dead);
}

/* Distinct rows uniq[0..split_at(counters[1], share)) (local rows) into compact, raw. Launched for the
 * largest possible count; warps past the real count (read on the GPU: no host sync) return. */
extern "C" __global__ void eht_lk_gather_uniq(const uint32_t *uniq, const unsigned long long *counters,
					      float share, const uint8_t *table, uint32_t rb, uint8_t *compact, int vec)
{
	for_rows(split_at(counters[1], share), rb, FMT_RAW, vec,
		 [&](unsigned long long u, const uint8_t **src, uint8_t **dst) {
			 *src = table + (unsigned long long)uniq[u] * rb;
			 *dst = compact + u * rb;
		 },
		 no_after);
}
