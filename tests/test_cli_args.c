/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_args.c: argument errors are refused at once and named (`bench lookup --format fp8`,
 * `bench disk --file-gib 0`, `worker --timeout -1`), a GPU query on a machine without one leaves no
 * error text for a later message to carry, and output that cannot be written (/dev/full) fails the
 * command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "util/err.h"
#include "testutil.h"

/* Runs the CLI with args; returns its exit status and its stderr in err. */
static int run(const char *args, char *err, size_t len) { return t_cli_run(args, 20, NULL, 0, err, len); }

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	eht_err_clear();
	CHECK(eht_dev_count() == 0);
	CHECK(eht_last_error()[0] == '\0');
	t_cli(); /* skips where EHT_CLI is not set */
	char err[4096];
	char *tmp = t_tmpdir("cli-args");
	char args[1024];

	int rc = run("bench lookup --format fp8 --table-gib 0.01", err, sizeof(err));
	CHECK(rc == 2 && strstr(err, "--format") != NULL);

	snprintf(args, sizeof(args), "bench disk --file-gib 0 --dir '%s'", tmp);
	rc = run(args, err, sizeof(err));
	CHECK(rc == 2 && strstr(err, "--file-gib") != NULL);
	snprintf(args, sizeof(args), "rmdir '%s' 2>/dev/null", tmp); /* nothing was written there */
	CHECK(system(args) == 0);
	mkdir(tmp, 0700);

	rc = run("worker somekey --check /nonexistent --timeout -1", err, sizeof(err));
	CHECK(rc != 0 && strstr(err, "--timeout") != NULL);
	CHECK(strstr(err, "CUDA") == NULL);
	static const char *bad_sizes[] = {"0", "12Q", "1.5G", "G", "-3", "5MiB"};
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		snprintf(args, sizeof(args), "worker somekey --check /nonexistent --hotset-size %s", bad_sizes[i]);
		rc = run(args, err, sizeof(err));
		CHECK(rc == 2 && strstr(err, "--hotset-size") != NULL);
	}

	/* Output that cannot be written (a full disk) fails the command and says so. */
	if (access("/dev/full", W_OK) == 0) {
		static const char *const cmds[] = {"version", "--help", "probe --json", "info --help"};
		char errf[1200], line[2600], text[512] = "";
		snprintf(errf, sizeof(errf), "%s/err.txt", tmp);
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			snprintf(line, sizeof(line), "'%s' %s >/dev/full 2>'%s'", getenv("EHT_CLI"), cmds[i], errf);
			int st = system(line);
			FILE *f = fopen(errf, "r");
			size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
			text[n] = '\0';
			if (f)
				fclose(f);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(text, "writing the output") != NULL);
		}
	}

	t_rmtree(tmp);
	return t_done();
}
