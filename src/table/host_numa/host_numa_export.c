/* SPDX-License-Identifier: Apache-2.0 */
/* host_numa_export.c: the host-NUMA tier handed to another process of the node (a worker of eht
 * serve): the layout in the description, the chunks as POSIX descriptors or FABRIC handles. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/host_numa/host_numa.h"
#include "util/err.h"

int eht_host_numa_export_desc(const eht_table *t, json_t *desc, int **fds, size_t *nfds)
{
	struct eht_hn_layout lay = {0};
	int rc = eht_host_numa_layout(t, &lay);
	if (rc)
		return rc;
	json_object_set_new(desc, "numa", json_integer(lay.numa));
	json_object_set_new(desc, "handle_type", json_integer(lay.handle_type));
	json_object_set_new(desc, "bytes", json_integer((json_int_t)lay.bytes));
	json_object_set_new(desc, "padded", json_integer((json_int_t)lay.padded));
	json_object_set_new(desc, "chunk", json_integer((json_int_t)lay.chunk));
	json_object_set_new(desc, "nchunks", json_integer((json_int_t)lay.nchunks));
	json_object_set_new(desc, "granularity", json_integer((json_int_t)lay.granularity));
	if (lay.handle_type == EHT_VMM_FD) {
		int *f = malloc((lay.nchunks ? lay.nchunks : 1) * sizeof(int));
		if (!f)
			return eht_err(ENOMEM, "table %s: out of memory", t->name);
		rc = eht_host_numa_export(t, f, NULL); /* closes what it opened on failure */
		if (rc) {
			free(f);
			return rc;
		}
		*fds = f;
		*nfds = lay.nchunks;
		return 0;
	}
	struct eht_vmm_fabric *fab = calloc(lay.nchunks ? lay.nchunks : 1, sizeof(*fab));
	if (!fab)
		return eht_err(ENOMEM, "table %s: out of memory", t->name);
	rc = eht_host_numa_export(t, NULL, fab);
	json_t *arr = json_array();
	for (size_t i = 0; !rc && i < lay.nchunks; i++) {
		char hex[2 * sizeof(fab[i].data) + 1];
		for (size_t b = 0; b < sizeof(fab[i].data); b++)
			snprintf(hex + 2 * b, 3, "%02x", fab[i].data[b]);
		json_array_append_new(arr, json_string(hex));
	}
	json_object_set_new(desc, "fabric", arr);
	free(fab);
	return rc;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One FABRIC handle as the exporter writes it: exactly two hex digits a byte, nothing else (a short
 * or garbled handle would import some other memory, or fail deep in the driver). */
static int fabric_from_hex(const char *h, struct eht_vmm_fabric *f, const char *name, size_t i)
{
	const size_t n = sizeof(f->data);
	if (!h || strlen(h) != 2 * n)
		return eht_err(EPROTO, "table %s: FABRIC handle %zu is not %zu hex digits", name, i, 2 * n);
	for (size_t b = 0; b < n; b++) {
		int hi = hex_digit(h[2 * b]), lo = hex_digit(h[2 * b + 1]);
		if (hi < 0 || lo < 0)
			return eht_err(EPROTO, "table %s: FABRIC handle %zu has a non-hex digit at %zu", name, i,
				       hi < 0 ? 2 * b : 2 * b + 1);
		f->data[b] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

int eht_host_numa_import_desc(json_t *desc, int *fds, size_t nfds, const struct eht_import_args *a,
			      eht_table **out)
{
	*out = NULL;
	const char *name = eht_desc_str(desc, "name");
	struct eht_hn_layout lay = {
		.numa = (int32_t)json_integer_value(json_object_get(desc, "numa")),
		.handle_type = (uint32_t)eht_desc_u64(desc, "handle_type"),
		.bytes = eht_desc_u64(desc, "bytes"),
		.padded = eht_desc_u64(desc, "padded"),
		.chunk = eht_desc_u64(desc, "chunk"),
		.nchunks = eht_desc_u64(desc, "nchunks"),
		.granularity = eht_desc_u64(desc, "granularity"),
	};
	uint64_t rb = eht_desc_u64(desc, "row_bytes");
	int device = a->device >= 0 ? a->device : 0; /* the mapping needs a GPU context; the CPU sees the same address */
	bool fabric = lay.handle_type == EHT_VMM_FABRIC;
	struct eht_vmm_fabric *fab = NULL;
	int rc = 0;
	if (fabric) {
		json_t *hex = json_object_get(desc, "fabric");
		if (json_array_size(hex) != lay.nchunks || nfds != 0)
			rc = eht_err(EPROTO, "table %s: %llu FABRIC handles described, %zu given", name,
				     (unsigned long long)lay.nchunks, json_array_size(hex));
		else if (!(fab = calloc(lay.nchunks ? lay.nchunks : 1, sizeof(*fab))))
			rc = eht_err(ENOMEM, "attach: out of memory");
		for (size_t i = 0; !rc && i < lay.nchunks; i++)
			rc = fabric_from_hex(json_string_value(json_array_get(hex, i)), &fab[i], name, i);
	} else if (lay.handle_type != EHT_VMM_FD || nfds != lay.nchunks) {
		rc = eht_err(EPROTO, "table %s: handle type %u with %llu chunks, %zu descriptors given", name,
			     lay.handle_type, (unsigned long long)lay.nchunks, nfds);
	}
	if (!rc) {
		/* eht_host_numa_import closes the descriptors whatever happens. */
		rc = eht_host_numa_import(&lay, fabric ? NULL : fds, fab, device, name, rb, out);
		for (size_t i = 0; !fabric && i < nfds; i++)
			fds[i] = -1;
	}
	free(fab);
	return rc;
}

int eht_host_numa_share_tier(uint64_t bytes, eht_group *g, const struct eht_share_opts *opts, int tier, bool quiet,
			     eht_table **out)
{
	return eht_host_table_share_ex(bytes, g, opts, quiet, out, NULL);
}
