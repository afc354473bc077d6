/* SPDX-License-Identifier: Apache-2.0 */
/* pin.h: registering host memory for GPU DMA in chunks (one registration of 512 GiB or more
 * fails on current drivers), giving one device pointer for the whole range. */
#ifndef EHT_GPU_PIN_H
#define EHT_GPU_PIN_H

#include <stddef.h>
#include <stdint.h>

/* Registers [host, host+bytes) for DMA and in-place reads by device `device`, chunk by chunk, and
 * returns the device address of host in *dptr (contiguous across chunks). flags: EHT_DEV_HOST_*
 * (MAPPED|PORTABLE are always added). On failure every chunk registered so far is unregistered.
 * Returns 0, -ENODEV (no driver/device), -ENOTSUP (the driver cannot pin) or the driver's error. */
int eht_gpu_pin(void *host, size_t bytes, int device, unsigned flags, uint64_t *dptr);
/* eht_gpu_pin for memory of the caller's that the GPU only reads (a wrapped table): registered
 * writable, or, where the driver refuses that (a mapping the process can only read, such as a
 * read-only mmap of a file), read-only. Returns 0 or the first attempt's error. */
int eht_gpu_pin_reads(void *host, size_t bytes, int device, uint64_t *dptr);
/* Unregisters what eht_gpu_pin registered (same host and bytes). Every chunk is attempted; returns
 * the first error. */
int eht_gpu_unpin(void *host, size_t bytes);
/* The chunk size eht_gpu_pin uses: EHT_PIN_CHUNK (64G; tests use small chunks). */
size_t eht_gpu_pin_chunk(void);

#endif
