/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_region_pin.c: two processes pin the same region and the GPU reads (cuMemcpyDtoH from the
 * device pointer) match the CPU bytes; a region larger than the pin chunk is pinned in chunks with
 * one contiguous device pointer (EHT_PIN_CHUNK=1G on a 3 GiB region; EHT_TEST_PIN_BIG=1 adds a real
 * 65 GiB region over the default 64 GiB chunk). Skips (77) without a GPU. CUDA is only ever
 * initialized in forked children, never in the parent before a fork. */
#include <string.h>

#include "gpu/dev.h"
#include "gpu/pin.h"
#include "region_testutil.h"

static const char *dir;

/* Compares len bytes at off through the GPU mapping with the CPU mapping. */
static int gpu_matches(eht_region *r, uint64_t off, size_t len)
{
	unsigned char *buf = malloc(len);
	if (!buf)
		return 0;
	memset(buf, 0xee, len);
	/* One copy per registered chunk: a device pointer is valid across chunks for kernels, but a
	 * cuMemcpy must stay inside one registration. */
	size_t chunk = eht_gpu_pin_chunk(), done = 0;
	int rc = 0;
	while (!rc && done < len) {
		uint64_t at = off + done;
		size_t n = len - done, room = chunk - (size_t)(at % chunk);
		n = n < room ? n : room;
		rc = eht_dev_d2h(buf + done, eht_region_device_ptr(r) + at, n);
		done += n;
	}
	if (rc)
		fprintf(stderr, "cuMemcpyDtoH at %llu: %s\n", (unsigned long long)off, eht_last_error());
	int ok = rc == 0 && memcmp(buf, (char *)eht_region_data(r) + off, len) == 0;
	free(buf);
	return ok;
}

/* Child: open the region, pin it, compare GPU and CPU views at the given offsets. Exit 0 or 1. */
static void pin_child(const char *name, uint64_t bytes, const uint64_t *offs, int noffs, size_t len, bool numa_dev)
{
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_OPEN_ONLY, .dir = dir};
	if (numa_dev) {
		/* Also exercise the NUMA default from the GPU's host node on a fresh region. */
		struct eht_region_opts n = {.size = sizeof(n), .flags = EHT_REGION_KEEP | EHT_REGION_NUMA_DEVICE,
					    .dir = dir, .device = 0};
		eht_region *x = NULL;
		CHECK_RC(eht_region_open("numa-dev", 1u << 20, &n, &x), 0);
		CHECK(x && eht_region_numa_node(x) >= 0);
		CHECK_RC(eht_region_close(&x), 0);
	}
	eht_region *r = NULL;
	CHECK_RC(eht_region_open(name, bytes, &o, &r), 0);
	if (!r)
		_exit(t_done());
	CHECK(!eht_region_is_pinned(r));
	CHECK_RC(eht_region_pin(r, 0), 0);
	CHECK(eht_region_is_pinned(r) && eht_region_device_ptr(r) != 0 && eht_region_device(r) == 0);
	CHECK_RC(eht_region_pin(r, 0), 0); /* already pinned */
	if (eht_region_is_pinned(r))
		for (int i = 0; i < noffs; i++)
			CHECK(gpu_matches(r, offs[i], offs[i] + len <= bytes ? len : (size_t)(bytes - offs[i])));
	CHECK_RC(eht_region_close(&r), 0);
	CHECK_RC(eht_region_close(&r), 0);
	_exit(t_done());
}

/* Creates `name` in this process (no CUDA here), filled with a pattern, ready. */
static eht_region *make_region(const char *name, uint64_t bytes)
{
	struct eht_region_opts o = {.size = sizeof(o), .flags = EHT_REGION_KEEP, .dir = dir};
	eht_region *r = NULL;
	CHECK_RC(eht_region_open(name, bytes, &o, &r), 0);
	if (!r)
		return NULL;
	r_fill(eht_region_data(r), bytes, 0x5eed);
	CHECK_RC(eht_region_mark_ready(r), 0);
	return r;
}

int main(void)
{
	if (!t_have_gpu_forked())
		t_skip("no CUDA GPU");
	dir = r_tmpdir("gpu-region");

	/* Two processes pin the same 64 MiB region. */
	const uint64_t small = (64u << 20) + 4096 + 100;
	eht_region *r = make_region("two", small);
	uint64_t offs[] = {0, 12345, 32u << 20, small - (1u << 20)};
	pid_t a = fork();
	if (a == 0)
		pin_child("two", small, offs, 4, 1u << 20, true);
	pid_t b = fork();
	if (b == 0)
		pin_child("two", small, offs, 4, 1u << 20, false);
	CHECK(r_wait(a) == 0);
	CHECK(r_wait(b) == 0);
	CHECK_RC(eht_region_close(&r), 0);
	CHECK_RC(eht_region_unlink("two", dir), 0);

	/* 3 GiB + a partial page in 1 GiB chunks: compare across every chunk boundary. */
	const uint64_t gib = 1ull << 30, big = 3 * gib + 1000;
	r = make_region("chunked", big);
	uint64_t boffs[] = {0, gib - (512u << 10), 2 * gib - (512u << 10), 3 * gib - (512u << 10), big - 1000};
	t_setenv("EHT_PIN_CHUNK", "1G");
	a = fork();
	if (a == 0)
		pin_child("chunked", big, boffs, 5, 1u << 20, false);
	CHECK(r_wait(a) == 0);
	t_setenv("EHT_PIN_CHUNK", NULL);
	CHECK_RC(eht_region_close(&r), 0);
	CHECK_RC(eht_region_unlink("chunked", dir), 0);

	/* Optional: a real region over the default 64 GiB chunk (needs about 66 GiB of /dev/shm). */
	const char *pin_big = getenv("EHT_TEST_PIN_BIG");
	if (pin_big && atoi(pin_big)) {
		const uint64_t huge = 65 * gib;
		r = make_region("over64", huge);
		uint64_t hoffs[] = {0, 64 * gib - (512u << 10), huge - (1u << 20)};
		a = fork();
		if (a == 0)
			pin_child("over64", huge, hoffs, 3, 1u << 20, false);
		CHECK(r_wait(a) == 0);
		CHECK_RC(eht_region_close(&r), 0);
		CHECK_RC(eht_region_unlink("over64", dir), 0);
	}
	CHECK(r_count_files(dir) == 0);
	t_rmtree(dir);
	return t_done();
}
