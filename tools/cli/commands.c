/* SPDX-License-Identifier: Apache-2.0 */
/* commands.c: the one command table behind `eht --help`, bash completion and the man page. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* bench step runs Python (python/eht/bench_step.py), which parses its own options */
static const char *const bench_step_opts[] = {
	"--mode=", "--layers=", "--tokens=", "--hidden=", "--ffn=", "--table-gib=", "--engram-layers=", "--workload=",
	"--hotset-rows=", "--variants=", "--reps=", "--warmup=", "--burst=", "--rounds=", "--threads=", "--sync=", "--device=", "--seed=",
	"--trace", "--timeline=", "--json", "--dry-run", "--help", NULL};

const struct cli_command cli_commands[] = {
	{"info", "PATH [--json]", "tensors of a safetensors file or checkpoint", cli_opts_info, NULL},
	{"synth", "DIR [options]", "write a synthetic Engram-shaped checkpoint", cli_opts_synth, NULL},
	{"probe", "[--json] [--ckpt CKPT]", "GPUs, NUMA nodes, /dev/shm, huge pages, handle support", cli_opts_probe,
	 NULL},
	{"regions list", "[--dir D] [--json]", "shared regions on this node", cli_opts_regions, NULL},
	{"regions gc", "[--dir D] [--dry-run]", "remove stale shared regions", cli_opts_regions, NULL},
	{"serve", "CHECKPOINT [options]", "host a checkpoint's tables for this node's workers", cli_opts_serve, NULL},
	{"status", "[KEY] [--json]", "what running servers hold, for whom; readiness", cli_opts_status, NULL},
	{"worker", "KEY --check CKPT", "attach like a worker; look up, verify, print rows/s", cli_opts_worker, NULL},
	{"hash", "(--preset v41|--config F) --steps S [--gpu] [--json]", "Engram row ids of token steps", cli_opts_hash,
	 NULL},
	{"hotset build", "--workload text:F --rows K -o OUT", "the most frequent rows (GPU hot set)",
	 cli_opts_hotset_build, NULL},
	{"bench lookup", "[options] [--json]", "row gathers of each lookup strategy against the copy ceiling",
	 cli_opts_bench_lookup, NULL},
	{"bench region", "[options] [--json]", "create, fill and attach a shared region of each size",
	 cli_opts_bench_region, NULL},
	{"bench share", "[options] [--json]", "export and import a host-NUMA table between processes (GPU)",
	 cli_opts_bench_share, NULL},
	{"bench disk", "[options] [--json]", "lookups from a checkpoint on disk (tier disk), and under a memory limit",
	 cli_opts_bench_disk, NULL},
	{"bench hash", "[options] [--json]", "Engram hashing of prefill and decode steps, CPU and GPU",
	 cli_opts_bench_hash, NULL},
	{"bench step", "[options] [--json]", "a DeepSeek-V4.1-shaped model step with each lookup variant (Python)",
	 NULL, bench_step_opts},
};
const size_t cli_ncommands = sizeof(cli_commands) / sizeof(cli_commands[0]);

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
	fprintf(f, "  eht %-40s %s\n", "version", "print the version");
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
		for (const char *const *e = c->extra_opts; e && *e; e++, sep = " ")
			fprintf(f, "%s%s", sep, *e);
		fputc('\n', f);
	}
}

/* roff: a leading '-' of an option is written "\-" so man shows a real hyphen */
static void put_roff(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\\')
			fputs("\\e", f);
		else
			fputc(*s, f);
}

void cli_print_man(FILE *f)
{
	fputs(".SH COMMANDS\n", f);
	for (size_t i = 0; i < cli_ncommands; i++) {
		const struct cli_command *c = &cli_commands[i];
		fputs(".TP\n.BI \"", f);
		put_roff(f, c->path);
		fputs(" \" \"", f);
		put_roff(f, c->synopsis);
		fputs("\"\n", f);
		put_roff(f, c->summary);
		fputs(".\n.br\nOptions:", f);
		for (const struct option *o = c->opts; o && o->name; o++) {
			char buf[96];
			snprintf(buf, sizeof(buf), "--%s%s", o->name,
				 o->has_arg == required_argument   ? "=ARG"
				 : o->has_arg == optional_argument ? "[=ARG]"
								   : "");
			fputs(" \\fB", f);
			put_roff(f, buf);
			fputs("\\fR", f);
		}
		for (const char *const *e = c->extra_opts; e && *e; e++) {
			fputs(" \\fB", f);
			put_roff(f, *e);
			fputs((*e)[strlen(*e) - 1] == '=' ? "ARG\\fR" : "\\fR", f);
		}
		fputs("\n", f);
	}
	fputs(".TP\n.B version\nPrint the version.\n", f);
}
