/* SPDX-License-Identifier: Apache-2.0 */
/* test_pool.c: the persistent thread pool runs every task exactly once, job after job. */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "util/pool.h"

struct job {
	atomic_int *hits;
	atomic_uint workers_seen;
};

static void task(void *arg, size_t i, unsigned worker)
{
	struct job *j = arg;
	atomic_fetch_add(&j->hits[i], 1);
	atomic_fetch_or(&j->workers_seen, 1u << (worker % 32));
}

int main(void)
{
	eht_pool *pool = NULL;
	CHECK_RC(eht_pool_create(0, -1, 50, &pool), 0);
	if (!pool)
		return t_done();
	CHECK(eht_pool_size(pool) >= 1);
	enum { N = 5000 };
	static atomic_int hits[N];
	struct job j = {.hits = hits};
	for (int round = 0; round < 200; round++) {
		size_t n = (size_t)(round * 37 % N);
		for (size_t i = 0; i < N; i++)
			atomic_store(&hits[i], 0);
		if (round % 2)
			eht_pool_run(pool, n, task, &j);
		else {
			eht_pool_start(pool, n, task, &j);
			eht_pool_wait(pool);
		}
		int bad = 0;
		for (size_t i = 0; i < N; i++)
			bad += atomic_load(&hits[i]) != (i < n ? 1 : 0);
		CHECK(bad == 0);
	}
	/* A long pause lets workers fall asleep; the next job must still wake them. */
	struct timespec ts = {0, 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
	for (size_t i = 0; i < N; i++)
		atomic_store(&hits[i], 0);
	eht_pool_start(pool, N, task, &j);
	eht_pool_wait(pool);
	int bad = 0;
	for (size_t i = 0; i < N; i++)
		bad += atomic_load(&hits[i]) != 1;
	CHECK(bad == 0);
	eht_pool_destroy(pool);
	eht_pool_destroy(NULL);

	eht_pool *p2 = NULL;
	CHECK_RC(eht_pool_create(5000, -1, 0, &p2), -EINVAL);
	CHECK(p2 == NULL);
	return t_done();
}
