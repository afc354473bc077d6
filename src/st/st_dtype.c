/* SPDX-License-Identifier: Apache-2.0 */
/* st_dtype.c: the 22 safetensors dtypes, their names and bit sizes. */
#include <errno.h>
#include <string.h>

#include "eht.h"

static const struct {
	const char *name;
	int bits;
} dtypes[EHT_DTYPE_COUNT] = {
	[EHT_DTYPE_BOOL] = {"BOOL", 8},
	[EHT_DTYPE_F4] = {"F4", 4},
	[EHT_DTYPE_F6_E2M3] = {"F6_E2M3", 6},
	[EHT_DTYPE_F6_E3M2] = {"F6_E3M2", 6},
	[EHT_DTYPE_U8] = {"U8", 8},
	[EHT_DTYPE_I8] = {"I8", 8},
	[EHT_DTYPE_F8_E5M2] = {"F8_E5M2", 8},
	[EHT_DTYPE_F8_E4M3] = {"F8_E4M3", 8},
	[EHT_DTYPE_F8_E8M0] = {"F8_E8M0", 8},
	[EHT_DTYPE_F8_E4M3FNUZ] = {"F8_E4M3FNUZ", 8},
	[EHT_DTYPE_F8_E5M2FNUZ] = {"F8_E5M2FNUZ", 8},
	[EHT_DTYPE_I16] = {"I16", 16},
	[EHT_DTYPE_U16] = {"U16", 16},
	[EHT_DTYPE_F16] = {"F16", 16},
	[EHT_DTYPE_BF16] = {"BF16", 16},
	[EHT_DTYPE_I32] = {"I32", 32},
	[EHT_DTYPE_U32] = {"U32", 32},
	[EHT_DTYPE_F32] = {"F32", 32},
	[EHT_DTYPE_C64] = {"C64", 64},
	[EHT_DTYPE_F64] = {"F64", 64},
	[EHT_DTYPE_I64] = {"I64", 64},
	[EHT_DTYPE_U64] = {"U64", 64},
};

const char *eht_dtype_name(int dtype)
{
	if (dtype <= EHT_DTYPE_INVALID || dtype >= EHT_DTYPE_COUNT)
		return NULL;
	return dtypes[dtype].name;
}

int eht_dtype_from_name(const char *name)
{
	if (!name)
		return -EINVAL;
	for (int i = EHT_DTYPE_INVALID + 1; i < EHT_DTYPE_COUNT; i++)
		if (strcmp(name, dtypes[i].name) == 0)
			return i;
	return -EINVAL;
}

int eht_dtype_bits(int dtype)
{
	if (dtype <= EHT_DTYPE_INVALID || dtype >= EHT_DTYPE_COUNT)
		return -EINVAL;
	return dtypes[dtype].bits;
}
