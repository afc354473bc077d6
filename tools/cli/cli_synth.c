/* SPDX-License-Identifier: Apache-2.0 */
/* cli_synth.c: `eht synth DIR`: write a small synthetic Engram-shaped checkpoint. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eht.h"

#define USAGE "usage: eht synth DIR [--tables N] [--rows R] [--shards S] [--seed X]"

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int cmd_synth(int argc, char **argv)
{
	struct eht_synth_opts o = {.size = sizeof(o)};
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		uint64_t v;
		const char *a = argv[i];
		int opt = !strcmp(a, "--tables") || !strcmp(a, "--rows") || !strcmp(a, "--shards") || !strcmp(a, "--seed");
		if (opt) {
			if (i + 1 >= argc || parse_u64(argv[i + 1], &v))
				return cli_fail("synth", USAGE);
			if ((!strcmp(a, "--tables") || !strcmp(a, "--shards")) && (v == 0 || v > UINT32_MAX))
				return cli_fail("synth", "--tables and --shards take 1 .. 2^32-1");
			if (!strcmp(a, "--rows") && v == 0)
				return cli_fail("synth", "--rows takes at least 1");
			if (!strcmp(a, "--tables"))
				o.tables = (uint32_t)v;
			else if (!strcmp(a, "--shards"))
				o.shards = (uint32_t)v;
			else if (!strcmp(a, "--rows"))
				o.rows = v;
			else
				o.seed = v;
			i++;
		} else if (a[0] == '-' || dir) {
			return cli_fail("synth", USAGE);
		} else {
			dir = a;
		}
	}
	if (!dir)
		return cli_fail("synth", USAGE);
	if (eht_synth_checkpoint(dir, &o) != 0)
		return cli_fail("synth", NULL);
	printf("eht synth: wrote %s: %u table(s) x %llu rows, %u file(s), seed %llu\n", dir,
	       o.tables ? o.tables : EHT_SYNTH_DEFAULT_TABLES,
	       (unsigned long long)(o.rows ? o.rows : EHT_SYNTH_DEFAULT_ROWS), o.shards ? o.shards : 1,
	       (unsigned long long)o.seed);
	return 0;
}
