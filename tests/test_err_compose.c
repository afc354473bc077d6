/* SPDX-License-Identifier: Apache-2.0 */
/* test_err_compose.c: a message made of the last one (eht_err(..., "(%s)", eht_last_error()), and the
 * sys variant) holds it once and whole, never itself nested; a hot set whose safetensors header is
 * refused says so once, with the reader's cause after it, uncut. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util/err.h"

static int count(const char *s, const char *sub)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, sub)) != NULL; p += strlen(sub))
		n++;
	return n;
}

int main(void)
{
	CHECK_RC(eht_err(EIO, "inner cause, a few words long"), -EIO);
	CHECK_RC(eht_err(EINVAL, "outer (%s)", eht_last_error()), -EINVAL);
	CHECK(!strcmp(eht_last_error(), "outer (inner cause, a few words long)"));

	CHECK_RC(eht_err(EIO, "first"), -EIO);
	CHECK_RC(eht_err_sys(ENOENT, "second after %s", eht_last_error()), -ENOENT);
	CHECK(!strncmp(eht_last_error(), "second after first: ", 20) && count(eht_last_error(), "first") == 1);

	/* A hot set file whose header length is over the reader's limit. */
	char *dir = t_tmpdir("err-compose");
	char path[600];
	snprintf(path, sizeof(path), "%s/bad.hot", dir);
	uint8_t buf[64] = {0};
	const uint64_t len = 200ull << 20;
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)(len >> (8 * i));
	memset(buf + 8, 'x', sizeof(buf) - 8);
	CHECK_RC(t_write_file(path, buf, sizeof(buf)), 0);
	int64_t *rows = NULL;
	uint64_t n = 0;
	CHECK_RC(eht_hotset_read(path, &rows, &n), -EINVAL);
	const char *m = eht_last_error();
	CHECK(count(m, "not a hot-set file") == 1 && count(m, "over the limit") == 1);
	CHECK(!strncmp(m, "hot set ", 8) && strlen(m) > 20 && !strcmp(m + strlen(m) - 5, "bytes"));
	CHECK(rows == NULL && n == 0);
	t_rmtree(dir);
	return t_done();
}
