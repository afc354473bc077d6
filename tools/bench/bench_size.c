/* SPDX-License-Identifier: Apache-2.0 */
/* bench_size.c: the default size of a bench's in-memory table: one that fits beside the rest. */
#include <math.h>
#include <stdio.h>

#include "bench.h"
#include "cli.h"

double bench_default_gib(uint64_t avail, FILE *info)
{
	/* A quarter of the memory available, at most 48 GiB (Engram's size class), in 0.25 GiB steps: the
	 * bench must not push the node's other processes into swap, nor fill half of RAM in silence. */
	double gib = floor((double)avail / 4 / (1 << 30) * 4) / 4;
	if (gib > 48)
		gib = 48;
	if (gib < 0.25)
		gib = 0.25;
	fprintf(info, "table size: %.2f GiB (a quarter of the %.1f GiB available, at most 48; --table-gib sets it)\n",
		gib, (double)avail / (1 << 30));
	return gib;
}
