/* SPDX-License-Identifier: Apache-2.0 */
/* fatbin.h: kernel images (sm_80, sm_90, PTX) embedded in libeht at build time. */
#ifndef EHT_GPU_FATBIN_H
#define EHT_GPU_FATBIN_H

struct eht_fatbin {
	const char *name; /* the .cu file's stem */
	const unsigned char *begin, *end;
};

/* Terminated by an entry with name NULL; empty in a build without nvcc. */
extern const struct eht_fatbin eht_fatbins[];

/* The image built from src/gpu/kernels/<name>.cu, or NULL when this build has none. */
const struct eht_fatbin *eht_fatbin_find(const char *name);

#endif
