/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_lookup.h: transitional: the launcher's old path, for src/lookup until it includes
 * gpu/gpu_lookup.h. Delete with its last includer. */
#include "gpu/gpu_lookup.h"
