/* SPDX-License-Identifier: Apache-2.0 */
/* bench.c: `eht bench KIND`: benchmarks that measure the machine's own ceiling in the same run. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

int cmd_bench(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} kinds[] = {{"lookup", bench_lookup}, {"region", bench_region}, {"share", bench_share}, {"disk", bench_disk},
		   {"hash", bench_hash}, {"step", bench_step}};
	static const char usage[] = "usage: eht bench lookup|region|share|disk|hash|step [options] [--json]\n"
				    "eht bench KIND --help shows each benchmark's options. --json reports carry the eht\n"
				    "version, host and UTC time, and null where a figure does not apply; scripts/plot-bench\n"
				    "draws them.\n";
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
		fputs(usage, stdout);
		cli_print_commands_under(stdout, "bench"); /* the table's rows, as eht --help lists them */
		return 0;
	}
	if (argc >= 2)
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strcmp(argv[1], kinds[i].name))
				return kinds[i].fn(argc - 1, argv + 1);
	if (argc >= 2) /* with --json also one JSON error line */
		return cli_errorf("bench", 2, "unknown benchmark '%s' (eht bench --help lists them)", argv[1]);
	fputs(usage, stderr);
	return 2;
}
