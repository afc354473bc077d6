/* SPDX-License-Identifier: Apache-2.0 */
/* serve_disk.c: a served table of the disk tier, opened by the worker from the checkpoint files. */
#include "serve/serve_client.h"

#include "util/err.h"

int serve_open_disk(json_t *tj, const struct eht_attach_opts *opts, eht_table **out)
{
	(void)opts;
	*out = NULL;
	return eht_err(EOPNOTSUPP, "table %s: the disk tier is not in this build",
		       json_string_value(json_object_get(tj, "name")));
}
