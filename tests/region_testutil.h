/* SPDX-License-Identifier: Apache-2.0 */
/* region_testutil.h: helpers of the region tests: a private directory under /dev/shm, fills, counts. */
#ifndef EHT_REGION_TESTUTIL_H
#define EHT_REGION_TESTUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* A fresh private directory on tmpfs (/dev/shm when it exists, else TMPDIR). */
static inline char *r_tmpdir(const char *tag)
{
	static char path[256];
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	snprintf(path, sizeof(path), "%s/eht-test-%s-XXXXXX", base, tag);
	if (!mkdtemp(path)) {
		perror("mkdtemp");
		exit(1);
	}
	return path;
}

/* Number of entries in dir other than . and .. (-1 when unreadable). */
static inline int r_count_files(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Deterministic bytes: the value at offset i of a fill with seed s. */
static inline void r_fill(void *p, size_t n, uint64_t seed)
{
	uint64_t *w = p;
	for (size_t i = 0; i < n / 8; i++)
		w[i] = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
	for (size_t i = n / 8 * 8; i < n; i++)
		((unsigned char *)p)[i] = (unsigned char)(i ^ seed);
}

static inline uint64_t r_hash(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* Waits for pid; returns its exit status, or 128 + signal. */
static inline int r_wait(pid_t pid)
{
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
