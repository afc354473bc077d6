/* SPDX-License-Identifier: Apache-2.0 */
/* direct.c: the DIRECT strategy: one GPU kernel reads each row in place from the GPU-readable table,
 * in the given order (gather/inplace.c), an engine's view of ids included. No state of its own: host
 * ids pass through the engine's ids copy. */
#include "lookup/gather/inplace.h"

static int direct_gpu(eht_lookup *lk, struct lk_piece *p) { return eht_lk_inplace_whole(lk, p); }

const struct lk_strategy eht_lk_direct = {
	.id = EHT_LOOKUP_DIRECT,
	.name = "direct",
	.caps = LK_GPU_TABLE | LK_CAPTURABLE | LK_VIEW_IDS,
	.gpu_piece = direct_gpu,
};
