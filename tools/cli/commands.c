/* SPDX-License-Identifier: Apache-2.0 */
/* commands.c: the one command table: main's dispatch, `eht --help`, bash completion and the man page. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

/* bench step runs Python (python/eht/bench_step.py), whose argparse reads these; test_cli_table checks
 * the list against its --help, and the meanings are what the man page shows. */
static const struct cli_extra_opt bench_step_opts[] = {
	{"--mode=", "decode, prefill, or both (decode,prefill)"},
	{"--layers=", "model layers (16)"},
	{"--tokens=", "T, tokens per step (decode 256, prefill 8192)"},
	{"--hidden=", "hidden size (7168)"},
	{"--ffn=", "F, the FFN width (decode 16384, prefill 8192)"},
	{"--table-gib=", "GiB of each of the two tables (24)"},
	{"--engram-layers=", "the two consuming layers (1,14)"},
	{"--workload=", "uniform, text:FILE, or both comma-separated"},
	{"--hotset-rows=", "hot set of a text workload (most frequent rows of its first half; 0: none)"},
	{"--variants=", "comma-separated: none, vllm, copy, STRATEGY[+OPT...]-side|inline (--help lists the OPTs)"},
	{"--reps=", "timed replays (decode 40, prefill 48)"},
	{"--warmup=", "untimed replays first (5)"},
	{"--burst=", "replays per back-to-back burst (8)"},
	{"--rounds=", "measure every variant this many times in turn and summarize (1)"},
	{"--threads=", "eht's CPU pool (0: its default)"},
	{"--tp=", "look up as one of this many tensor-parallel ranks: a rank's heads and rows (1)"},
	{"--rank=", "the rank looked up as, with --tp (0)"},
	{"--sync=", "how the host waits for each step: block (a blocking event) or spin"},
	{"--device=", "the GPU (0)"},
	{"--seed=", "random seed (1)"},
	{"--trace", "also time the pieces of a step, eager and as its graph"},
	{"--timeline=", "also profile graph replays into DIR: a trace per variant"},
	{"--json", "one JSON report on stdout"},
	{"--dry-run", "check the options and print the plan (no GPU)"},
	{"--help", "the usage (Python's argparse)"},
	{NULL, NULL}};

/* The one table of commands: main dispatches by it, and --help, `eht --list commands`, the bash
 * completion and the man page are written from it. A group ("bench", "regions", "hotset") is the
 * first word of rows of two words. */
const struct cli_command cli_commands[] = {
	{"info", "PATH [--json]", "tensors of a safetensors file or checkpoint", cmd_info, cli_opts_info, NULL},
	{"synth", "DIR [options]", "write a synthetic Engram-shaped checkpoint", cmd_synth, cli_opts_synth, NULL},
	{"probe", "[--json] [--ckpt CKPT]", "GPUs, NUMA nodes, /dev/shm, huge pages, handle support", cmd_probe,
	 cli_opts_probe, NULL},
	{"regions list", "[--dir D] [--json]", "shared regions on this node", cmd_regions_list, cli_opts_regions, NULL},
	{"regions gc", "[--dir D] [--dry-run] [--json]", "remove stale shared regions", cmd_regions_gc, cli_opts_regions,
	 NULL},
	{"serve", "CHECKPOINT [options]", "host a checkpoint's tables for this node's workers", cmd_serve, cli_opts_serve,
	 NULL},
	{"status", "[KEY] [--json | --metrics]", "what running servers hold, for whom; readiness (JSON, Prometheus)", cmd_status, cli_opts_status, NULL},
	{"worker", "KEY --check CKPT", "attach like a worker; look up, verify, print rows/s", cmd_worker, cli_opts_worker,
	 NULL},
	{"hash", "(--preset v41|--config F) --steps S [--gpu] [--json]", "Engram row ids of token steps", cmd_hash,
	 cli_opts_hash, NULL},
	{"hotset build", "--workload text:F --rows K -o OUT", "the most frequent rows (GPU hot set)", cmd_hotset_build,
	 cli_opts_hotset_build, NULL},
	{"bench lookup", "[options] [--json]", "row gathers of each lookup strategy against the copy ceiling",
	 bench_lookup, cli_opts_bench_lookup, NULL},
	{"bench region", "[options] [--json]", "create, fill and attach a shared region of each size", bench_region,
	 cli_opts_bench_region, NULL},
	{"bench share", "[options] [--json]", "export and import a host-NUMA table between processes (GPU)",
	 bench_share, cli_opts_bench_share, NULL},
	{"bench disk", "[options] [--json]", "lookups from a checkpoint on disk (tier disk), and under a memory limit",
	 bench_disk, cli_opts_bench_disk, NULL},
	{"bench hash", "[options] [--json]", "Engram hashing of prefill and decode steps, CPU and GPU", bench_hash,
	 cli_opts_bench_hash, NULL},
	{"bench step", "[options] [--json]", "a DeepSeek-V4.1-shaped model step with each lookup variant (Python)",
	 bench_step, NULL, bench_step_opts},
	{"version", "", "print the version (also eht --version, eht -V)", cmd_version, cli_opts_version, NULL},
};
const size_t cli_ncommands = sizeof(cli_commands) / sizeof(cli_commands[0]);

/* ------------------------------------------------------------------- lookups */
const struct cli_command *cli_command_find(const char *path)
{
	for (size_t i = 0; i < cli_ncommands; i++)
		if (!strcmp(cli_commands[i].path, path))
			return &cli_commands[i];
	return NULL;
}

int cli_is_group(const char *word)
{
	size_t n = strlen(word);
	for (size_t i = 0; i < cli_ncommands; i++)
		if (!strncmp(cli_commands[i].path, word, n) && cli_commands[i].path[n] == ' ')
			return 1;
	return 0;
}

/* "a, b, c": the subcommands of group, into buf. */
static void group_subs(const char *group, char *buf, size_t len)
{
	size_t n = strlen(group), used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < cli_ncommands; i++) {
		const char *p = cli_commands[i].path;
		if (!strncmp(p, group, n) && p[n] == ' ' && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", p + n + 1);
	}
}

int cli_dispatch(int argc, char **argv)
{
	const char *word = argv[1];
	if (cli_is_group(word)) {
		if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") || !strcmp(argv[2], "help")) {
			int help = argc >= 3; /* (`eht GROUP --json` is the usage error below) */
			FILE *f = help ? stdout : stderr;
			fprintf(f, "usage: eht %s SUBCOMMAND [options]\n", word);
			cli_print_commands_under(f, word);
			fprintf(f, "eht %s SUBCOMMAND --help shows its options.\n", word);
			return help ? 0 : 2;
		}
		char path[96], subs[256];
		snprintf(path, sizeof(path), "%s %s", word, argv[2]);
		const struct cli_command *c = cli_command_find(path);
		if (c)
			return c->run(argc - 2, argv + 2);
		group_subs(word, subs, sizeof(subs));
		if (argv[2][0] == '-')
			return cli_errorf(word, 2, "no subcommand before '%s' (the subcommands: %s)", argv[2], subs);
		return cli_errorf(word, 2, "unknown subcommand '%s' (the subcommands: %s)", argv[2], subs);
	}
	const struct cli_command *c = cli_command_find(word);
	if (c)
		return c->run(argc - 1, argv + 1);
	return cli_errorf("", 2, "unknown command '%s' (eht --help lists them)", word);
}

/* ------------------------------------------------------------------- --help and completion */
/* one option as completion and the man page write it: "--name", "--name=" (argument), "--name[=]" */
static void put_opt(FILE *f, const struct option *o)
{
	fprintf(f, "--%s%s", o->name,
		o->has_arg == required_argument	  ? "="
		: o->has_arg == optional_argument ? "[=]"
						  : "");
}

static void print_row(FILE *f, const struct cli_command *c)
{
	char line[160];
	snprintf(line, sizeof(line), "%s %s", c->path, c->synopsis);
	if (strlen(line) > 40) /* a long synopsis gets its own line */
		fprintf(f, "  eht %s\n      %-40s %s\n", line, "", c->summary);
	else
		fprintf(f, "  eht %-40s %s\n", line, c->summary);
}

void cli_print_commands_under(FILE *f, const char *cmd)
{
	size_t n = strlen(cmd);
	for (size_t i = 0; i < cli_ncommands; i++)
		if (!strncmp(cli_commands[i].path, cmd, n) && cli_commands[i].path[n] == ' ')
			print_row(f, &cli_commands[i]);
}

void cli_print_commands(FILE *f)
{
	for (size_t i = 0; i < cli_ncommands; i++)
		print_row(f, &cli_commands[i]);
}

void cli_print_completion(FILE *f)
{
	for (size_t i = 0; i < cli_ncommands; i++) {
		const struct cli_command *c = &cli_commands[i];
		fprintf(f, "%s\t", c->path);
		const char *sep = "";
		for (const struct option *o = c->opts; o && o->name; o++, sep = " ") {
			fputs(sep, f);
			put_opt(f, o);
		}
		for (const struct cli_extra_opt *e = c->extra_opts; e && e->opt; e++, sep = " ")
			fprintf(f, "%s%s", sep, e->opt);
		fputc('\n', f);
	}
}

/* ------------------------------------------------------------------- the man page */
/* roff: '-' is written "\-" so man shows a real hyphen; a line's leading '.' or '\'' is escaped so
 * roff does not take it for a request. */
static void put_roff(FILE *f, const char *s)
{
	for (int bol = 1; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		bol = *s == '\n';
		if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\\')
			fputs("\\e", f);
		else
			fputc(*s, f);
	}
}

/* What `eht PATH --help` prints, run in a child (a command's --help may end the process): malloc'd
 * text, or NULL. */
static char *help_text(const struct cli_command *c)
{
	int p[2];
	if (pipe(p))
		return NULL;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return NULL;
	}
	if (pid == 0) {
		close(p[0]);
		if (dup2(p[1], 1) < 0)
			_exit(127);
		const char *leaf = strrchr(c->path, ' ');
		char *args[] = {(char *)(leaf ? leaf + 1 : c->path), "--help", NULL};
		int rc = c->run(2, args);
		fflush(stdout);
		_exit(rc);
	}
	close(p[1]);
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t r = 0;
	while (buf && (r = read(p[0], buf + len, cap - len - 1)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		len += (size_t)r;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!buf || r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		free(buf);
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

int cli_print_man(FILE *f)
{
	fputs(".SH COMMANDS\n", f);
	for (size_t i = 0; i < cli_ncommands; i++) {
		const struct cli_command *c = &cli_commands[i];
		fputs(".SS \"eht ", f);
		put_roff(f, c->path);
		fputs("\"\n", f);
		put_roff(f, c->summary);
		fputs(".\n", f);
		if (!c->opts && c->synopsis[0]) { /* no --help of its own here: the synopsis, then its options */
			fputs(".PP\n.B eht ", f);
			put_roff(f, c->path);
			fputs("\n.I \"", f);
			put_roff(f, c->synopsis);
			fputs("\"\n", f);
		}
		if (c->opts) { /* its own --help: every option with its meaning */
			char *help = help_text(c);
			if (!help) {
				fprintf(stderr, "eht: eht %s --help failed\n", c->path);
				return 1;
			}
			fputs(".PP\n.nf\n", f);
			put_roff(f, help);
			fputs(".fi\n", f);
			free(help);
		}
		for (const struct cli_extra_opt *e = c->extra_opts; e && e->opt; e++) {
			fputs(".TP\n.B ", f);
			put_roff(f, e->opt);
			if (e->opt[strlen(e->opt) - 1] == '=')
				fputs("ARG", f);
			fputs("\n", f);
			put_roff(f, e->meaning);
			fputs("\n", f);
		}
	}
	return 0;
}
