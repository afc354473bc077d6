/* SPDX-License-Identifier: Apache-2.0 */
/* cli_serve.c: `eht serve` (placeholder until its layer lands). */
#include "cli.h"

int cmd_serve(int argc, char **argv) { return cli_fail("serve", "not built yet"); }
