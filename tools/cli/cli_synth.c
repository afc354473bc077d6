/* SPDX-License-Identifier: Apache-2.0 */
/* cli_synth.c: `eht synth` (placeholder until its layer lands). */
#include "cli.h"

int cmd_synth(int argc, char **argv) { return cli_fail("synth", "not built yet"); }
