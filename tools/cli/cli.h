/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h: the `eht` subcommands; each lives in its own file and returns the process exit status. */
#ifndef EHT_CLI_H
#define EHT_CLI_H

#include <getopt.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* The commands, each `eht PATH ARGS...` with argv[0] the path's last word ("info", "list" of "regions
 * list"); each returns the exit status. The benches are tools/bench/bench.h's. */
int cmd_info(int argc, char **argv);         /* cli_info.c */
int cmd_synth(int argc, char **argv);        /* cli_synth.c */
int cmd_probe(int argc, char **argv);        /* cli_probe.c */
int cmd_regions_list(int argc, char **argv); /* cli_regions.c */
int cmd_regions_gc(int argc, char **argv);   /* cli_regions.c */
int cmd_serve(int argc, char **argv);        /* cli_serve.c */
int cmd_worker(int argc, char **argv);       /* cli_worker.c */
int cmd_status(int argc, char **argv);       /* cli_status.c */
int cmd_hash(int argc, char **argv);         /* cli_hash.c */
int cmd_hotset_build(int argc, char **argv); /* cli_hotset.c */
int cmd_version(int argc, char **argv);      /* main.c */

/* The option tables getopt reads, one per command (tools/cli/commands.c lists them for --help,
 * completion and the man page, so the three cannot drift from what a command accepts). */
extern const struct option cli_opts_info[], cli_opts_synth[], cli_opts_probe[], cli_opts_regions[],
	cli_opts_serve[], cli_opts_status[], cli_opts_worker[], cli_opts_hash[], cli_opts_hotset_build[],
	cli_opts_bench_lookup[], cli_opts_bench_region[], cli_opts_bench_share[], cli_opts_bench_disk[],
	cli_opts_bench_hash[], cli_opts_version[];

/* An option of a command without a getopt table here (bench step's argparse), with its meaning. */
struct cli_extra_opt {
	const char *opt;     /* "--name", or "--name=" when it takes a value */
	const char *meaning; /* one line, for the man page */
};

/* One row of the command table (tools/cli/commands.c). */
struct cli_command {
	const char *path;			 /* "info", "regions gc", "bench lookup" */
	const char *synopsis;			 /* what follows "eht PATH" on a usage line */
	const char *summary;			 /* one line */
	int (*run)(int argc, char **argv);	 /* the command; argv[0] is the path's last word */
	const struct option *opts;		 /* the getopt table, or NULL */
	const struct cli_extra_opt *extra_opts; /* options of a command without a getopt table (bench step) */
};
extern const struct cli_command cli_commands[];
extern const size_t cli_ncommands;
/* The row of a path ("regions gc"), or NULL. */
const struct cli_command *cli_command_find(const char *path);
/* Whether word is a group: the first word of rows of two words ("bench"). */
int cli_is_group(const char *word);
/* Runs `eht argv[1] ...` by the table (argv[1] a command or a group and its subcommand); unknown
 * ones are usage errors (JSON with cli_json). Returns the exit status. */
int cli_dispatch(int argc, char **argv);
void cli_print_commands(FILE *f);    /* `eht --help`'s command list */
void cli_print_commands_under(FILE *f, const char *cmd); /* the rows of CMD's subcommands ("bench") */
void cli_print_completion(FILE *f);  /* `eht --completion-table`: "PATH<TAB>--opt --opt=..." lines */
/* `eht --man-commands`: the man page's generated COMMANDS section, each command's --help text in it
 * (every option with its meaning). 0, or 1 when a --help failed. */
int cli_print_man(FILE *f);
/* `eht --list WHAT [COMMAND...]` (cli_list.c): what the completion offers, one a line, from the table
 * and the library: commands, strategies, tiers (the --tier values of COMMAND when given). 0, or 2
 * (usage error) for another WHAT. */
int cli_list(FILE *f, int argc, char **argv);
/* The library's strategies (eht_lookup_strategy_count / _name) in the order the CLI runs and lists
 * them: each in turn, AUTO (which picks among them) last. The count written to ids (at most max). */
#define CLI_MAX_STRATEGIES 16
int cli_strategy_order(int *ids, int max);
/* Their names in that order, comma-separated ("direct,sorted,host,auto"). */
void cli_strategy_names(char *buf, size_t len);
/* What `eht serve --tier` takes: "auto" and every tier the library can serve (cli_serve.c). */
void cli_serve_tier_names(char *buf, size_t len);

/* Prints "eht CMD: <eht_last_error()>" (or msg when given) to stderr and returns 1. */
int cli_fail(const char *cmd, const char *msg);
/* True when argv has the flag (e.g. "--json"). */
int cli_has_flag(int argc, char **argv, const char *flag);

/* ---- cli_opt.c: options and reports shared by every subcommand ---- */
#define CLI_OPT_ERROR (-2)
/* Resets getopt for a new argv (a subcommand's argv[0] is its name). */
void cli_opt_reset(void);
/* getopt_long with messages: unknown options and missing values print "eht CMD: ..." on stderr
 * and return CLI_OPT_ERROR (the caller exits 2); -1 at the end, else the option. */
int cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts, const struct option *longopts);
/* Prints "eht CMD: msg (eht CMD --help shows the usage)" and returns 2. */
int cli_usage_error(const char *cmd, const char *msg);
/* Strict numbers: the whole string, in range; else a message naming the option and 2. */
int cli_u64(const char *cmd, const char *name, const char *s, uint64_t *out);
/* A size given as rows ("1048576") or bytes with a binary suffix ("256M", "1G", "64KiB" not: K/M/G
 * with an optional B): *rows or *bytes is set, the other 0. 0 or 2 (a message printed). */
int cli_rows_or_bytes(const char *cmd, const char *name, const char *s, uint64_t *rows, uint64_t *bytes);
int cli_int(const char *cmd, const char *name, const char *s, int *out);
int cli_double(const char *cmd, const char *name, const char *s, double *out);
/* Prints o on stdout as one compact line (the report of a --json command) and drops the reference.
 * Returns 0, or 1 when it could not. */
int cli_print_json(json_t *o);
/* `eht status --metrics`: the servers' answers (a JSON array) as Prometheus text on f. 0 or 1. */
int cli_status_metrics(FILE *f, json_t *servers);
/* The same, for one event of a stream of JSON lines (eht serve --json). 0 or 1. */
int cli_print_json_line(json_t *o);
/* The JSON contract: set by main when the command line has --json. Stdout then holds one compact
 * object, a report or the error {"error": msg, "command": "eht CMD", "exit": code} (a usage error
 * too); eht serve's events are one object a line. cli_json_printed: a report or an error went to
 * stdout (main writes the error object of a failure that wrote none). */
extern int cli_json, cli_json_printed;
/* An error: "eht CMD: msg" on stderr (cmd "": "eht: msg"), and with cli_json its JSON line on stdout
 * (only the first error's: one object per invocation). Returns code. */
int cli_errorf(const char *cmd, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Only the JSON line of an error (once per invocation, as cli_errorf). */
void cli_json_error(const char *cmd, int code, const char *msg);
/* A failure: cli_errorf(cmd, 1, msg) (msg NULL: eht_last_error()), as JSON also when json. Returns 1. */
int cli_error(const char *cmd, int json, const char *msg);
/* Whether progress goes to a terminal (a bar) or not (plain lines). */
int cli_progress_tty(void);
/* Progress of a long step on stderr: a line redrawn on a terminal, plain lines at every 10%
 * otherwise (logs). */
struct cli_progress {
	const char *what;
	uint64_t total;
	double start, last;
	int tty, last_decile;
};
void cli_progress_init(struct cli_progress *p, const char *what, uint64_t total);
void cli_progress_update(struct cli_progress *p, uint64_t done);

/* ---- cli_notify.c ---- */
/* Sends state ("READY=1\nSTATUS=...") to $NOTIFY_SOCKET when set (systemd Type=notify). 0 or -errno. */
int cli_sd_notify(const char *state);
/* Writes text to path through a temporary of mkstemp beside it and a rename (eht_file_write_atomic).
 * Returns 0 or -errno with a message. */
int cli_write_file_atomic(const char *path, const char *text);

/* ---- cli_undo.c ---- */
/* What a command made (a bench's test file or cgroup, the shards `eht synth` writes) is undone on
 * every exit: the normal path calls its own cleanup and pops; SIGINT, SIGTERM, SIGHUP and SIGQUIT run
 * every pushed fn (last first) and then die of the signal as before. fn runs in a signal handler:
 * open/write/close/unlink/rmdir only, on strings prepared beforehand. SIGKILL (the OOM killer) cannot
 * be caught: the next run sweeps stale cgroups (bench_cgroup.c) and reuses a stale test file.
 * 0, or -ENOSPC (8 at most). */
typedef void (*cli_undo_fn)(void *arg);
int cli_undo_push(cli_undo_fn fn, void *arg);
void cli_undo_pop(void);

#endif
