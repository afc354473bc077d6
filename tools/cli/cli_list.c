/* SPDX-License-Identifier: Apache-2.0 */
/* cli_list.c: `eht --list WHAT` (hidden): the lists the bash completion offers, each from its one
 * place: the command table, the library's strategies and its tier registry. */
#include <stdio.h>
#include <string.h>

#include "bench_tier.h"
#include "cli.h"
#include "eht.h"

int cli_strategy_order(int *ids, int max)
{
	int n = 0, count = eht_lookup_strategy_count();
	for (int i = 0; i < count && n < max; i++)
		if (i != EHT_LOOKUP_AUTO)
			ids[n++] = i;
	if (EHT_LOOKUP_AUTO < count && n < max) /* it picks among the others: compared with them, last */
		ids[n++] = EHT_LOOKUP_AUTO;
	return n;
}

void cli_strategy_names(char *buf, size_t len)
{
	int ids[CLI_MAX_STRATEGIES], n = cli_strategy_order(ids, CLI_MAX_STRATEGIES);
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "", eht_lookup_strategy_name(ids[i]));
}

/* Comma-separated names into one a line. */
static void put_lines(FILE *f, const char *names)
{
	for (const char *p = names; *p; p++)
		if (*p == ',')
			fputc('\n', f);
		else if (*p != ' ')
			fputc(*p, f);
	if (names[0])
		fputc('\n', f);
}

int cli_list(FILE *f, int argc, char **argv)
{
	const char *what = argc >= 1 ? argv[0] : "";
	char names[256];
	if (!strcmp(what, "commands") && argc == 1) {
		for (size_t i = 0; i < cli_ncommands; i++)
			fprintf(f, "%s\n", cli_commands[i].path);
		return 0;
	}
	if (!strcmp(what, "strategies") && argc <= 2) { /* in the library's order, ids 0 .. count - 1 */
		for (int i = 0; i < eht_lookup_strategy_count(); i++)
			fprintf(f, "%s\n", eht_lookup_strategy_name(i));
		/* what `eht bench lookup --strategies` takes besides them: the engine's own call */
		if (argc == 2 && !strcmp(argv[1], "bench"))
			fprintf(f, "layer\n");
		return 0;
	}
	if (!strcmp(what, "tiers")) {
		/* the --tier values of the command named after it, or every tier */
		const char *cmd = argc >= 2 ? argv[1] : "";
		if (!strcmp(cmd, "serve"))
			cli_serve_tier_names(names, sizeof(names));
		else if (!strcmp(cmd, "bench"))
			(void)bench_tier_names(names, sizeof(names));
		else if (!cmd[0])
			for (int t = 1; t <= eht_tier_count(); t++)
				fprintf(f, "%s\n", eht_tier_name(t));
		else
			return cli_errorf("--list", 2, "no command '%s' takes --tier", cmd);
		if (cmd[0])
			put_lines(f, names);
		return 0;
	}
	return cli_errorf("--list", 2, "lists commands, strategies [bench] or tiers [serve|bench], not '%s'", what);
}
