/* SPDX-License-Identifier: Apache-2.0 */
/* cli_opt.c: what every subcommand shares: getopt_long with exit-2 messages, strict numbers, and
 * JSON errors ({"error": ...}); bench reports are tools/bench's (bench_harness.c). */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "eht.h"
#include "util/clock.h"

int cli_json, cli_json_printed;

void cli_json_error(const char *cmd, int code, const char *msg)
{
	if (cli_json_printed) /* one object per invocation: the first error is the one that says why */
		return;
	char full[96];
	snprintf(full, sizeof(full), "eht%s%s", cmd[0] ? " " : "", cmd);
	json_t *o = json_pack("{s:s, s:s, s:i}", "error", msg, "command", full, "exit", code);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (text)
		printf("%s\n", text);
	fflush(stdout);
	free(text);
	json_decref(o);
	cli_json_printed = 1;
}

int cli_errorf(const char *cmd, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "eht%s%s: %s\n", cmd[0] ? " " : "", cmd, msg);
	if (cli_json)
		cli_json_error(cmd, code, msg);
	return code;
}

void cli_opt_reset(void) { optind = 0; /* glibc: 0 re-initializes the scanner for a new argv */ }

int cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts, const struct option *longopts)
{
	char spec[64];
	snprintf(spec, sizeof(spec), ":%s", shortopts); /* ':' first: a missing value is told apart */
	opterr = 0;
	int c = getopt_long(argc, argv, spec, longopts, NULL);
	if (c == '?') {
		const char *bad = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
		if (optopt && (bad[0] != '-' || bad[1] == '-' || strlen(bad) != 2))
			cli_errorf(cmd, 2, "unknown option '-%c' (eht %s --help lists them)", optopt, cmd);
		else
			cli_errorf(cmd, 2, "unknown option '%s' (eht %s --help lists them)", bad, cmd);
		return CLI_OPT_ERROR;
	}
	if (c == ':') {
		const char *bad = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
		if (optopt && bad[0] == '-' && bad[1] != '-')
			cli_errorf(cmd, 2, "option '-%c' needs a value", optopt);
		else
			cli_errorf(cmd, 2, "option '%s' needs a value", bad);
		return CLI_OPT_ERROR;
	}
	return c;
}

int cli_usage_error(const char *cmd, const char *msg)
{
	return cli_errorf(cmd, 2, "%s (eht %s --help shows the usage)", msg, cmd);
}

int cli_u64(const char *cmd, const char *name, const char *s, uint64_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = s && *s != '-' ? strtoull(s, &end, 0) : 0;
	if (!s || !*s || *s == '-' || errno || !end || *end) {
		return cli_errorf(cmd, 2, "%s takes a non-negative integer, not '%s'", name, s ? s : "");
	}
	*out = v;
	return 0;
}

int cli_rows_or_bytes(const char *cmd, const char *name, const char *s, uint64_t *rows, uint64_t *bytes)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = s && *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
	unsigned shift = 0;
	if (end && (*end == 'K' || *end == 'k'))
		shift = 10;
	else if (end && (*end == 'M' || *end == 'm'))
		shift = 20;
	else if (end && (*end == 'G' || *end == 'g'))
		shift = 30;
	const char *rest = end ? end + (shift ? 1 : 0) : NULL;
	if (rest && shift && (*rest == 'B' || *rest == 'b'))
		rest++;
	if (!s || !end || end == s || errno || *rest || v == 0 || (shift && v > (UINT64_MAX >> shift))) {
		return cli_errorf(cmd, 2, "%s takes rows (a count) or GPU memory (e.g. 256M, 1G), not '%s'", name,
				  s ? s : "");
	}
	*rows = shift ? 0 : v;
	*bytes = shift ? (uint64_t)v << shift : 0;
	return 0;
}

int cli_int(const char *cmd, const char *name, const char *s, int *out)
{
	char *end = NULL;
	errno = 0;
	long v = s ? strtol(s, &end, 10) : 0;
	if (!s || !*s || errno || !end || *end || v < INT_MIN || v > INT_MAX) {
		return cli_errorf(cmd, 2, "%s takes an integer, not '%s'", name, s ? s : "");
	}
	*out = (int)v;
	return 0;
}

int cli_double(const char *cmd, const char *name, const char *s, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = s ? strtod(s, &end) : 0;
	if (!s || !*s || errno || !end || *end || v != v) {
		return cli_errorf(cmd, 2, "%s takes a number, not '%s'", name, s ? s : "");
	}
	*out = v;
	return 0;
}

/* o (taken) encoded with flags onto stdout, a line; 1 when it cannot be encoded or written. */
static int print_json_flags(json_t *o, size_t flags)
{
	char *s = o ? json_dumps(o, flags) : NULL;
	json_decref(o);
	if (!s) {
		fprintf(stderr, "eht: cannot encode the JSON report\n");
		return 1;
	}
	int bad = printf("%s\n", s) < 0 || fflush(stdout) != 0;
	free(s);
	return bad;
}

int cli_print_json(json_t *o)
{
	if (!o) {
		fprintf(stderr, "eht: out of memory building the JSON report\n");
		return 1;
	}
	int bad = print_json_flags(o, JSON_COMPACT | JSON_REAL_PRECISION(10));
	cli_json_printed |= !bad;
	return bad;
}

int cli_error(const char *cmd, int json, const char *msg)
{
	int was = cli_json;
	cli_json |= json;
	cli_errorf(cmd, 1, "%s", msg ? msg : eht_last_error());
	cli_json = was;
	return 1;
}

int cli_print_json_line(json_t *o) { return print_json_flags(o, JSON_COMPACT | JSON_REAL_PRECISION(10)); }

int cli_progress_tty(void) { return isatty(2); }

void cli_progress_init(struct cli_progress *p, const char *what, uint64_t total)
{
	*p = (struct cli_progress){.what = what, .total = total, .start = eht_now_s(), .tty = cli_progress_tty(),
				   .last_decile = -1};
}

void cli_progress_update(struct cli_progress *p, uint64_t done)
{
	double t = eht_now_s(), el = t - p->start;
	double frac = p->total ? (double)done / (double)p->total : 1;
	double rate = el > 0 ? (double)done / el : 0;
	double eta = rate > 0 && p->total > done ? (double)(p->total - done) / rate : 0;
	if (p->tty) {
		if (t - p->last < 0.1 && done < p->total)
			return;
		p->last = t;
		fprintf(stderr, "\r%s: %5.1f%%  %.2f of %.2f GiB  %.2f GB/s  ETA %.0f s ", p->what, 100 * frac,
			(double)done / (1 << 30), (double)p->total / (1 << 30), rate / 1e9, eta);
		if (done >= p->total)
			fputc('\n', stderr);
	} else {
		int decile = (int)(frac * 10);
		if (decile == p->last_decile)
			return;
		p->last_decile = decile;
		fprintf(stderr, "%s: %d%% (%.2f of %.2f GiB, %.2f GB/s, ETA %.0f s)\n", p->what, decile * 10,
			(double)done / (1 << 30), (double)p->total / (1 << 30), rate / 1e9, eta);
	}
}
