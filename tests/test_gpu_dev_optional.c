/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_dev_optional.c: optional driver entry points (src/gpu/cuda/cu_driver.h). A missing
 * optional one (hidden with EHT_TEST_CU_HIDE) turns off only its feature: graphs and host-NUMA memory
 * answer -ENOTSUP naming the entry point while kernels still run; a missing mandatory one turns the
 * driver off. Each case runs in a child: the driver loads once per process. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/dev.h"
#include "gpu/gpu_lookup.h"
#include "gpu/probe.h"
#include "gpu/vmm.h"
#include "testutil.h"

/* DIRECT on a 64-row device table: kernels load and launch (urgent: EHT_LAUNCH_URGENT on every
 * launch, a plain launch where feature PRIORITY is off), rows come back in request order. */
static void check_direct(bool urgent)
{
	enum { ROWS = 64, RB = 16, N = 40 };
	struct eht_gpu_lookup g;
	if (eht_gpu_lookup_load(0, &g) == -ENOTSUP)
		return; /* a build without nvcc has no kernels to run */
	g.urgent = urgent;
	uint8_t table[ROWS * RB], out[N * RB];
	int64_t ids[N];
	for (int i = 0; i < ROWS * RB; i++)
		table[i] = (uint8_t)(i * 7 + 3);
	for (int i = 0; i < N; i++)
		ids[i] = (i * 37) % ROWS;
	eht_dptr dt = 0, di = 0, dout = 0, dc = 0;
	CHECK_RC(eht_dev_alloc(&dt, sizeof(table)), 0);
	CHECK_RC(eht_dev_alloc(&di, sizeof(ids)), 0);
	CHECK_RC(eht_dev_alloc(&dout, sizeof(out)), 0);
	CHECK_RC(eht_dev_alloc(&dc, 16), 0);
	CHECK_RC(eht_dev_h2d(dt, table, sizeof(table)), 0);
	CHECK_RC(eht_dev_h2d(di, ids, sizeof(ids)), 0);
	CHECK_RC(eht_dev_memset8(dc, 0, 16), 0);
	struct eht_gpu_ids gi = {.ids = di, .id64 = 1, .off = 0, .lo = 0, .hi = ROWS};
	struct eht_gpu_table tab = {.base = dt, .rb = RB};
	CHECK_RC(eht_gpu_direct(&g, NULL, &gi, N, &tab, dout, EHT_LK_FMT_RAW, dc, NULL, 0), 0);
	CHECK_RC(eht_dev_sync(), 0);
	CHECK_RC(eht_dev_d2h(out, dout, sizeof(out)), 0);
	for (int i = 0; i < N; i++)
		CHECK(memcmp(out + i * RB, table + ids[i] * RB, RB) == 0);
	eht_dev_free(dt);
	eht_dev_free(di);
	eht_dev_free(dout);
	eht_dev_free(dc);
	eht_gpu_lookup_unload(&g);
}

/* Optional pieces hidden: only their features are off. */
static void hidden_optional(void)
{
	CHECK_RC(eht_dev_load(), 0);
	CHECK(!eht_dev_has(EHT_DEV_FEAT_GRAPHS));
	CHECK(!eht_dev_has(EHT_DEV_FEAT_VMM));
	CHECK(!eht_dev_has(EHT_DEV_FEAT_MEM_OPS));
	CHECK(!eht_dev_has(EHT_DEV_FEAT_PRIORITY));
	CHECK(eht_dev_has(EHT_DEV_FEAT_CORE) && eht_dev_has(EHT_DEV_FEAT_PIN));
	CHECK_RC(eht_dev_use(0), 0);
	eht_stream s = NULL;
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), 0);
	CHECK_RC(eht_dev_capture_begin(s, EHT_CAPTURE_GLOBAL), -ENOTSUP);
	CHECK(strstr(eht_last_error(), "cuStreamBeginCapture") != NULL);
	bool cap = true;
	CHECK_RC(eht_dev_stream_capturing(s, &cap), 0);
	CHECK(!cap);
	CHECK_RC(eht_dev_stream_wait32(s, 0, 1, EHT_WAIT_GEQ), -ENOTSUP);
	size_t gran = 0;
	CHECK_RC(eht_vmm_granularity(0, EHT_VMM_FD, &gran), -ENOTSUP);
	CHECK(strstr(eht_last_error(), "cuMemCreate") != NULL);
	char why[192] = "";
	CHECK_RC(eht_vmm_export_supported(0, EHT_VMM_FD, why, sizeof(why)), 0);
	CHECK(strstr(why, "cuMemCreate") != NULL || strstr(why, "no host-NUMA") != NULL);
	eht_dev_stream_destroy(s);
	check_direct(false);
	check_direct(true); /* (a plain launch: cuLaunchKernelEx is hidden) */
}

/* A mandatory entry point hidden: the driver is off as a whole. */
static void hidden_mandatory(void)
{
	CHECK_RC(eht_dev_load(), -ENOSYS);
	CHECK(strstr(eht_last_error(), "cuMemAlloc") != NULL);
	CHECK_RC(eht_dev_count(), 0);
	CHECK(!eht_dev_has(EHT_DEV_FEAT_CORE) && !eht_dev_has(EHT_DEV_FEAT_GRAPHS));
}

/* Everything present: the stream writes a word, then waits for it (stream memory ops). */
static void all_present(void)
{
	CHECK_RC(eht_dev_load(), 0);
	CHECK_RC(eht_dev_use(0), 0);
	for (int f = 0; f < EHT_DEV_FEAT_COUNT; f++)
		if (!eht_dev_has(f))
			fprintf(stderr, "note: this driver lacks feature %s\n", eht_dev_feature_name(f));
	CHECK(eht_dev_has(EHT_DEV_FEAT_GRAPHS));
	if (eht_dev_has(EHT_DEV_FEAT_PRIORITY))
		check_direct(true); /* through cuLaunchKernelEx with the priority attribute */
	if (!eht_dev_has(EHT_DEV_FEAT_MEM_OPS))
		return;
	eht_dptr d = 0;
	uint32_t w = 0;
	eht_stream s = NULL;
	CHECK_RC(eht_dev_alloc(&d, 4), 0);
	CHECK_RC(eht_dev_stream_create(&s, EHT_STREAM_NONBLOCKING), 0);
	/* On s too: a fill on the default stream is not ordered before a non-blocking stream's write. */
	CHECK_RC(eht_dev_memset8_async(d, 0, 4, s), 0);
	CHECK_RC(eht_dev_stream_write32(s, d, 7), 0);
	CHECK_RC(eht_dev_stream_wait32(s, d, 7, EHT_WAIT_GEQ), 0);
	CHECK_RC(eht_dev_stream_sync(s), 0);
	CHECK_RC(eht_dev_d2h(&w, d, 4), 0);
	CHECK(w == 7);
	eht_dev_stream_destroy(s);
	eht_dev_free(d);
}

static int run_child(const char *hide, void (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0) {
		if (hide)
			t_setenv("EHT_TEST_CU_HIDE", hide);
		fn();
		_exit(t_done());
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		fprintf(stderr, "child for EHT_TEST_CU_HIDE=%s did not exit\n", hide ? hide : "");
		return 1;
	}
	return WEXITSTATUS(st);
}

int main(void)
{
	/* Asked in a child: the driver must not be initialized in this process before the forks. */
	pid_t pid = fork();
	if (pid == 0)
		_exit(eht_dev_count() > 0 ? 0 : T_SKIP);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		t_skip("no CUDA device");
	int bad = run_child("cuStreamBeginCapture,cuMemCreate,cuStreamWaitValue32,cuLaunchKernelEx", hidden_optional);
	bad |= run_child("cuMemAlloc", hidden_mandatory);
	bad |= run_child(NULL, all_present);
	return bad ? 1 : 0;
}
