/* SPDX-License-Identifier: Apache-2.0 */
/* test_util.c: error messages, size parsing, the version, and the driver loader without a GPU. */
#include <string.h>

#include "gpu/dev.h"
#include "testutil.h"
#include "util/env.h"
#include "util/err.h"

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
