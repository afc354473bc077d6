/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: `eht`, the operators' tool: dispatches to one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "eht.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
} commands[] = {
	{"info", cmd_info},
	{"synth", cmd_synth},
	{"probe", cmd_probe},
	{"regions", cmd_regions},
	{"serve", cmd_serve},
	{"status", cmd_status},
	{"worker", cmd_worker},
	{"hash", cmd_hash},
	{"hotset", cmd_hotset},
	{"bench", cmd_bench},
};

int cli_fail(const char *cmd, const char *msg)
{
	return cli_errorf(cmd, 1, "%s", msg ? msg : eht_last_error());
}

int cli_has_flag(int argc, char **argv, const char *flag)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], flag) == 0)
			return 1;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "eht %s: Engram host tables\n\nusage:\n", eht_version());
	cli_print_commands(f); /* tools/cli/commands.c: the table completion and the man page come from */
	fprintf(f, "\nEvery command takes --help. Exit status: 0 done, 1 failed, 2 usage error.\n"
		   "EHT_LOG=error|warn|info|debug sets the log level; docs/ENVIRONMENT.md lists every variable.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	/* hidden: what scripts/eht-completion.bash and scripts/gen-man read */
	if (!strcmp(argv[1], "--completion-table")) {
		cli_print_completion(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--man-commands")) {
		cli_print_man(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("eht %s\n", eht_version());
		return 0;
	}
	cli_json = cli_has_flag(argc - 1, argv + 1, "--json");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "eht: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
