/* SPDX-License-Identifier: Apache-2.0 */
/* cli_probe.c: `eht probe` (placeholder until its layer lands). */
#include "cli.h"

int cmd_probe(int argc, char **argv) { return cli_fail("probe", "not built yet"); }
