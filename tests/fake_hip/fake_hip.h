/* SPDX-License-Identifier: Apache-2.0 */
/* fake_hip.h: the control side of the fake HIP runtime (fake_hip.c), a libamdhip64.so over host memory
 * that the HIP backend (src/gpu/hip) loads in the tests. Device memory is host memory, so a test reads
 * results directly. Work on a stream runs when something waits for it (a stream, event or device
 * synchronization, an event query, a synchronous call), not when it is queued: a caller that reuses a
 * buffer before the copy reading it has run, or waits on an event it never recorded, gets wrong bytes
 * or a misuse. Tests call these functions directly (they link the library). */
#ifndef EHT_TESTS_FAKE_HIP_H
#define EHT_TESTS_FAKE_HIP_H

#include <stddef.h>

/* The next `after`-th call (1: the next one) of entry point `name` returns hipError_t err. */
void fake_hip_fail(const char *name, int err, int after);
/* Devices reported (default 1) and hipRuntimeGetVersion's answer (default 50221153, ROCm 5.2). */
void fake_hip_set_devices(int n);
void fake_hip_set_version(int version);
/* Misuses seen so far (waits on events never recorded, freeing memory a queued copy uses, handles
 * used after destroy, a stream wait that would never end); each also printed to stderr. */
int fake_hip_misuses(void);
/* Live objects of each kind: "device" (hipMalloc), "host" (hipHostMalloc), "registered"
 * (hipHostRegister), "stream", "event", "module", "graph", "exec". */
int fake_hip_live(const char *kind);
/* The calls that queue or run stream work, one line each ("hipEventRecord e1 s2"), since the last
 * fake_hip_trace_clear; streams and events are numbered from 1 in creation order, the default stream 0. */
const char *fake_hip_trace(void);
void fake_hip_trace_clear(void);
/* Queued operations not yet run, on every stream. */
int fake_hip_pending(void);

#endif
