/* SPDX-License-Identifier: Apache-2.0 */
/* lookup.cu: the "lookup" kernel image (one module, loaded by src/gpu/gpu_lookup.c): the lookup
 * kernels, one operation per file under lookup/, compiled together. Launched through the device
 * layer's driver API: extern "C" names, no runtime API. */
#include "lookup/gather.cu"
#include "lookup/expand.cu"
#include "lookup/sort.cu"
#include "lookup/stage_in.cu"
#include "lookup/ring.cu"
#include "lookup/mark.cu"
/* Last: kernels added after the others leave the others' PTX as it was, label numbers included. */
#include "lookup/gather_split.cu"
