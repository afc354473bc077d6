/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: `eht`, the operators' tool: dispatches by the command table (commands.c), one command per
 * file. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "eht.h"

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
		   "EHT_LOG=error|warn|info|debug sets the log level; ENVIRONMENT.md lists every variable.\n");
}

const struct option cli_opts_version[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};

int cmd_version(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: eht version (or eht --version, eht -V)\nPrints \"eht VERSION\".\n");
		return 0;
	}
	if (argc >= 2)
		return cli_usage_error("version", "takes no arguments");
	printf("eht %s\n", eht_version());
	return 0;
}

/* The command's path as errors name it: "bench lookup" for a group's subcommand, else argv[1]. */
static void path_of(int argc, char **argv, char *buf, size_t len)
{
	if (argc >= 3 && cli_is_group(argv[1]) && argv[2][0] != '-')
		snprintf(buf, len, "%s %s", argv[1], argv[2]);
	else
		snprintf(buf, len, "%s", argv[1]);
}

/* The command and its exit status. */
static int run(int argc, char **argv)
{
	cli_json = argc >= 2 && cli_has_flag(argc, argv, "--json");
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			usage(stdout);
			return 0;
		}
		if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
			return cmd_version(1, argv + 1);
		/* hidden: what scripts/eht-completion.bash and scripts/gen-man read */
		if (argc >= 2 && !strcmp(argv[1], "--completion-table")) {
			cli_print_completion(stdout);
			return 0;
		}
		if (argc >= 2 && !strcmp(argv[1], "--man-commands"))
			return cli_print_man(stdout);
		if (argc >= 2 && !strcmp(argv[1], "--list"))
			return cli_list(stdout, argc - 2, argv + 2);
		if (argc < 2) {
			usage(stderr);
			return 2;
		}
		if (!strcmp(argv[1], "--json"))
			return cli_errorf("", 2, "no command given (eht --help lists them)");
		return cli_errorf("", 2, "unknown option '%s' before the command (eht --help lists the commands)", argv[1]);
	}
	if (!strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	int rc = cli_dispatch(argc, argv);
	/* The JSON contract holds on every path: a failure that said nothing on stdout gets its one
	 * object (the message is on stderr). */
	if (cli_json && rc != 0 && !cli_json_printed) {
		char path[96];
		path_of(argc, argv, path, sizeof(path));
		cli_json_error(path, rc, "failed (standard error says why)");
	}
	return rc;
}

/* Output that did not reach stdout (a full disk, a closed pipe with SIGPIPE ignored) fails the
 * command, as in the shell's own tools: a report cut short must not exit 0. */
int main(int argc, char **argv)
{
	int rc = run(argc, argv);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "eht%s%s: writing the output: %s\n", argc >= 2 ? " " : "", argc >= 2 ? argv[1] : "",
			strerror(errno ? errno : EIO));
		return rc ? rc : 1;
	}
	return rc;
}
