/* SPDX-License-Identifier: Apache-2.0 */
/* fake_hip.c: a fake HIP runtime (libamdhip64.so) over host memory, exporting the entry points the HIP
 * backend (src/gpu/hip/hip_rt.h) loads, with HIP's signatures and error codes, so that CI drives the
 * backend's host side without AMD hardware (fake_hip.h says how it behaves). Built three ways: the
 * full runtime; FAKE_HIP_MINIMAL, without one optional entry point of each feature; FAKE_HIP_NO_CORE,
 * without a mandatory one. One big lock: the backend may call from several threads. */
#include "fake_hip.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/hip/hip_types.h"

#define API __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int n_devices = 1, rt_version = 50221153, misuses;
static __thread int cur_device;
static char fail_name[64];
static int fail_err, fail_after;
static char trace_buf[1 << 16];
static size_t trace_len;
static uint64_t clock_ops; /* operations run so far: the fake's clock (a microsecond each) */

static void misuse(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fake_hip: misuse: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	misuses++;
}

static void trace(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (trace_len < sizeof(trace_buf) - 128) {
		int n = vsnprintf(trace_buf + trace_len, sizeof(trace_buf) - trace_len - 1, fmt, ap);
		if (n > 0)
			trace_len += (size_t)n;
		trace_buf[trace_len++] = '\n';
		trace_buf[trace_len] = '\0';
	}
	va_end(ap);
}

/* An injected failure for this call, or hipSuccess. */
static hipError_t injected(const char *name)
{
	if (fail_after > 0 && strcmp(name, fail_name) == 0 && --fail_after == 0)
		return fail_err;
	return hipSuccess;
}

#define ENTER(name)                                                                                  \
	pthread_mutex_lock(&mu);                                                                     \
	hipError_t inj_ = injected(name);                                                            \
	if (inj_ != hipSuccess) {                                                                    \
		pthread_mutex_unlock(&mu);                                                           \
		return inj_;                                                                         \
	}
#define LEAVE(rc)                                                                                    \
	do {                                                                                         \
		pthread_mutex_unlock(&mu);                                                           \
		return (rc);                                                                         \
	} while (0)

/* ------------------------------------------------------------------ memory ranges */
enum mem_kind { MEM_DEVICE, MEM_HOST, MEM_REGISTERED };
struct range {
	uint8_t *p;
	size_t n;
	enum mem_kind kind;
	unsigned flags;
	struct range *next;
};
static struct range *ranges;

static struct range *range_of(const void *p, size_t n, int kind)
{
	for (struct range *r = ranges; r; r = r->next)
		if ((kind < 0 || (int)r->kind == kind) && (const uint8_t *)p >= r->p &&
		    (const uint8_t *)p + n <= r->p + r->n)
			return r;
	return NULL;
}

static void range_add(void *p, size_t n, enum mem_kind kind, unsigned flags)
{
	struct range *r = calloc(1, sizeof(*r));
	*r = (struct range){.p = p, .n = n, .kind = kind, .flags = flags, .next = ranges};
	ranges = r;
}

/* Removes the range starting at p of that kind; false when there is none. */
static bool range_del(const void *p, enum mem_kind kind)
{
	for (struct range **pp = &ranges; *pp; pp = &(*pp)->next)
		if ((*pp)->p == p && (*pp)->kind == kind) {
			struct range *r = *pp;
			*pp = r->next;
			free(r);
			return true;
		}
	return false;
}

/* ------------------------------------------------------------------ streams, events, queued work */
enum op_kind { OP_COPY, OP_SET8, OP_SET32, OP_RECORD, OP_WAIT_EVENT, OP_HOST_FN, OP_WRITE32, OP_WAIT32, OP_LAUNCH };
struct fevent;
struct op {
	enum op_kind kind;
	uint8_t *dst;
	const uint8_t *src;
	uint8_t *copy; /* a snapshot of pageable source bytes, taken when queued */
	size_t n;
	uint32_t v, flags, mask;
	struct fevent *ev;
	uint64_t serial;
	hipHostFn_t fn;
	void *arg;
	struct op *next;
};
struct fstream {
	int id;
	bool nonblocking, dead, capturing;
	struct op *head, *tail;
	struct fstream *next;
};
struct fevent {
	int id;
	bool timing, dead;
	uint64_t recorded, done; /* serial of the last record queued, and of the last one run */
	uint64_t at;             /* clock_ops when the last record ran */
	struct fstream *stream;
	struct fevent *next; /* every event ever made: destroyed ones stay (a later use is reported) */
};
struct ihipEvent_t {
	struct fevent e;
};
struct ihipStream_t {
	struct fstream s;
};
static struct fstream null_stream; /* the default stream: id 0, blocking */
static struct fstream *streams = &null_stream;
static struct fevent *events __attribute__((unused)); /* keeps destroyed events reachable (not leaks) */
static int stream_ids, event_ids __attribute__((unused)), n_streams, n_events, n_modules, n_graphs, n_execs;

static struct fstream *S(hipStream_t s) { return s ? &s->s : &null_stream; }

static bool stream_ok(struct fstream *s, const char *call)
{
	if (s->dead) {
		misuse("%s on stream %d after hipStreamDestroy", call, s->id);
		return false;
	}
	return true;
}

static void run_stream(struct fstream *s, struct op *upto, int depth);

/* Runs the queued work of stream s up to event e's record with that serial. */
static void run_event(struct fevent *e, uint64_t serial, int depth)
{
	if (e->done >= serial || !e->stream)
		return;
	if (depth > 64) {
		misuse("streams wait on each other in a cycle (event %d)", e->id);
		e->done = serial;
		return;
	}
	for (struct op *o = e->stream->head; o; o = o->next)
		if (o->kind == OP_RECORD && o->ev == e && o->serial == serial) {
			run_stream(e->stream, o, depth + 1);
			return;
		}
}

static void run_op(struct fstream *s, struct op *o, int depth)
{
	clock_ops++;
	switch (o->kind) {
	case OP_COPY: memcpy(o->dst, o->copy ? o->copy : o->src, o->n); break;
	case OP_SET8: memset(o->dst, (int)o->v, o->n); break;
	case OP_SET32:
		for (size_t i = 0; i < o->n; i++)
			memcpy(o->dst + 4 * i, &o->v, 4);
		break;
	case OP_RECORD:
		if (o->ev->done < o->serial)
			o->ev->done = o->serial;
		o->ev->at = clock_ops;
		break;
	case OP_WAIT_EVENT: run_event(o->ev, o->serial, depth + 1); break;
	case OP_HOST_FN:
		pthread_mutex_unlock(&mu); /* the function may call the runtime (not on streams, as HIP says) */
		o->fn(o->arg);
		pthread_mutex_lock(&mu);
		break;
	case OP_WRITE32: memcpy(o->dst, &o->v, 4); break;
	case OP_WAIT32: {
		uint32_t w;
		memcpy(&w, o->dst, 4);
		w &= o->mask;
		bool ok = o->flags == hipStreamWaitValueGte ? w >= o->v
			  : o->flags == hipStreamWaitValueEq ? w == o->v
			  : o->flags == hipStreamWaitValueAnd ? (w & o->v) != 0
							      : ~(w | (o->v & o->mask)) != 0;
		if (!ok)
			misuse("hipStreamWaitValue32 on stream %d would never end (word %u, value %u, flags %u)", s->id,
			       w, o->v, o->flags);
		break;
	}
	case OP_LAUNCH: break;
	}
	(void)s;
}

static void run_stream(struct fstream *s, struct op *upto, int depth)
{
	while (s->head) {
		struct op *o = s->head;
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		run_op(s, o, depth);
		bool last = o == upto;
		free(o->copy);
		free(o);
		if (last)
			return;
	}
}

static void run_all(void)
{
	for (struct fstream *s = streams; s; s = s->next)
		run_stream(s, NULL, 0);
}

/* What a call on the legacy default stream waits for: every blocking stream. */
static void run_blocking(void)
{
	for (struct fstream *s = streams; s; s = s->next)
		if (!s->nonblocking)
			run_stream(s, NULL, 0);
}

static void enqueue(struct fstream *s, struct op *o)
{
	if (s == &null_stream) { /* the legacy default stream: after every blocking stream's work */
		run_blocking();
		run_op(s, o, 0);
		free(o->copy);
		free(o);
		return;
	}
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
}

static struct op *new_op(enum op_kind kind)
{
	struct op *o = calloc(1, sizeof(*o));
	o->kind = kind;
	return o;
}

/* Whether queued work reads or writes [p, p + n). */
static bool pending_on(const uint8_t *p, size_t n)
{
	for (struct fstream *s = streams; s; s = s->next)
		for (struct op *o = s->head; o; o = o->next)
			if ((o->dst && o->dst < p + n && o->dst + (o->n ? o->n : 4) > p) ||
			    (o->src && !o->copy && o->src < p + n && o->src + o->n > p))
				return true;
	return false;
}

/* ------------------------------------------------------------------ control API */
API void fake_hip_fail(const char *name, int err, int after)
{
	pthread_mutex_lock(&mu);
	snprintf(fail_name, sizeof(fail_name), "%s", name);
	fail_err = err;
	fail_after = after;
	pthread_mutex_unlock(&mu);
}
API void fake_hip_set_devices(int n) { n_devices = n; }
API void fake_hip_set_version(int v) { rt_version = v; }
API int fake_hip_misuses(void) { return misuses; }
API const char *fake_hip_trace(void) { return trace_buf; }
API void fake_hip_trace_clear(void)
{
	pthread_mutex_lock(&mu);
	trace_len = 0;
	trace_buf[0] = '\0';
	pthread_mutex_unlock(&mu);
}
API int fake_hip_pending(void)
{
	pthread_mutex_lock(&mu);
	int n = 0;
	for (struct fstream *s = streams; s; s = s->next)
		for (struct op *o = s->head; o; o = o->next)
			n++;
	pthread_mutex_unlock(&mu);
	return n;
}
API int fake_hip_live(const char *kind)
{
	pthread_mutex_lock(&mu);
	int n = 0;
	if (!strcmp(kind, "stream"))
		n = n_streams;
	else if (!strcmp(kind, "event"))
		n = n_events;
	else if (!strcmp(kind, "module"))
		n = n_modules;
	else if (!strcmp(kind, "graph"))
		n = n_graphs;
	else if (!strcmp(kind, "exec"))
		n = n_execs;
	else
		for (struct range *r = ranges; r; r = r->next)
			n += (!strcmp(kind, "device") && r->kind == MEM_DEVICE) ||
			     (!strcmp(kind, "host") && r->kind == MEM_HOST) ||
			     (!strcmp(kind, "registered") && r->kind == MEM_REGISTERED);
	pthread_mutex_unlock(&mu);
	return n;
}

/* ------------------------------------------------------------------ the runtime */
API const char *hipGetErrorName(hipError_t e)
{
	switch (e) {
	case hipSuccess: return "hipSuccess";
	case hipErrorInvalidValue: return "hipErrorInvalidValue";
	case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
	case hipErrorNoDevice: return "hipErrorNoDevice";
	case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
	case hipErrorInvalidImage: return "hipErrorInvalidImage";
	case hipErrorNoBinaryForGpu: return "hipErrorNoBinaryForGpu";
	case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
	case hipErrorNotReady: return "hipErrorNotReady";
	case hipErrorHostMemoryAlreadyRegistered: return "hipErrorHostMemoryAlreadyRegistered";
	case hipErrorHostMemoryNotRegistered: return "hipErrorHostMemoryNotRegistered";
	case hipErrorNotSupported: return "hipErrorNotSupported";
	case hipErrorStreamCaptureUnsupported: return "hipErrorStreamCaptureUnsupported";
	default: return "hipErrorUnknown";
	}
}
API const char *hipGetErrorString(hipError_t e) { return e == hipSuccess ? "no error" : "fake HIP error"; }

API hipError_t hipInit(unsigned int flags)
{
	ENTER("hipInit");
	LEAVE(flags ? hipErrorInvalidValue : n_devices > 0 ? hipSuccess : hipErrorNoDevice);
}
API hipError_t hipRuntimeGetVersion(int *v)
{
	ENTER("hipRuntimeGetVersion");
	*v = rt_version;
	LEAVE(hipSuccess);
}
API hipError_t hipDriverGetVersion(int *v)
{
	ENTER("hipDriverGetVersion");
	*v = rt_version;
	LEAVE(hipSuccess);
}
API hipError_t hipGetDeviceCount(int *n)
{
	ENTER("hipGetDeviceCount");
	*n = n_devices;
	LEAVE(n_devices > 0 ? hipSuccess : hipErrorNoDevice);
}
API hipError_t hipDeviceGet(hipDevice_t *d, int ordinal)
{
	ENTER("hipDeviceGet");
	if (ordinal < 0 || ordinal >= n_devices)
		LEAVE(hipErrorInvalidDevice);
	*d = ordinal;
	LEAVE(hipSuccess);
}
#ifndef FAKE_HIP_MINIMAL
API hipError_t hipDeviceGetName(char *name, int len, hipDevice_t d)
{
	ENTER("hipDeviceGetName");
	if (d < 0 || d >= n_devices)
		LEAVE(hipErrorInvalidDevice);
	snprintf(name, (size_t)len, "Fake HIP device %d", d);
	LEAVE(hipSuccess);
}
#endif
API hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t d)
{
	ENTER("hipDeviceTotalMem");
	*bytes = 64ull << 30;
	LEAVE(d >= 0 && d < n_devices ? hipSuccess : hipErrorInvalidDevice);
}
API hipError_t hipDeviceGetAttribute(int *v, int attr, int d)
{
	ENTER("hipDeviceGetAttribute");
	if (d < 0 || d >= n_devices)
		LEAVE(hipErrorInvalidDevice);
	switch (attr) {
	case hipDeviceAttributeMultiprocessorCount: *v = 104; break;
	case hipDeviceAttributeComputeCapabilityMajor: *v = 9; break;
	case hipDeviceAttributeComputeCapabilityMinor: *v = 0; break;
	case hipDeviceAttributePciDomainID: *v = 0x7fff; break; /* no such PCI device in sysfs: NUMA -1 */
	case hipDeviceAttributePciBusId: *v = 0x80 + d; break;
	case hipDeviceAttributePciDeviceId: *v = 0; break;
	case hipDeviceAttributeIntegrated: *v = 0; break;
	default: LEAVE(hipErrorInvalidValue);
	}
	LEAVE(hipSuccess);
}
API hipError_t hipSetDevice(int d)
{
	ENTER("hipSetDevice");
	if (d < 0 || d >= n_devices)
		LEAVE(hipErrorInvalidDevice);
	cur_device = d;
	LEAVE(hipSuccess);
}
API hipError_t hipGetDevice(int *d)
{
	ENTER("hipGetDevice");
	*d = cur_device;
	LEAVE(hipSuccess);
}
API hipError_t hipDeviceSynchronize(void)
{
	ENTER("hipDeviceSynchronize");
	trace("hipDeviceSynchronize");
	run_all();
	LEAVE(hipSuccess);
}

API hipError_t hipMalloc(void **p, size_t n)
{
	ENTER("hipMalloc");
	*p = NULL;
	if (!n)
		LEAVE(hipSuccess);
	if (posix_memalign(p, 256, n))
		LEAVE(hipErrorOutOfMemory);
	range_add(*p, n, MEM_DEVICE, 0);
	LEAVE(hipSuccess);
}
API hipError_t hipFree(void *p)
{
	ENTER("hipFree");
	if (!p)
		LEAVE(hipSuccess);
	struct range *r = range_of(p, 1, MEM_DEVICE);
	if (!r || r->p != p)
		LEAVE(hipErrorInvalidValue);
	run_all(); /* hipFree waits for the device */
	range_del(p, MEM_DEVICE);
	free(p);
	LEAVE(hipSuccess);
}
API hipError_t hipHostMalloc(void **p, size_t n, unsigned int flags)
{
	ENTER("hipHostMalloc");
	if (flags & ~(unsigned)(hipHostMallocPortable | hipHostMallocMapped))
		LEAVE(hipErrorInvalidValue);
	if (posix_memalign(p, 4096, n ? n : 1))
		LEAVE(hipErrorOutOfMemory);
	range_add(*p, n, MEM_HOST, flags | hipHostMallocMapped); /* ROCm maps every host allocation */
	LEAVE(hipSuccess);
}
API hipError_t hipHostFree(void *p)
{
	ENTER("hipHostFree");
	if (!p)
		LEAVE(hipSuccess);
	struct range *r = range_of(p, 1, MEM_HOST);
	if (!r || r->p != p)
		LEAVE(hipErrorInvalidValue);
	if (pending_on(r->p, r->n))
		misuse("hipHostFree of %p while queued work uses it", p);
	run_all();
	range_del(p, MEM_HOST);
	free(p);
	LEAVE(hipSuccess);
}
#ifndef FAKE_HIP_MINIMAL
API hipError_t hipHostRegister(void *p, size_t n, unsigned int flags)
{
	ENTER("hipHostRegister");
	/* Portable, Mapped, IoMemory: anything else is a flag this ROCm reads otherwise (0x8 is coarse-
	 * grained memory in ROCm 5, read-only in 6). */
	if (!p || !n || (flags & ~0x7u))
		LEAVE(hipErrorInvalidValue);
	for (struct range *r = ranges; r; r = r->next)
		if (r->kind == MEM_REGISTERED && r->p < (uint8_t *)p + n && r->p + r->n > (uint8_t *)p)
			LEAVE(hipErrorHostMemoryAlreadyRegistered);
	range_add(p, n, MEM_REGISTERED, flags);
	LEAVE(hipSuccess);
}
#endif
API hipError_t hipHostUnregister(void *p)
{
	ENTER("hipHostUnregister");
	struct range *r = range_of(p, 1, MEM_REGISTERED);
	if (!r || r->p != p)
		LEAVE(hipErrorHostMemoryNotRegistered);
	if (pending_on(r->p, r->n))
		misuse("hipHostUnregister of %p while queued work uses it", p);
	run_all();
	range_del(p, MEM_REGISTERED);
	LEAVE(hipSuccess);
}
/* The device address of mapped host memory is its host address (as on an APU, or with HMM). */
API hipError_t hipHostGetDevicePointer(void **d, void *p, unsigned int flags)
{
	ENTER("hipHostGetDevicePointer");
	struct range *r = range_of(p, 1, -1);
	if (!r || r->kind == MEM_DEVICE || !(r->flags & hipHostRegisterMapped) || flags)
		LEAVE(hipErrorInvalidValue);
	*d = p;
	LEAVE(hipSuccess);
}
API hipError_t hipPointerGetAttribute(void *data, int attribute, hipDeviceptr_t p)
{
	ENTER("hipPointerGetAttribute");
	struct range *r = range_of(p, 1, -1);
	if (attribute != HIP_POINTER_ATTRIBUTE_MEMORY_TYPE || !r)
		LEAVE(hipErrorInvalidValue);
	bool v6 = rt_version >= EHT_HIP6_VERSION;
	int t = r->kind == MEM_DEVICE ? (v6 ? EHT_HIP6_MEMORY_DEVICE : EHT_HIP5_MEMORY_DEVICE)
				      : (v6 ? EHT_HIP6_MEMORY_HOST : EHT_HIP5_MEMORY_HOST);
	memcpy(data, &t, sizeof(t));
	LEAVE(hipSuccess);
}

/* A copy of n bytes queued on s: device sides must be device memory; a host side in pinned memory is
 * read or written when the copy runs, pageable memory now (as the real runtimes stage it). */
static hipError_t copy(const char *call, void *dst, const void *src, size_t n, struct fstream *s, int dst_kind,
		       int src_kind, bool sync)
{
	if (!stream_ok(s, call))
		return hipErrorInvalidHandle;
	if ((dst_kind == MEM_DEVICE && !range_of(dst, n, MEM_DEVICE)) ||
	    (src_kind == MEM_DEVICE && !range_of(src, n, MEM_DEVICE)))
		return hipErrorInvalidValue;
	trace("%s s%d", call, s->id);
	struct op *o = new_op(OP_COPY);
	o->dst = dst;
	o->src = src;
	o->n = n;
	bool src_pinned = src_kind == MEM_DEVICE || range_of(src, n, MEM_HOST) || range_of(src, n, MEM_REGISTERED);
	bool dst_pinned = dst_kind == MEM_DEVICE || range_of(dst, n, MEM_HOST) || range_of(dst, n, MEM_REGISTERED);
	if (!src_pinned) {
		o->copy = malloc(n ? n : 1);
		memcpy(o->copy, src, n);
	}
	if (sync || !dst_pinned) { /* synchronous: after everything before it on s (and the blocking ones) */
		run_blocking();
		run_stream(s, NULL, 0);
		run_op(s, o, 0);
		free(o->copy);
		free(o);
		return hipSuccess;
	}
	enqueue(s, o);
	return hipSuccess;
}

API hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void *src, size_t n)
{
	ENTER("hipMemcpyHtoD");
	LEAVE(copy("hipMemcpyHtoD", dst, src, n, &null_stream, MEM_DEVICE, -1, true));
}
API hipError_t hipMemcpyDtoH(void *dst, hipDeviceptr_t src, size_t n)
{
	ENTER("hipMemcpyDtoH");
	LEAVE(copy("hipMemcpyDtoH", dst, src, n, &null_stream, -1, MEM_DEVICE, true));
}
API hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void *src, size_t n, hipStream_t s)
{
	ENTER("hipMemcpyHtoDAsync");
	LEAVE(copy("hipMemcpyHtoDAsync", dst, src, n, S(s), MEM_DEVICE, -1, false));
}
API hipError_t hipMemcpyDtoHAsync(void *dst, hipDeviceptr_t src, size_t n, hipStream_t s)
{
	ENTER("hipMemcpyDtoHAsync");
	LEAVE(copy("hipMemcpyDtoHAsync", dst, src, n, S(s), -1, MEM_DEVICE, false));
}
API hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t n, hipStream_t s)
{
	ENTER("hipMemcpyDtoDAsync");
	LEAVE(copy("hipMemcpyDtoDAsync", dst, src, n, S(s), MEM_DEVICE, MEM_DEVICE, false));
}

static hipError_t set(const char *call, void *d, uint32_t v, size_t n, size_t unit, struct fstream *s, bool sync)
{
	if (!stream_ok(s, call))
		return hipErrorInvalidHandle;
	if (!range_of(d, n * unit, MEM_DEVICE))
		return hipErrorInvalidValue;
	trace("%s s%d", call, s->id);
	struct op *o = new_op(unit == 1 ? OP_SET8 : OP_SET32);
	o->dst = d;
	o->v = v;
	o->n = n;
	if (sync)
		run_blocking();
	enqueue(s, o);
	return hipSuccess;
}
API hipError_t hipMemsetD8(hipDeviceptr_t d, unsigned char v, size_t n)
{
	ENTER("hipMemsetD8");
	LEAVE(set("hipMemsetD8", d, v, n, 1, &null_stream, true));
}
API hipError_t hipMemsetD8Async(hipDeviceptr_t d, unsigned char v, size_t n, hipStream_t s)
{
	ENTER("hipMemsetD8Async");
	LEAVE(set("hipMemsetD8Async", d, v, n, 1, S(s), false));
}
API hipError_t hipMemsetD32Async(hipDeviceptr_t d, int v, size_t n, hipStream_t s)
{
	ENTER("hipMemsetD32Async");
	LEAVE(set("hipMemsetD32Async", d, (uint32_t)v, n, 4, S(s), false));
}

API hipError_t hipStreamCreateWithFlags(hipStream_t *out, unsigned int flags)
{
	ENTER("hipStreamCreateWithFlags");
	if (flags & ~1u)
		LEAVE(hipErrorInvalidValue);
	struct ihipStream_t *h = calloc(1, sizeof(*h));
	h->s.id = ++stream_ids;
	h->s.nonblocking = flags & hipStreamNonBlocking;
	h->s.next = streams;
	streams = &h->s;
	n_streams++;
	*out = h;
	LEAVE(hipSuccess);
}
/* Destroyed handles stay allocated (and marked): a later use is reported, never a crash. */
API hipError_t hipStreamDestroy(hipStream_t h)
{
	ENTER("hipStreamDestroy");
	if (!h || !stream_ok(&h->s, "hipStreamDestroy"))
		LEAVE(hipErrorInvalidHandle);
	if (h->s.capturing)
		misuse("hipStreamDestroy of stream %d while it is captured", h->s.id);
	run_stream(&h->s, NULL, 0); /* its work still runs, as HIP's does */
	h->s.dead = true;
	n_streams--;
	LEAVE(hipSuccess);
}
API hipError_t hipStreamSynchronize(hipStream_t h)
{
	ENTER("hipStreamSynchronize");
	struct fstream *s = S(h);
	if (!stream_ok(s, "hipStreamSynchronize"))
		LEAVE(hipErrorInvalidHandle);
	if (s->capturing)
		LEAVE(hipErrorStreamCaptureUnsupported);
	trace("hipStreamSynchronize s%d", s->id);
	if (s == &null_stream)
		run_blocking();
	run_stream(s, NULL, 0);
	LEAVE(hipSuccess);
}
API hipError_t hipStreamWaitEvent(hipStream_t h, hipEvent_t e, unsigned int flags)
{
	ENTER("hipStreamWaitEvent");
	struct fstream *s = S(h);
	if (!e || flags || !stream_ok(s, "hipStreamWaitEvent"))
		LEAVE(hipErrorInvalidHandle);
	if (e->e.dead) {
		misuse("hipStreamWaitEvent on event %d after hipEventDestroy", e->e.id);
		LEAVE(hipErrorInvalidHandle);
	}
	if (!e->e.recorded)
		misuse("stream %d waits on event %d, never recorded (a wait on nothing)", s->id, e->e.id);
	trace("hipStreamWaitEvent s%d e%d", s->id, e->e.id);
	struct op *o = new_op(OP_WAIT_EVENT);
	o->ev = &e->e;
	o->serial = e->e.recorded;
	enqueue(s, o);
	LEAVE(hipSuccess);
}
#ifndef FAKE_HIP_NO_CORE
API hipError_t hipEventCreateWithFlags(hipEvent_t *out, unsigned int flags)
{
	ENTER("hipEventCreateWithFlags");
	if (flags & ~3u)
		LEAVE(hipErrorInvalidValue);
	struct ihipEvent_t *h = calloc(1, sizeof(*h));
	h->e.id = ++event_ids;
	h->e.timing = !(flags & hipEventDisableTiming);
	h->e.next = events;
	events = &h->e;
	n_events++;
	*out = h;
	LEAVE(hipSuccess);
}
#endif
API hipError_t hipEventDestroy(hipEvent_t e)
{
	ENTER("hipEventDestroy");
	if (!e || e->e.dead)
		LEAVE(hipErrorInvalidHandle);
	e->e.dead = true;
	n_events--;
	LEAVE(hipSuccess);
}
API hipError_t hipEventRecord(hipEvent_t e, hipStream_t h)
{
	ENTER("hipEventRecord");
	struct fstream *s = S(h);
	if (!e || !stream_ok(s, "hipEventRecord"))
		LEAVE(hipErrorInvalidHandle);
	if (e->e.dead) {
		misuse("hipEventRecord of event %d after hipEventDestroy", e->e.id);
		LEAVE(hipErrorInvalidHandle);
	}
	trace("hipEventRecord e%d s%d", e->e.id, s->id);
	struct op *o = new_op(OP_RECORD);
	o->ev = &e->e;
	o->serial = ++e->e.recorded;
	e->e.stream = s;
	enqueue(s, o);
	LEAVE(hipSuccess);
}
API hipError_t hipEventSynchronize(hipEvent_t e)
{
	ENTER("hipEventSynchronize");
	if (!e || e->e.dead)
		LEAVE(hipErrorInvalidHandle);
	trace("hipEventSynchronize e%d", e->e.id);
	run_event(&e->e, e->e.recorded, 0);
	LEAVE(hipSuccess);
}
/* Not ready the first time work is pending before the event; the second query runs it. */
API hipError_t hipEventQuery(hipEvent_t e)
{
	ENTER("hipEventQuery");
	if (!e || e->e.dead)
		LEAVE(hipErrorInvalidHandle);
	if (e->e.done >= e->e.recorded)
		LEAVE(hipSuccess);
	static __thread struct fevent *asked;
	if (asked != &e->e) {
		asked = &e->e;
		LEAVE(hipErrorNotReady);
	}
	asked = NULL;
	run_event(&e->e, e->e.recorded, 0);
	LEAVE(hipSuccess);
}
API hipError_t hipEventElapsedTime(float *ms, hipEvent_t a, hipEvent_t b)
{
	ENTER("hipEventElapsedTime");
	if (!a || !b || a->e.dead || b->e.dead || !a->e.timing || !b->e.timing)
		LEAVE(hipErrorInvalidHandle);
	if (!a->e.recorded || !b->e.recorded || a->e.done < a->e.recorded || b->e.done < b->e.recorded)
		LEAVE(hipErrorNotReady);
	*ms = (float)((double)b->e.at - (double)a->e.at) * 1e-3f;
	LEAVE(hipSuccess);
}

/* ---- graphs: a captured stream queues nothing; its graph replays as one trace line. */
struct ihipGraph {
	int ops;
};
struct hipGraphExec {
	int ops;
};
static int captured_ops;
API hipError_t hipStreamIsCapturing(hipStream_t h, int *status)
{
	ENTER("hipStreamIsCapturing");
	*status = S(h)->capturing ? hipStreamCaptureStatusActive : hipStreamCaptureStatusNone;
	LEAVE(hipSuccess);
}
API hipError_t hipStreamBeginCapture(hipStream_t h, int mode)
{
	ENTER("hipStreamBeginCapture");
	struct fstream *s = S(h);
	if (s == &null_stream || s->capturing || mode < 0 || mode > 2)
		LEAVE(s == &null_stream ? hipErrorStreamCaptureUnsupported : hipErrorInvalidValue);
	trace("hipStreamBeginCapture s%d", s->id);
	run_stream(s, NULL, 0);
	s->capturing = true;
	captured_ops = 0;
	LEAVE(hipSuccess);
}
API hipError_t hipStreamEndCapture(hipStream_t h, hipGraph_t *g)
{
	ENTER("hipStreamEndCapture");
	struct fstream *s = S(h);
	if (!s->capturing)
		LEAVE(hipErrorInvalidValue);
	trace("hipStreamEndCapture s%d", s->id);
	/* What was queued while capturing is the graph's, not work to run now. */
	while (s->head) {
		struct op *o = s->head;
		s->head = o->next;
		free(o->copy);
		free(o);
		captured_ops++;
	}
	s->tail = NULL;
	s->capturing = false;
	struct ihipGraph *gr = calloc(1, sizeof(*gr));
	gr->ops = captured_ops;
	n_graphs++;
	*g = gr;
	LEAVE(hipSuccess);
}
API hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *x, hipGraph_t g, unsigned long long flags)
{
	ENTER("hipGraphInstantiateWithFlags");
	if (!g || flags)
		LEAVE(hipErrorInvalidValue);
	struct hipGraphExec *e = calloc(1, sizeof(*e));
	e->ops = g->ops;
	n_execs++;
	*x = e;
	LEAVE(hipSuccess);
}
#ifndef FAKE_HIP_MINIMAL
API hipError_t hipGraphLaunch(hipGraphExec_t x, hipStream_t h)
{
	ENTER("hipGraphLaunch");
	if (!x || !stream_ok(S(h), "hipGraphLaunch"))
		LEAVE(hipErrorInvalidHandle);
	trace("hipGraphLaunch s%d (%d operations)", S(h)->id, x->ops);
	enqueue(S(h), new_op(OP_LAUNCH));
	LEAVE(hipSuccess);
}
#endif
API hipError_t hipGraphExecDestroy(hipGraphExec_t x)
{
	ENTER("hipGraphExecDestroy");
	free(x);
	n_execs--;
	LEAVE(hipSuccess);
}
API hipError_t hipGraphDestroy(hipGraph_t g)
{
	ENTER("hipGraphDestroy");
	free(g);
	n_graphs--;
	LEAVE(hipSuccess);
}
#ifndef FAKE_HIP_MINIMAL
API hipError_t hipLaunchHostFunc(hipStream_t h, hipHostFn_t fn, void *arg)
{
	ENTER("hipLaunchHostFunc");
	if (!fn || !stream_ok(S(h), "hipLaunchHostFunc"))
		LEAVE(hipErrorInvalidValue);
	trace("hipLaunchHostFunc s%d", S(h)->id);
	struct op *o = new_op(OP_HOST_FN);
	o->fn = fn;
	o->arg = arg;
	enqueue(S(h), o);
	LEAVE(hipSuccess);
}
#endif

/* ---- stream memory ops */
API hipError_t hipStreamWriteValue32(hipStream_t h, void *addr, uint32_t v, unsigned int flags)
{
	ENTER("hipStreamWriteValue32");
	if (!range_of(addr, 4, -1) || flags)
		LEAVE(hipErrorInvalidValue);
	trace("hipStreamWriteValue32 s%d", S(h)->id);
	struct op *o = new_op(OP_WRITE32);
	o->dst = addr;
	o->v = v;
	enqueue(S(h), o);
	LEAVE(hipSuccess);
}
#ifndef FAKE_HIP_MINIMAL
API hipError_t hipStreamWaitValue32(hipStream_t h, void *addr, uint32_t v, unsigned int flags, uint32_t mask)
{
	ENTER("hipStreamWaitValue32");
	if (!range_of(addr, 4, -1) || flags > hipStreamWaitValueNor)
		LEAVE(hipErrorInvalidValue);
	trace("hipStreamWaitValue32 s%d", S(h)->id);
	struct op *o = new_op(OP_WAIT32);
	o->dst = addr;
	o->v = v;
	o->flags = flags;
	o->mask = mask;
	enqueue(S(h), o);
	LEAVE(hipSuccess);
}
#endif

/* ---- modules: any code-object bundle or ELF image loads; kernels are names, launches only traced. */
struct ihipModule_t {
	int live;
};
struct ihipModuleSymbol_t {
	char name[64];
	struct ihipModuleSymbol_t *next;
};
static struct ihipModuleSymbol_t *symbols; /* kept for the process: HIP frees them with the module */
API hipError_t hipModuleLoadData(hipModule_t *m, const void *image)
{
	ENTER("hipModuleLoadData");
	if (!image || (memcmp(image, "__CLANG_OFFLOAD_BUNDLE__", 24) && memcmp(image, "\177ELF", 4)))
		LEAVE(hipErrorInvalidImage);
	*m = calloc(1, sizeof(**m));
	n_modules++;
	LEAVE(hipSuccess);
}
API hipError_t hipModuleUnload(hipModule_t m)
{
	ENTER("hipModuleUnload");
	free(m);
	n_modules--;
	LEAVE(hipSuccess);
}
API hipError_t hipModuleGetFunction(hipFunction_t *f, hipModule_t m, const char *name)
{
	ENTER("hipModuleGetFunction");
	if (!m || !name)
		LEAVE(hipErrorInvalidValue);
	*f = calloc(1, sizeof(**f));
	snprintf((*f)->name, sizeof((*f)->name), "%s", name);
	(*f)->next = symbols;
	symbols = *f;
	LEAVE(hipSuccess);
}
#ifndef FAKE_HIP_NO_CORE
API hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
				     unsigned by, unsigned bz, unsigned shmem, hipStream_t h, void **params,
				     void **extra)
{
	ENTER("hipModuleLaunchKernel");
	if (!f || !gx || !bx || bx * by * bz > 1024 || !stream_ok(S(h), "hipModuleLaunchKernel"))
		LEAVE(hipErrorInvalidValue);
	trace("hipModuleLaunchKernel %s s%d", f->name, S(h)->id);
	enqueue(S(h), new_op(OP_LAUNCH));
	LEAVE(hipSuccess);
}
#endif
