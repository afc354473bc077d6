/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_names.c: serve's default table pattern picks DeepSeek-V4.1's names
 * (layers.N.engram.embed.weight + .scale, what eht synth writes) and the older
 * *.engram.embedding.weight naming of the fixtures; '|' separates globs in --tensors. */
#include <string.h>

#include "serve/serve_impl.h"
#include "testutil.h"

static void pick(const char *path, const char *pattern, size_t want, const char *name0)
{
	eht_ckpt *ck = NULL;
	struct served *v = NULL;
	size_t n = 0;
	CHECK_RC(eht_ckpt_open(path, 0, &ck), 0);
	if (!ck)
		return;
	int rc = serve_pick_tables(ck, pattern, &v, &n);
	CHECK(want ? rc == 0 : rc == -ENOENT);
	CHECK(n == want);
	if (rc == 0 && name0) {
		int found = 0;
		for (size_t i = 0; i < n; i++)
			found |= !strcmp(v[i].name, name0) && v[i].scale[0] && v[i].row_bytes == 264;
		CHECK(found);
	}
	free(v);
	eht_ckpt_close(ck);
}

int main(void)
{
	const char *dir = t_tmpdir("serve_names");
	struct eht_synth_opts so = {.size = sizeof(so), .tables = 2, .rows = 10};
	CHECK_RC(eht_synth_checkpoint(dir, &so), 0);
	pick(dir, EHT_SERVE_DEFAULT_PATTERN, 2, "layers.14.engram.embed");
	pick(dir, "*.engram.embedding.weight", 0, NULL);
	pick(dir, "nothing|layers.1.*.weight", 1, "layers.1.engram.embed");
	const char *fx = getenv("EHT_FIXTURES");
	char p[1024];
	if (fx) {
		snprintf(p, sizeof(p), "%s/safetensors/engram_sharded", fx);
		pick(p, EHT_SERVE_DEFAULT_PATTERN, 2, "model.layers.1.engram.embedding");
	}
	t_rmtree(dir);
	return t_done();
}
