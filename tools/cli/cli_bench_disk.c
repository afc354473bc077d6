/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_disk.c: `eht bench disk` (placeholder until its layer lands). */
#include "cli.h"

int bench_disk(int argc, char **argv) { return cli_fail("bench disk", "not built yet"); }
