/* SPDX-License-Identifier: Apache-2.0 */
/* probe.h: machine facts used by the host-NUMA tier and `eht probe`: a device's host NUMA node and
 * handle export support (a real one-granule create + export, cached per device). */
#ifndef EHT_GPU_PROBE_H
#define EHT_GPU_PROBE_H

#include <stddef.h>

#include "gpu/vmm.h"

/* Host NUMA node of device `device` (EHT_DEV_ATTR_HOST_NUMA_ID, else the PCI device's sysfs
 * numa_node, else 0 on a one-node machine). Returns the node (>= 0) or -errno. */
int eht_dev_host_numa_id(int device);

/* Whether host-NUMA allocations on `device` can be created and exported as `kind` here, found by a
 * real one-granule create + export, once per device and kind per process (thread-safe). Returns 1
 * (yes), 0 (no; `why` says which call refused and how) or -errno (no driver, bad device). why may be
 * NULL. */
int eht_vmm_export_supported(int device, enum eht_vmm_kind kind, char *why, size_t why_len);

#endif
