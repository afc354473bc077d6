/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench_share.c: `eht bench share` (placeholder until its layer lands). */
#include "cli.h"

int bench_share(int argc, char **argv) { return cli_fail("bench share", "not built yet"); }
