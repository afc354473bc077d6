/* SPDX-License-Identifier: Apache-2.0 */
/* lookup_const.h: the constants the lookup kernels (src/gpu/kernels/lookup/) and their launcher
 * (src/gpu/gpu_lookup.c) must agree on: block shapes, tiles, codes, formats. Plain C and CUDA C. */
#ifndef EHT_GPU_KERNELS_LOOKUP_CONST_H
#define EHT_GPU_KERNELS_LOOKUP_CONST_H

#define EHT_LK_WARP 32
/* Rows a warp has in flight at once: every load of those rows is issued before the first store. */
#define EHT_LK_RPW 4
/* Threads per block of the row movers, eht_lk_stage_in and eht_lk_dedup_mark. */
#define EHT_LK_THREADS 256
/* EHT_TEST_BELL_TRACE: the words of the stage-in trace where the CPU marks that the poller served the
 * request and that the pool started its gather; the ringing block stamps each on the GPU's clock into
 * the word after it. */
#define EHT_LK_TRACE_SERVED 5
#define EHT_LK_TRACE_POOL 7
/* Threads per block of eht_lk_expand_wide: a launch capped at sm_cap SMs (one block each) fills the
 * SMs it takes instead of a quarter of each. */
#define EHT_LK_WIDE_THREADS 1024
/* Most staging slots a stage-in launch relays through GPU memory (its relay block keeps the last
 * value of each in shared memory: 4 bytes a slot); launches with more slots poll host memory. */
#define EHT_LK_RELAY_SLOTS 8192
/* eht_lk_stage_in copies a staged chunk in parts of at most this many bytes, one block each: what a
 * block's threads have in flight at once with 16-byte words (EHT_LK_THREADS x 8 loads of 16 bytes),
 * one PCIe round trip each (264-byte rows move in 8-byte words: several); at most
 * EHT_LK_STAGE_PARTS_MAX parts a chunk. */
#define EHT_LK_STAGE_PART_BYTES 32768
#define EHT_LK_STAGE_PARTS_MAX 8
/* A dead id's slot or code. */
#define EHT_LK_DEAD32 0xffffffffu

/* Output formats: enum eht_lookup_format (include/eht.h; the launcher checks). */
#define EHT_LK_FMT_RAW 0
#define EHT_LK_FMT_BF16 1

/* Sort: one block sorts a batch of at most SMALL_TILE ids (eht_lk_sort_small); larger batches go
 * through LSD radix passes over TILE-key tiles, RADIX_BITS per pass; eht_lk_scan is one block. */
#define EHT_LK_SMALL_THREADS 256
#define EHT_LK_SMALL_ITEMS 32
#define EHT_LK_SMALL_TILE (EHT_LK_SMALL_THREADS * EHT_LK_SMALL_ITEMS)
#define EHT_LK_TILE_THREADS 256
#define EHT_LK_TILE_ITEMS 8
#define EHT_LK_TILE (EHT_LK_TILE_THREADS * EHT_LK_TILE_ITEMS)
#define EHT_LK_RADIX_BITS 8
#define EHT_LK_RADIX (1 << EHT_LK_RADIX_BITS)
#define EHT_LK_SCAN_THREADS 1024

/* A hot-set hit's code bit (eht_lk_dedup_mark -> eht_lk_expand_codes). */
#define EHT_LK_HOT 0x80000000u
/* Hash of the hot-set index and the dedup table: (row * MUL) >> shift (src/table/hotset.h's
 * EHT_HOT_MUL). */
#define EHT_LK_HASH_MUL 0x9E3779B97F4A7C15ull

#endif
