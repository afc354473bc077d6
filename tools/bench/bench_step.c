/* SPDX-License-Identifier: Apache-2.0 */
/* bench_step.c: `eht bench step`: runs python3 -m eht.bench_step (the simulated model step needs torch). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

/* Prepends dir to the colon-separated variable var (or sets it). Returns 0 or -1 (out of memory). */
static int env_prepend(const char *var, const char *dir)
{
	const char *old = getenv(var);
	if (!old || !*old)
		return setenv(var, dir, 1);
	size_t n = strlen(dir) + strlen(old) + 2;
	char *v = malloc(n);
	if (!v)
		return -1;
	snprintf(v, n, "%s:%s", dir, old);
	int rc = setenv(var, v, 1);
	free(v);
	return rc;
}

int bench_step(int argc, char **argv)
{
	/* A source checkout's module and library first (an installed eht has both where python3 and
	 * eht._libfind look: site-packages and the library path). */
#ifdef EHT_PYTHON_DIR
	if (access(EHT_PYTHON_DIR "/eht/bench_step.py", R_OK) == 0 && env_prepend("PYTHONPATH", EHT_PYTHON_DIR))
		return cli_errorf("bench step", 1, "out of memory");
#endif
#ifdef EHT_BUILD_LIB
	if (!getenv("EHT_LIB") && access(EHT_BUILD_LIB, R_OK) == 0)
		setenv("EHT_LIB", EHT_BUILD_LIB, 1);
#endif
	const char *py = getenv("EHT_PYTHON");
	if (!py || !*py)
		py = "python3";
	char **args = calloc((size_t)argc + 3, sizeof(*args));
	if (!args)
		return cli_errorf("bench step", 1, "out of memory");
	args[0] = (char *)py;
	args[1] = "-m";
	args[2] = "eht.bench_step";
	for (int i = 1; i < argc; i++)
		args[i + 2] = argv[i];
	fflush(NULL);
	execvp(py, args);
	int e = errno;
	free(args);
	return cli_errorf("bench step", 127, "cannot run %s (%s); it needs Python 3 with torch (EHT_PYTHON names another)",
			  py, strerror(e));
}
