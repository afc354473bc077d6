/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_lookup_background.c: the background mode (EHT_LOOKUP_BACKGROUND: the stream waits for the
 * CPU's groups of rows with stream memory operations and the copy engine moves them, no kernel waits
 * on an SM) bit-identical to the CPU reference for HOST and AUTO (which runs as HOST there), raw and
 * bf16: eager with ids in GPU memory, then captured once in a CUDA graph and replayed with new ids
 * (GPU ids and pinned host ids), dead ids counted; runs over max_batch ids keep the kernel path and stay
 * identical too. The same with a hot set and with GPU dedup, whose distinct misses (their count known
 * only on the GPU) go the background way too. Checks the requests really went the background way,
 * and that eager requests are pushed (the CPU's own copies, one wait on the stream; a bf16 run
 * dequantized by the CPU's kernels too: group by group over 16,384 rows, else once after the last
 * copy), captured ones unless EHT_LOOKUP_BG_STREAM
 * (the flag, or the environment's 1 / 0 overriding it) asks for the stream's way, and a bf16 capture of
 * 20,000 rows always the stream's way, dequantized group by group on the dequant stream.
 * Exit 77 without a GPU (or where the driver lacks stream memory operations). */
#include <stdlib.h>
#include <string.h>

#include "gpu_lookup_ref.h"
#include "lookup/gather/bell/bell.h"
#include "lookup/gather/bell/poller.h"
#include "lookup/gather/bell/requests.h"

#define RB EHT_ENGRAM_ROW_BYTES
#define NMAX 20000

static struct t_lookup_ref g_lref;

/* Whether an engine made with flags pushes its captured requests: the environment's EHT_LOOKUP_BG_PUSH,
 * else unless the flags ask for the stream's way. */
static bool want_push(uint32_t flags)
{
	const char *e = getenv("EHT_LOOKUP_BG_PUSH");
	return e && *e ? strtoull(e, NULL, 0) != 0 : !(flags & EHT_LOOKUP_BG_STREAM);
}

int main(void)
{
	if (!t_have_gpu())
		t_skip("no GPU");
	if (eht_dev_use(0))
		t_skip("cannot use GPU 0");
	if (!eht_dev_has(EHT_DEV_FEAT_MEM_OPS))
		t_skip("the driver has no stream memory operations");
	eht_stream s = NULL;
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), 0);
	uint64_t rs = 5;
	g_lref.nrows = 50000;
	uint8_t *ref = t_rand_rows(g_lref.nrows, RB, &rs);
	g_lref.rows = ref;
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(ref, g_lref.nrows, RB, 0, "bg-mem", &t), 0);
	static const uint64_t batches[] = {NMAX, 8192}; /* one piece per run; and runs of several pieces */
	for (int push = 0; push < 2; push++)
	for (int fmt = 0; t && fmt < 2; fmt++)
		for (int strategy = EHT_LOOKUP_AUTO; strategy <= EHT_LOOKUP_HOST; strategy += EHT_LOOKUP_HOST)
			for (size_t b = 0; b < 2; b++) {
				/* push: the default (the flag said once more half the time) */
				const uint32_t flags = EHT_LOOKUP_BACKGROUND |
						       (push ? (b ? EHT_LOOKUP_BG_PUSH : 0) : EHT_LOOKUP_BG_STREAM);
				struct eht_lookup_opts o = {.size = sizeof(o), .flags = flags,
							    .strategy = strategy, .format = fmt, .device = 0, .numa_node = -1,
							    .threads = 4, .max_batch = batches[b]};
				eht_lookup *lk = NULL;
				CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
				if (!lk)
					continue;
				/* the stream's way dequantizes a capture this large group by group */
				g_lref.capture_n = fmt == EHT_LOOKUP_BF16 && batches[b] > LK_BG_DEQUANT_ROWS ? NMAX : 0;
				CHECK(lk->background);
				CHECK(eht_lookup_background(lk) == 1); /* what engines and eht bench step read */
				CHECK(lk->g.sm_cap > 0 && (int)lk->g.sm_cap < lk->g.sms); /* every kernel capped */
				t_lookup_check_engine(&g_lref, "memory", lk, strategy, fmt, s, NMAX, false, &rs);
				fprintf(stderr, "push %d fmt %d strategy %d max_batch %llu: %llu background requests, %llu pushed\n",
					push, fmt, strategy, (unsigned long long)batches[b],
					(unsigned long long)atomic_load(&lk->bell->bg_reqs),
					(unsigned long long)lk->bell->pushed_reqs);
				CHECK(atomic_load(&lk->bell->bg_reqs) > 0);
				/* bf16: the groups of the NMAX-row run were dequantized on the dequant stream,
				 * beside the next groups' copies: enqueued by the CPU after its copies where
				 * the request was pushed (every eager one), else by the stream's way. The CPU
				 * also dequantizes every eager bf16 request of fewer rows, once, after its
				 * last copy. */
				const struct lk_bell *bell = lk->bell;
				bool side = fmt == EHT_LOOKUP_BF16;
				const bool big = side && batches[b] > LK_BG_DEQUANT_ROWS;
				CHECK((bell->bg_xstream != NULL) == side);
				CHECK(bell->bg_push == want_push(flags));
				/* eager: pushed; captured: pushed only with the flag, a bf16 prefill too */
				CHECK(bell->pushed_reqs > 0);
				CHECK(bell->bg_push ? bell->pushed_reqs == atomic_load(&bell->bg_reqs)
						    : bell->pushed_reqs < atomic_load(&bell->bg_reqs));
				CHECK((atomic_load(&bell->pushed_dequants) > 0) == side);
				CHECK((bell->bg_side_dequants > 0) == (big && !bell->bg_push));
				eht_lookup_destroy(lk);
			}
	/* A hot set (a fifth of the rows) and GPU dedup: the misses of the dedup pass go the background
	 * way. */
	g_lref.capture_n = 0;
	static int64_t hot[10000];
	for (size_t i = 0; i < 10000; i++)
		hot[i] = (int64_t)(i * 5 + 3);
	for (int push = 0; push < 2; push++)
	for (int fmt = 0; t && fmt < 2; fmt++)
		for (int kind = 0; kind < 2; kind++) {
			const uint32_t flags = EHT_LOOKUP_BACKGROUND | EHT_LOOKUP_NO_HOTSET | (kind ? EHT_LOOKUP_GPU_DEDUP : 0) |
					       (push ? 0 : EHT_LOOKUP_BG_STREAM);
			struct eht_lookup_opts o = {.size = sizeof(o), .flags = flags,
						    .strategy = EHT_LOOKUP_HOST, .format = fmt, .device = 0, .numa_node = -1,
						    .threads = 4, .max_batch = NMAX};
			eht_lookup *lk = NULL;
			CHECK_RC(eht_lookup_create(t, &o, &lk), 0);
			if (!lk)
				continue;
			if (!kind)
				CHECK_RC(eht_lookup_set_hotset(lk, hot, 10000), 0);
			t_lookup_check_engine(&g_lref, kind ? "memory+dedup" : "memory+hot", lk, EHT_LOOKUP_HOST, fmt, s, NMAX,
					      true, &rs); /* a dedup pass captures only GPU ids */
			fprintf(stderr, "fmt %d %s: %llu background requests, %llu of them compact\n", fmt,
				kind ? "dedup" : "hot set", (unsigned long long)atomic_load(&lk->bell->bg_reqs),
				(unsigned long long)atomic_load(&lk->bell->bg_compact_reqs));
			/* small runs skip the dedup pass (plain background requests): the compact ones count */
			CHECK(atomic_load(&lk->bell->bg_compact_reqs) > 0);
			CHECK(lk->bell->bg_push == want_push(flags));
			CHECK(lk->bell->pushed_reqs > 0);
			CHECK(lk->bell->bg_push ? lk->bell->pushed_reqs == atomic_load(&lk->bell->bg_reqs)
						: lk->bell->pushed_reqs < atomic_load(&lk->bell->bg_reqs));
			eht_lookup_destroy(lk);
		}
	eht_table_close(t);
	eht_dev_stream_destroy(s);
	free(ref);
	return t_done();
}
