/* SPDX-License-Identifier: Apache-2.0 */
/* cli_bench.c: `eht bench KIND`: benchmarks that measure the machine's own ceiling in the same run. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_bench(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} kinds[] = {{"lookup", bench_lookup}, {"region", bench_region}, {"share", bench_share}, {"disk", bench_disk},
		   {"hash", bench_hash}};
	if (argc >= 2)
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strcmp(argv[1], kinds[i].name))
				return kinds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "usage: eht bench lookup|region|share|disk|hash [options] [--json]\n");
	return 2;
}
