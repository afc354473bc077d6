/* SPDX-License-Identifier: Apache-2.0 */
/* bench_threads.c: the CPU of eht's own threads, by name (see bench.h). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "util/thread.h"

/* One thread's CPU seconds: schedstat's first field (ns on CPU), else stat's utime + stime. */
static int task_cpu_s(const char *tid, double *sec)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/self/task/%.32s/schedstat", tid);
	FILE *f = fopen(path, "r");
	unsigned long long ns = 0;
	if (f) {
		int ok = fscanf(f, "%llu", &ns) == 1;
		fclose(f);
		if (ok) {
			*sec = (double)ns * 1e-9;
			return 0;
		}
	}
	snprintf(path, sizeof(path), "/proc/self/task/%.32s/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	char buf[1024];
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	const char *p = strrchr(buf, ')'); /* the name may hold spaces; the fields follow its ')' */
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	*sec = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

void bench_thread_cpu(struct bench_thread_cpu *out)
{
	memset(out, 0, sizeof(*out));
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[96], name[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%.32s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue; /* (the thread ended while we looked) */
		int got = fgets(name, sizeof(name), f) != NULL;
		fclose(f);
		double sec = 0;
		if (!got || task_cpu_s(e->d_name, &sec))
			continue;
		name[strcspn(name, "\n")] = 0;
		if (strncmp(name, EHT_THREAD_POOL, strlen(EHT_THREAD_POOL)) == 0)
			out->pool_s += sec;
		else if (strcmp(name, EHT_THREAD_BELL) == 0)
			out->poller_s += sec;
	}
	closedir(d);
}
