/* SPDX-License-Identifier: Apache-2.0 */
/* bench_lookup_time.c: `eht bench lookup`'s timing of one call in one mode (ids on the host, in GPU
 * memory, or a CUDA graph replayed with fresh ids), the same for every row: strategies, the engine's
 * own call. */
#include <stdint.h>
#include <sys/resource.h>

#include "bench.h"
#include "bench_lookup.h"
#include "util/clock.h"

const char *const lk_mode_names[NMODES] = {"host_ids", "gpu_ids", "graph"};

double lk_cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec * 1e-6;
}

/* Times the calling thread was preempted (involuntary context switches), 0 where unknown. */
static long thread_preemptions(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

/* The call captured once into a graph reading c->dcap; 0 or -errno. */
static int capture(struct bench_ctx *c, const struct bench_call *call, eht_graph *g, eht_graph_exec *ge)
{
	int err = eht_dev_capture_begin(c->s, EHT_CAPTURE_GLOBAL);
	if (err)
		return err;
	err = call->run(call->arg, ON_GRAPH, (const void *)(uintptr_t)c->dcap, c->out, c->s);
	int erc = eht_dev_capture_end(c->s, g);
	if (!err)
		err = erc;
	if (!err)
		err = eht_dev_graph_instantiate(ge, *g);
	return err;
}

int lk_time_mode(struct bench_ctx *c, const struct bench_call *call, int mode, double *med, double *p90,
		 struct call_cpu *cpu)
{
	int err = 0;
	eht_graph g = NULL;
	eht_graph_exec ge = NULL;
	/* The rows the last run read, out of the GPU's L2: on the lent H200 a DIRECT graph of 1,024 ids
	 * replaying the steps its eager run had just read took 0.027 ms, on steps last read 200 steps
	 * earlier 0.043 (HOST 0.058 and 0.049). */
	if (c->flush)
		err = eht_dev_memset8_async(c->flush, 0, LK_FLUSH_BYTES, c->s);
	if (!err && mode == ON_GRAPH)
		err = capture(c, call, &g, &ge);
	double cpu0 = 0;
	long preempt0 = 0;
	struct bench_thread_cpu th0 = {0}, th1;
	for (int rep = -2; rep < c->reps && !err; rep++) {
		size_t off = (size_t)(rep + 2) * c->stride;
		if (rep == 0) { /* the process's clock first: eht's threads' window nests in its window */
			cpu0 = lk_cpu_seconds();
			bench_thread_cpu(&th0);
			preempt0 = thread_preemptions();
		}
		const void *pid = mode == ON_HOST ? (const void *)(c->ids + off)
						  : (const void *)(uintptr_t)(c->dids + off * sizeof(int32_t));
		if (mode == ON_GRAPH) { /* fresh ids into the captured buffer, not timed */
			err = eht_dev_d2d_async(c->dcap, c->dids + off * sizeof(int32_t), call->ncopy * sizeof(int32_t), c->s);
			if (!err)
				err = eht_dev_stream_sync(c->s);
		}
		if (c->gap_s > 0) /* the CPU and GPU idle, as between a model's lookups */
			bench_idle(c->gap_s);
		double t0 = eht_thread_cpu_s(), a = eht_now_s();
		if (!err)
			err = mode == ON_GRAPH ? eht_dev_graph_launch(ge, c->s)
					       : call->run(call->arg, mode, pid, c->out, c->gpu ? c->s : NULL);
		/* (read while the GPU still works: the wall time to the sync does not grow) */
		double t1 = eht_thread_cpu_s();
		if (!err && c->gpu)
			err = eht_dev_stream_sync(c->s);
		if (rep >= 0) {
			c->times[rep] = eht_now_s() - a;
			c->call_cpu[rep] = t1 - t0;
		}
	}
	if (ge)
		eht_dev_graph_exec_destroy(ge);
	if (g)
		eht_dev_graph_destroy(g);
	if (!err) {
		cpu->preempted = (double)(thread_preemptions() - preempt0) / c->reps;
		/* eht's threads before the whole, as they were read after it at the start: a pool thread
		 * still spinning after the last call then never counts more than the process did */
		bench_thread_cpu(&th1);
		cpu->all_ms = (lk_cpu_seconds() - cpu0) * 1e3 / c->reps;
		cpu->pool_ms = (th1.pool_s - th0.pool_s) * 1e3 / c->reps;
		cpu->poller_ms = (th1.poller_s - th0.poller_s) * 1e3 / c->reps;
		struct bench_stats st;
		bench_stats(c->call_cpu, c->reps, 1e6, &st);
		cpu->call_us = st.median;
		bench_stats(c->times, c->reps, 1e3, &st);
		*med = st.median;
		*p90 = st.p90;
	}
	return err;
}
