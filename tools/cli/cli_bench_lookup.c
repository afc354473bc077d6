/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_lookup.c: `eht bench lookup` (placeholder until its layer lands). */
#include "cli.h"

int bench_lookup(int argc, char **argv) { return cli_fail("bench lookup", "not built yet"); }
