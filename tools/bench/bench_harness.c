/* SPDX-License-Identifier: Apache-2.0 */
/* bench_harness.c: what every `eht bench` shares (bench.h): timings, the report envelope, table
 * cells, and the machine's own ceilings measured in the same run. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "gpu/dev.h"
#include "eht.h"
#include "util/clock.h"

void bench_idle(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void bench_stats(double *v, int n, double scale, struct bench_stats *out)
{
	*out = (struct bench_stats){0};
	if (n < 1)
		return;
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	double mean = 0;
	for (int i = 0; i < n; i++)
		mean += v[i] / n;
	out->median = v[n / 2] * scale;
	out->p90 = v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1] * scale;
	out->mean = mean * scale;
}

json_t *bench_report_new(const char *what)
{
	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "unknown");
	char when[32] = "";
	time_t now = time(NULL);
	struct tm tm;
	if (gmtime_r(&now, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:s, s:s, s:s, s:s}", "bench", what, "eht_version", eht_version(), "host", host,
			 "time_utc", when);
}

json_t *bench_real_or_null(double v, int applies)
{
	return applies && !isnan(v) ? json_real(v) : json_null();
}

const char *bench_cell(char *buf, size_t len, const char *fmt, double v, int applies, const char *none)
{
	if (applies)
		snprintf(buf, len, fmt, v);
	else
		snprintf(buf, len, "%s", none);
	return buf;
}

int bench_gpu(int cpu, int dev) { return !cpu && eht_dev_count() > dev; }

double bench_link_gbs(int dev, const char *cmd)
{
	const size_t bytes = 256u << 20;
	void *h = NULL;
	eht_dptr d = 0;
	eht_event e0 = NULL, e1 = NULL;
	double best = 0;
	if (eht_dev_use(dev) || eht_dev_host_alloc(&h, bytes, EHT_DEV_HOST_PORTABLE) ||
	    eht_dev_alloc(&d, bytes) || eht_dev_event_create(&e0, EHT_EVENT_TIMING) ||
	    eht_dev_event_create(&e1, EHT_EVENT_TIMING))
		goto out;
	memset(h, 1, bytes);
	for (int i = 0; i < 7; i++) {
		float ms = 0;
		if (eht_dev_event_record(e0, NULL) || eht_dev_h2d_async(d, h, bytes, NULL) ||
		    eht_dev_event_record(e1, NULL) || eht_dev_event_sync(e1) ||
		    eht_dev_event_ms(&ms, e0, e1))
			goto out;
		double g = (double)bytes / (ms * 1e-3) / 1e9;
		if (i && g > best)
			best = g;
	}
out:
	if (best == 0)
		fprintf(stderr, "eht %s: link bandwidth not measured: %s\n", cmd, eht_last_error());
	if (e0)
		eht_dev_event_destroy(e0);
	if (e1)
		eht_dev_event_destroy(e1);
	if (d)
		eht_dev_free(d);
	if (h)
		eht_dev_host_free(h);
	return best;
}

static inline uint64_t mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct iops_job {
	int fd;
	uint64_t blocks;
	double until;
	atomic_uint_fast64_t done;
	atomic_int err;
};

static void *iops_thread(void *v)
{
	struct iops_job *j = v;
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, 4096))
		return NULL;
	uint64_t x = mix(atomic_fetch_add(&j->done, 0) + (uint64_t)(uintptr_t)&buf), n = 0;
	while (eht_now_s() < j->until) {
		for (int k = 0; k < 32; k++) {
			x = mix(x);
			if (pread(j->fd, buf, 4096, (off_t)((x % j->blocks) * 4096)) != 4096) {
				atomic_store(&j->err, errno ? errno : EIO);
				goto out;
			}
			n++;
		}
	}
out:
	atomic_fetch_add(&j->done, n);
	free(buf);
	return NULL;
}

double bench_drive_iops(const char *path, unsigned nthreads, double seconds, uint64_t bytes, char *note, size_t nl)
{
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		snprintf(note, nl, "O_DIRECT open failed (%s): IOPS not measured", strerror(errno));
		return 0;
	}
	struct iops_job j = {.fd = fd, .blocks = bytes / 4096};
	atomic_init(&j.done, 0);
	atomic_init(&j.err, 0);
	pthread_t *th = calloc(nthreads, sizeof(*th));
	unsigned started = 0;
	double t0 = eht_now_s();
	j.until = t0 + seconds;
	for (unsigned i = 0; th && i < nthreads; i++)
		if (pthread_create(&th[i], NULL, iops_thread, &j) == 0)
			started++;
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	double el = eht_now_s() - t0;
	free(th);
	close(fd);
	if (atomic_load(&j.err)) {
		snprintf(note, nl, "O_DIRECT reads failed (%s): IOPS not measured", strerror(atomic_load(&j.err)));
		return 0;
	}
	snprintf(note, nl, "%u threads, %.1f s", started, el);
	return (double)atomic_load(&j.done) / el;
}
