/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_region.c: `eht bench region` (placeholder until its layer lands). */
#include "cli.h"

int bench_region(int argc, char **argv) { return cli_fail("bench region", "not built yet"); }
