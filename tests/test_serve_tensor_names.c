/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_tensor_names.c: tensor names as checkpoints have them work on the region tier: one with
 * '/' (and other characters a file name cannot hold) is served and attached by its own name with the
 * right rows; one over 255 characters is refused with "name too long" and the limit, not a
 * misleading "no tensor". */
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define ROWS 64
#define COLS 32

static uint8_t data[ROWS * COLS];

static void serve_one(const char *dir, const char *tensor)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/one.safetensors", dir);
	uint64_t shape[2] = {ROWS, COLS};
	struct eht_st_write_tensor w = {.name = tensor, .dtype = EHT_DTYPE_U8, .ndim = 2, .shape = shape, .data = data};
	CHECK_RC(eht_st_write(path, &w, 1, NULL, 0), 0);
	char key[64];
	snprintf(key, sizeof(key), "eht-test-tnames-%d", (int)getpid());
	struct eht_serve_opts so = {.size = sizeof(so), .key = key, .pattern = "*", .tier = EHT_TIER_REGION,
				    .device = -1, .threads = 1};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(path, &so, &s), 0);
	if (!s)
		return;
	eht_client *c = NULL;
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 10000};
	CHECK_RC(eht_attach(key, &ao, &c), 0);
	eht_table *t = NULL;
	if (c)
		CHECK_RC(eht_client_find(c, tensor, &t), 0);
	if (t) {
		struct eht_table_info ti = {.size = sizeof(ti)};
		CHECK_RC(eht_table_get_info(t, &ti), 0);
		CHECK(ti.tier == EHT_TIER_REGION && ti.rows == ROWS && ti.row_bytes == COLS && !strcmp(ti.name, tensor));
		CHECK(ti.host && memcmp(ti.host, data, sizeof(data)) == 0);
	}
	if (c)
		CHECK_RC(eht_detach(c), 0);
	eht_serve_stop(s);
}

int main(void)
{
	uint64_t seed = 3;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)t_rand(&seed);
	char *dir = t_tmpdir("tnames");
	t_setenv("EHT_SHM_DIR", dir);
	serve_one(dir, "model/encoder:layers.1 engram/embed");
	serve_one(dir, "..hidden/../emb");

	/* 300 characters: refused as too long, naming the limit. */
	char longname[301];
	memset(longname, 't', 300);
	longname[300] = '\0';
	char path[700];
	snprintf(path, sizeof(path), "%s/long.safetensors", dir);
	uint64_t shape[2] = {ROWS, COLS};
	struct eht_st_write_tensor w = {.name = longname, .dtype = EHT_DTYPE_U8, .ndim = 2, .shape = shape, .data = data};
	CHECK_RC(eht_st_write(path, &w, 1, NULL, 0), 0);
	struct eht_serve_opts so = {.size = sizeof(so), .key = "eht-test-tnames-long", .pattern = "*",
				    .tier = EHT_TIER_REGION, .device = -1, .threads = 1};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(path, &so, &s), -ENAMETOOLONG);
	CHECK(strstr(eht_last_error(), "name too long") && strstr(eht_last_error(), "255") &&
	      !strstr(eht_last_error(), "no tensor"));
	eht_serve_stop(s);
	so.tier = EHT_TIER_DISK;
	CHECK_RC(eht_serve_start(path, &so, &s), -ENAMETOOLONG);
	eht_serve_stop(s);
	/* And a table of one's own with such a name. */
	eht_table *t = NULL;
	CHECK_RC(eht_table_wrap(data, ROWS, COLS, -1, longname, &t), -ENAMETOOLONG);
	CHECK(t == NULL && strstr(eht_last_error(), "name too long"));
	CHECK(t_dir_entries(dir) == 2); /* the two checkpoints; no region left */
	t_rmtree(dir);
	return t_done();
}
