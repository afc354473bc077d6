/* SPDX-License-Identifier: Apache-2.0 */
/* test_lookup_threads.c: threads sharing one lookup engine each get their own call's dead count and
 * rows: thread k sends ids with k * 37 dead ones, so a count (or an EHT_LOOKUP_RUN_DEAD_ERROR result)
 * that includes another thread's dead ids shows up as a wrong number (it did in 15-35 of 160 runs
 * when the engine-wide counter was reset and summed outside the job's lock). */
#include <pthread.h>
#include <string.h>

#include "testutil.h"

#define ROWS 4096
#define RB 64
#define NTHREADS 4
#define CALLS 1000
#define NIDS 3000

static uint8_t table_mem[ROWS * RB];
static eht_lookup *lk;

struct arg {
	int k;
	int bad_count, bad_rows, bad_rc;
};

static void *worker(void *p)
{
	struct arg *a = p;
	static _Thread_local int64_t ids[NIDS];
	static _Thread_local uint8_t out[NIDS * RB];
	uint64_t seed = (uint64_t)a->k * 1000003u + 1;
	const unsigned dead_want = (unsigned)a->k * 37;
	for (int call = 0; call < CALLS; call++) {
		for (unsigned i = 0; i < NIDS; i++)
			ids[i] = i < dead_want ? (int64_t)(ROWS + i) : (int64_t)(t_rand(&seed) % ROWS);
		uint64_t dead = 12345;
		/* Every other call asks for dead ids to be an error: only the threads that send some get it. */
		unsigned flags = EHT_LOOKUP_RUN_IDS_HOST | EHT_LOOKUP_RUN_OUT_HOST | (call & 1 ? EHT_LOOKUP_RUN_DEAD_ERROR : 0);
		int rc = eht_lookup_run(lk, ids, EHT_ID_INT64, 0, NIDS, out, NULL, flags, &dead);
		int want_rc = (call & 1) && dead_want ? -ERANGE : 0;
		if (rc != want_rc)
			a->bad_rc++;
		if (dead != dead_want)
			a->bad_count++;
		for (unsigned i = 0; i < NIDS; i += 97) {
			static const uint8_t zero[RB];
			const uint8_t *want = i < dead_want ? zero : table_mem + (size_t)ids[i] * RB;
			if (memcmp(out + (size_t)i * RB, want, RB) != 0)
				a->bad_rows++;
		}
	}
	return NULL;
}

int main(void)
{
	uint64_t seed = 7;
	for (size_t i = 0; i < sizeof(table_mem); i++)
		table_mem[i] = (uint8_t)t_rand(&seed);
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(table_mem, ROWS, RB, -1, "threads", &t), 0);
	struct eht_lookup_opts o = {.size = sizeof(o), .flags = EHT_LOOKUP_CPU_ONLY, .strategy = EHT_LOOKUP_HOST,
				    .device = -1, .threads = 2, .numa_node = -1};
	CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
	if (!lk)
		return t_done();
	pthread_t th[NTHREADS];
	struct arg a[NTHREADS];
	for (int k = 0; k < NTHREADS; k++) {
		a[k] = (struct arg){.k = k};
		CHECK(pthread_create(&th[k], NULL, worker, &a[k]) == 0);
	}
	for (int k = 0; k < NTHREADS; k++) {
		pthread_join(th[k], NULL);
		if (a[k].bad_count || a[k].bad_rows || a[k].bad_rc) {
			fprintf(stderr, "thread %d (%d dead ids a call): %d of %d calls with another count, %d wrong rows, "
					"%d wrong results\n",
				k, k * 37, a[k].bad_count, CALLS, a[k].bad_rows, a[k].bad_rc);
			t_failures++;
		}
	}
	eht_lookup_destroy(lk);
	CHECK_RC(eht_table_close(t), 0);
	return t_done();
}
