/* SPDX-License-Identifier: Apache-2.0 */
/* cli_regions.c: `eht regions` (placeholder until its layer lands). */
#include "cli.h"

int cmd_regions(int argc, char **argv) { return cli_fail("regions", "not built yet"); }
