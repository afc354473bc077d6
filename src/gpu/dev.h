/* SPDX-License-Identifier: Apache-2.0 */
/* dev.h: the device layer: devices, memory, pinned host memory, copies, streams, events, graphs,
 * stream memory ops, modules and launches, behind one backend-neutral API. The CUDA driver is under it
 * (src/gpu/cuda/, loaded at run time); a HIP backend would be a folder beside it implementing this file.
 * Every int call returns 0 or -errno with a message (util/err.h); destroy/free calls return nothing,
 * ignore a zero handle and are best effort (teardown runs after errors). Calls act on this thread's
 * current device (eht_dev_use). Without a driver or device eht_dev_load() is -ENODEV and every CPU
 * path keeps working. */
#ifndef EHT_GPU_DEV_H
#define EHT_GPU_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef unsigned long long eht_dptr;      /* a device address (same width as every backend's) */
typedef void *eht_stream;                 /* a backend stream; NULL: the default stream (as eht.h's void *stream) */
typedef struct eht_dev_event_s *eht_event;
typedef struct eht_dev_graph_s *eht_graph;
typedef struct eht_dev_graph_exec_s *eht_graph_exec;
typedef struct eht_dev_module_s *eht_module;
typedef struct eht_dev_kernel_s *eht_kernel;
typedef void (*eht_host_fn)(void *arg);

/* ---- the driver and devices */
/* Loads the backend once per process (thread-safe). Returns 0; -ENODEV (no driver, no device,
 * EHT_NO_CUDA=1) or -ENOSYS (a mandatory entry point missing). Says once, in one line, why not. */
int eht_dev_load(void);
/* Number of devices; 0 without a driver or device (a query: leaves no error text). */
int eht_dev_count(void);
/* Makes device ordinal `device` current on this thread (its primary context). */
int eht_dev_use(int device);
/* This thread's current context (opaque; NULL when none) and its device ordinal (-1 when none);
 * either may be NULL. Returns 0, -ENODEV without a driver, or a driver error. */
int eht_dev_current(void **ctx, int *device);

/* Optional features: each rests on driver entry points that may be missing (older drivers,
 * restricted environments); a missing one turns off only its feature. */
enum eht_dev_feature {
	EHT_DEV_FEAT_CORE = 0,  /* mandatory: without it eht_dev_load fails */
	EHT_DEV_FEAT_INFO,      /* names, memory size, driver version, error names (eht probe) */
	EHT_DEV_FEAT_PIN,       /* registering host memory in place (region and memory tiers) */
	EHT_DEV_FEAT_GRAPHS,    /* stream capture and graph replay */
	EHT_DEV_FEAT_HOST_FUNC, /* host functions on a stream */
	EHT_DEV_FEAT_MEM_OPS,   /* stream write/wait of a 32-bit word */
	EHT_DEV_FEAT_VMM,       /* virtual memory management: host-NUMA allocations, export, import */
	EHT_DEV_FEAT_PRIORITY,  /* launch priority (EHT_LAUNCH_URGENT) */
	EHT_DEV_FEAT_COUNT
};
/* Whether the loaded driver has every entry point of feature f (false without a driver). */
bool eht_dev_has(enum eht_dev_feature f);
/* The feature's name ("graphs"). */
const char *eht_dev_feature_name(enum eht_dev_feature f);

enum eht_dev_attr {
	EHT_DEV_ATTR_SM_COUNT,
	EHT_DEV_ATTR_CC_MAJOR,
	EHT_DEV_ATTR_CC_MINOR,
	EHT_DEV_ATTR_PCI_DOMAIN,
	EHT_DEV_ATTR_PCI_BUS,
	EHT_DEV_ATTR_PCI_DEVICE,
	EHT_DEV_ATTR_HOST_NUMA_ID,   /* host NUMA node of the device (-1 or an error where unknown) */
	EHT_DEV_ATTR_HOST_NUMA_VMM,  /* host-NUMA virtual memory allocations supported */
	EHT_DEV_ATTR_FABRIC_HANDLES, /* FABRIC handle export supported */
	EHT_DEV_ATTR_FD_HANDLES,     /* POSIX-fd handle export supported */
};
int eht_dev_attr(int device, enum eht_dev_attr a, int *value);
/* Feature INFO: the device's name and memory; the driver's version (CUDA: 12080 for 12.8). */
int eht_dev_name(int device, char *name, size_t len);
int eht_dev_total_mem(int device, size_t *bytes);
int eht_dev_driver_version(int *version);

/* ---- memory */
int eht_dev_alloc(eht_dptr *d, size_t bytes);
void eht_dev_free(eht_dptr d);
/* Host memory flags: PORTABLE (pinned for every context), MAPPED (GPU-visible at eht_dev_host_dptr),
 * READ_ONLY (register only: the GPU only reads it). */
#define EHT_DEV_HOST_PORTABLE 0x1u
#define EHT_DEV_HOST_MAPPED 0x2u
#define EHT_DEV_HOST_READ_ONLY 0x8u
int eht_dev_host_alloc(void **p, size_t bytes, unsigned flags);
void eht_dev_host_free(void *p);
/* Feature PIN: registers [p, p + bytes) for DMA (one range; src/gpu/pin.h chunks large ones). */
int eht_dev_host_register(void *p, size_t bytes, unsigned flags);
int eht_dev_host_unregister(void *p);
/* The device address of mapped pinned host memory p. */
int eht_dev_host_dptr(eht_dptr *d, void *p);
/* Whether host memory [p, p + bytes) is already readable in place by the current device without a
 * registration of ours: memory pinned and mapped by anyone (cuMemHostAlloc, cuMemHostRegister: its
 * device address, contiguous over the range), or a virtual-memory mapping this device may read
 * (cuMem host-NUMA: the same address; feature VMM). The first and last bytes are asked. A query
 * (leaves no error text): 0 with *d set, or -ENOENT (register it to read it) or -ENODEV. */
int eht_dev_host_mapped(const void *p, size_t bytes, eht_dptr *d);
/* Whether p is GPU memory (device or managed): true/false, false on any error. */
bool eht_dev_is_device_ptr(const void *p);

/* ---- copies and fills (async: on stream s, host memory pinned for overlap) */
int eht_dev_h2d(eht_dptr dst, const void *src, size_t n);
int eht_dev_d2h(void *dst, eht_dptr src, size_t n);
int eht_dev_h2d_async(eht_dptr dst, const void *src, size_t n, eht_stream s);
int eht_dev_d2h_async(void *dst, eht_dptr src, size_t n, eht_stream s);
int eht_dev_d2d_async(eht_dptr dst, eht_dptr src, size_t n, eht_stream s);
int eht_dev_memset8(eht_dptr d, unsigned char v, size_t n);
int eht_dev_memset8_async(eht_dptr d, unsigned char v, size_t n, eht_stream s);
int eht_dev_memset32_async(eht_dptr d, uint32_t v, size_t count, eht_stream s);
/* Waits for all work of the current device (every stream). */
int eht_dev_sync(void);

/* ---- streams and events */
#define EHT_STREAM_NONBLOCKING 0x1u /* does not synchronize with the default stream */
int eht_dev_stream_create(eht_stream *s, unsigned flags);
void eht_dev_stream_destroy(eht_stream s);
int eht_dev_stream_sync(eht_stream s);
int eht_dev_stream_wait_event(eht_stream s, eht_event e);
/* Whether s is being captured into a graph (never true without feature GRAPHS). */
int eht_dev_stream_capturing(eht_stream s, bool *capturing);

#define EHT_EVENT_TIMING 0x1u /* eht_dev_event_ms can measure it (else the cheaper untimed event) */
int eht_dev_event_create(eht_event *e, unsigned flags);
void eht_dev_event_destroy(eht_event e);
int eht_dev_event_record(eht_event e, eht_stream s);
int eht_dev_event_sync(eht_event e);
/* 1 when everything before the event has run, 0 when not yet, -errno on error. */
int eht_dev_event_done(eht_event e);
int eht_dev_event_ms(float *ms, eht_event start, eht_event end);

/* ---- graphs (feature GRAPHS) and host functions (feature HOST_FUNC): -ENOTSUP without them */
enum eht_capture_mode { EHT_CAPTURE_GLOBAL = 0, EHT_CAPTURE_THREAD_LOCAL = 1, EHT_CAPTURE_RELAXED = 2 };
int eht_dev_capture_begin(eht_stream s, enum eht_capture_mode mode);
int eht_dev_capture_end(eht_stream s, eht_graph *g);
int eht_dev_graph_instantiate(eht_graph_exec *x, eht_graph g);
int eht_dev_graph_launch(eht_graph_exec x, eht_stream s);
void eht_dev_graph_exec_destroy(eht_graph_exec x);
void eht_dev_graph_destroy(eht_graph g);
int eht_dev_host_func(eht_stream s, eht_host_fn fn, void *arg);

/* ---- stream memory ops (feature MEM_OPS): the stream writes *addr = v, or waits until *addr
 * compares to v by cond; addr: device memory or mapped pinned host memory. */
enum eht_wait_cond { EHT_WAIT_GEQ = 0, EHT_WAIT_EQ = 1, EHT_WAIT_AND = 2, EHT_WAIT_NOR = 3 };
int eht_dev_stream_write32(eht_stream s, eht_dptr addr, uint32_t v);
int eht_dev_stream_wait32(eht_stream s, eht_dptr addr, uint32_t v, enum eht_wait_cond cond);

/* ---- modules and launches */
/* Loads the kernel image built from src/gpu/kernels/<image>.cu (src/gpu/fatbin.h) on the current
 * device. Returns 0, -ENOTSUP when this build has no such image (no nvcc), or a driver error. */
int eht_dev_module_load(eht_module *m, const char *image);
void eht_dev_module_unload(eht_module m);
int eht_dev_kernel(eht_kernel *k, eht_module m, const char *name);
/* Urgent: the kernel's blocks are dispatched ahead of the waiting blocks of other streams' kernels (the
 * device's greatest priority; not preemption: blocks already running finish first). For small kernels
 * beside the model's: a GEMM launched before them would otherwise hand its own next blocks every SM it
 * frees until it has none left. Without feature PRIORITY it is a plain launch. */
#define EHT_LAUNCH_URGENT 0x1u
/* A 1-D launch of k (args: pointers to each parameter, in order) on s; shmem: dynamic shared bytes;
 * flags: EHT_LAUNCH_*. */
int eht_dev_launch(eht_kernel k, unsigned grid, unsigned block, unsigned shmem, eht_stream s, void **args,
		   unsigned flags);

#endif
