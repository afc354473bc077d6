/* SPDX-License-Identifier: Apache-2.0 */
/* cli_info.c: `eht info` (placeholder until its layer lands). */
#include "cli.h"

int cmd_info(int argc, char **argv) { return cli_fail("info", "not built yet"); }
