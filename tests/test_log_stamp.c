/* SPDX-License-Identifier: Apache-2.0 */
/* test_log_stamp.c: libeht's lines on stderr start with a UTC ISO-8601 timestamp with milliseconds,
 * except under journald (JOURNAL_STREAM set), which stamps lines itself. Each case in a child: the
 * choice is made once per process. Runs without a GPU. */
#include <regex.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "util/log.h"

/* The first line a child writes with JOURNAL_STREAM set or not, into buf. */
static int child_line(const char *dir, int journal, char *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/err%d", dir, journal);
	pid_t pid = fork();
	if (pid == 0) {
		if (journal)
			setenv("JOURNAL_STREAM", "8:12345", 1);
		else
			unsetenv("JOURNAL_STREAM");
		if (t_stderr_to(path))
			_exit(2);
		eht_log(EHT_LOG_ERROR, "stamp test %d", journal);
		_exit(0);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char *ok = fgets(buf, (int)len, f);
	fclose(f);
	return ok ? 0 : -1;
}

int main(void)
{
	const char *dir = t_tmpdir("logstamp");
	char line[512];
	regex_t re;
	CHECK(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z eht: error: stamp test 0\n$",
		      REG_EXTENDED) == 0);
	CHECK(child_line(dir, 0, line, sizeof(line)) == 0);
	if (regexec(&re, line, 0, NULL, 0) != 0) {
		fprintf(stderr, "not a stamped line: %s", line);
		t_failures++;
	}
	CHECK(child_line(dir, 1, line, sizeof(line)) == 0);
	CHECK(strcmp(line, "eht: error: stamp test 1\n") == 0);
	regfree(&re);
	t_rmtree(dir);

	return t_done();
}
