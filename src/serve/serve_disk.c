/* SPDX-License-Identifier: Apache-2.0 */
/* serve_disk.c: a served table of the disk tier, opened by the worker from the checkpoint files: the
 * server holds nothing, each worker maps its own rank's rows. */
#include "serve/serve_client.h"

#include "util/err.h"

int serve_open_disk(json_t *tj, const struct eht_attach_opts *opts, eht_table **out)
{
	*out = NULL;
	const char *name = json_string_value(json_object_get(tj, "name"));
	const char *ckpt = json_string_value(json_object_get(tj, "checkpoint"));
	const char *weight = json_string_value(json_object_get(tj, "weight"));
	const char *scale = json_string_value(json_object_get(tj, "scale")); /* NULL for json null */
	if (!name || !ckpt || !weight)
		return eht_err(EPROTO, "the server described a disk table without checkpoint or weight");
	struct eht_disk_opts d = {.size = sizeof(d), .weight = weight, .scale = scale, .rank = opts->rank,
				  .nranks = opts->nranks, .name = name};
	int rc = eht_disk_open(ckpt, &d, out);
	return rc ? eht_err_prefix(rc, "served table %s (disk tier)", name) : 0;
}
