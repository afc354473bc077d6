/* SPDX-License-Identifier: Apache-2.0 */
/* test_util.c: error messages, size parsing, the version, growable arrays, and the driver loader
 * without a GPU. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/dev.h"
#include "testutil.h"
#include "util/size.h"
#include "util/err.h"
#include "util/grow.h"

int main(void)
{
	CHECK(strcmp(eht_version(), EHT_VERSION) == 0);
	CHECK_RC(eht_err(EINVAL, "bad %s at offset %d", "thing", 42), -EINVAL);
	CHECK(strcmp(eht_last_error(), "bad thing at offset 42") == 0);
	CHECK_RC(eht_err(-ENOSPC, "x"), -ENOSPC);
	CHECK_RC(eht_err_prefix(-ENOSPC, "outer"), -ENOSPC);
	CHECK(strcmp(eht_last_error(), "outer: x") == 0);
	eht_err_clear();
	CHECK(strcmp(eht_last_error(), "") == 0);
	/* A callee that set no message (a raw -errno): the prefix stands on the code's text, not on
	 * nothing (and the callers clear first, so never on an earlier call's message). */
	CHECK_RC(eht_err_prefix(-ETIMEDOUT, "status of key 'a'"), -ETIMEDOUT);
	CHECK(strcmp(eht_last_error(), "status of key 'a': Connection timed out") == 0);
	eht_err_clear();

	/* eht_grow: 16 at first, then doubling, the elements kept; no room past SIZE_MAX. */
	size_t cap = 0;
	int *arr = eht_grow(NULL, &cap, 0, sizeof(int));
	CHECK(arr != NULL && cap == EHT_GROW_FIRST);
	for (size_t i = 0; arr && i < cap; i++)
		arr[i] = (int)i;
	int *same = arr ? eht_grow(arr, &cap, 5, sizeof(int)) : NULL;
	CHECK(same == arr && cap == EHT_GROW_FIRST); /* room left: nothing moves */
	int *more = arr ? eht_grow(arr, &cap, EHT_GROW_FIRST, sizeof(int)) : NULL;
	CHECK(more != NULL && cap == 2 * EHT_GROW_FIRST);
	if (more) {
		arr = more;
		bool kept = true;
		for (int i = 0; i < EHT_GROW_FIRST; i++)
			kept = kept && arr[i] == i;
		CHECK(kept);
		size_t huge = SIZE_MAX / 2;
		CHECK(eht_grow(arr, &huge, huge, sizeof(int)) == NULL); /* would overflow: refused */
		CHECK(huge == SIZE_MAX / 2);
		size_t c2 = cap;
		CHECK(eht_grow(arr, &c2, c2, 0) == NULL && c2 == cap);
	}
	free(arr);

	uint64_t v = 0;
	CHECK_RC(eht_parse_size("123", &v), 0);
	CHECK(v == 123);
	CHECK_RC(eht_parse_size("4K", &v), 0);
	CHECK(v == 4096);
	CHECK_RC(eht_parse_size("1.5GiB", &v), 0);
	CHECK(v == 3ull << 29);
	CHECK_RC(eht_parse_size("0x20", &v), 0);
	CHECK(v == 32);
	CHECK_RC(eht_parse_size("-1", &v), -EINVAL);
	CHECK_RC(eht_parse_size("12Q", &v), -EINVAL);
	CHECK_RC(eht_parse_size("", &v), -EINVAL);

	/* With EHT_NO_CUDA the loader must report -ENODEV, never crash, and say why. */
	t_setenv("EHT_NO_CUDA", "1");
	CHECK_RC(eht_dev_load(), -ENODEV);
	CHECK(strstr(eht_last_error(), "EHT_NO_CUDA") != NULL);
	CHECK(eht_dev_count() == 0);
	CHECK_RC(eht_dev_use(0), -ENODEV);
	return t_done();
}
