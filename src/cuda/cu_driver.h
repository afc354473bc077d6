/* SPDX-License-Identifier: Apache-2.0 */
/* cu_driver.h: transitional: src/lookup still calls the CUDA driver directly (until it moves onto
 * gpu/dev.h); nothing else may include this. Delete with its last includer. */
#include "gpu/cuda/cu_driver.h"
