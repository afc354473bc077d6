// SPDX-License-Identifier: Apache-2.0
// gpu_pull.cu: how fast this machine moves an inline prefill's bytes (196,608 rows of 264 bytes) of
// pinned host memory into GPU memory, without eht: the copy engine, and a kernel's 16-byte
// cache-volatile loads (as eht's stage-in kernel pulls staging). Each way with no CPU work beside it,
// and with 15 threads gathering random 264-byte rows of an 8 GiB buffer meanwhile (as eht's pool
// does), from cudaHostAlloc memory and from THP memory registered with cudaHostRegister. A machine
// whose eht prefill is slow shows here whether the link is slow alone or only beside the gather.
// Built and run by scripts/gpu-pull.sh.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <algorithm>
#include <atomic>
#include <vector>

#define CK(x)                                                                          \
	do {                                                                           \
		cudaError_t e_ = (x);                                                  \
		if (e_ != cudaSuccess) {                                               \
			fprintf(stderr, "gpu_pull: %s: %s\n", #x, cudaGetErrorString(e_)); \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

static const size_t BYTES = 196608ull * 264, ROW = 264, HUGE_PAGE = 2u << 20;
static const size_t TABLE_BYTES = 8ull << 30, SINK_BYTES = 4u << 20;
static const int GATHERERS = 15, REPS = 12;

__global__ void pull(const int4 *__restrict__ src, int4 *__restrict__ dst, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x, i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	for (; i + 7 * stride < n; i += 8 * stride) { /* 8 loads in flight a thread */
		int4 v[8];
#pragma unroll
		for (int k = 0; k < 8; k++)
			v[k] = __ldcv(src + i + k * stride);
#pragma unroll
		for (int k = 0; k < 8; k++)
			dst[i + k * stride] = v[k];
	}
	for (; i < n; i += stride)
		dst[i] = __ldcv(src + i);
}

struct gatherer {
	pthread_t t;
	const char *table;
	char *sink;
	uint64_t seed;
	const std::atomic<bool> *stop;
};

static void *gather(void *arg)
{
	gatherer *g = (gatherer *)arg;
	uint64_t x = g->seed;
	const size_t rows = TABLE_BYTES / ROW;
	size_t o = 0;
	while (!g->stop->load(std::memory_order_relaxed)) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(g->sink + o, g->table + (x % rows) * ROW, ROW);
		o = o + 2 * ROW > SINK_BYTES ? 0 : o + ROW;
	}
	return NULL;
}

// THP memory: 2 MiB-aligned anonymous memory advised huge and touched. *map/*maplen: what to munmap.
static char *thp_alloc(size_t bytes, void **map, size_t *maplen)
{
	*maplen = bytes + HUGE_PAGE;
	char *p = (char *)mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("gpu_pull: mmap");
		exit(1);
	}
	*map = p;
	char *a = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~((uintptr_t)HUGE_PAGE - 1));
	(void)madvise(a, bytes, MADV_HUGEPAGE); /* a hint: 4 KiB pages where THP is off */
	memset(a, 1, bytes);
	return a;
}

int main(void)
{
	int sms;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	char *h_pinned;
	CK(cudaHostAlloc((void **)&h_pinned, BYTES, cudaHostAllocPortable));
	memset(h_pinned, 1, BYTES);
	void *thp_map, *table_map, *sink_map;
	size_t thp_len, table_len, sink_len;
	const size_t thp_bytes = (BYTES + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	char *h_thp = thp_alloc(thp_bytes, &thp_map, &thp_len);
	CK(cudaHostRegister(h_thp, thp_bytes, cudaHostRegisterPortable));
	char *table = thp_alloc(TABLE_BYTES, &table_map, &table_len);
	char *sink = thp_alloc(GATHERERS * SINK_BYTES, &sink_map, &sink_len);
	void *d;
	CK(cudaMalloc(&d, BYTES));
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	const char *buf_name[2] = {"cudaHostAlloc", "THP registered"};
	char *bufs[2] = {h_pinned, h_thp};
	const char *how_name[3] = {"copy engine", "kernel loads", "kernel loads, buffer just written"};
	printf("%.1f MB of pinned memory into GPU memory, median of %d (min, max):\n", BYTES / 1e6, REPS);
	for (int load = 0; load < 2; load++) {
		std::atomic<bool> stop{false};
		gatherer g[GATHERERS];
		for (int i = 0; load && i < GATHERERS; i++) {
			g[i] = {0, table, sink + i * SINK_BYTES, 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1), &stop};
			if (pthread_create(&g[i].t, NULL, gather, &g[i]) != 0) {
				fprintf(stderr, "gpu_pull: pthread_create failed\n");
				exit(1);
			}
		}
		for (int b = 0; b < 2; b++)
			for (int how = 0; how < 3; how++) {
				std::vector<float> ms;
				for (int r = 0; r <= REPS; r++) { /* r = 0: a warm-up */
					if (how == 2) /* the CPU wrote it last, as the pool writes staging */
						memset(bufs[b], r, BYTES);
					CK(cudaEventRecord(e0));
					if (how == 0)
						CK(cudaMemcpyAsync(d, bufs[b], BYTES, cudaMemcpyHostToDevice));
					else
						pull<<<sms * 2, 256>>>((const int4 *)bufs[b], (int4 *)d, BYTES / 16);
					CK(cudaGetLastError());
					CK(cudaEventRecord(e1));
					CK(cudaEventSynchronize(e1));
					float t;
					CK(cudaEventElapsedTime(&t, e0, e1));
					if (r)
						ms.push_back(t);
				}
				std::sort(ms.begin(), ms.end());
				const float med = ms[ms.size() / 2];
				printf("pull %-14s %-34s %-31s %.3f ms (%.1f GB/s; %.3f, %.3f)\n", buf_name[b],
				       how_name[how], load ? "15 threads gathering meanwhile" : "no CPU work beside",
				       med, BYTES / (med * 1e6), ms.front(), ms.back());
			}
		stop = true;
		for (int i = 0; load && i < GATHERERS; i++)
			pthread_join(g[i].t, NULL);
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	CK(cudaFree(d));
	CK(cudaHostUnregister(h_thp));
	CK(cudaFreeHost(h_pinned));
	munmap(thp_map, thp_len);
	munmap(table_map, table_len);
	munmap(sink_map, sink_len);
	return 0;
}
