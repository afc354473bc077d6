/* SPDX-License-Identifier: Apache-2.0 */
/* test_host_numa_desc.c: a worker's reading of a host-NUMA table's description from eht serve
 * (eht_host_numa_import_desc), without a GPU: FABRIC handles that are short, long, not strings or
 * not hex fail with EPROTO naming the table and the handle, before anything reaches the driver; a
 * well-formed one gets past the parse (and then fails only for want of a GPU). */
#include <stdio.h>
#include <string.h>

#include "gpu/vmm.h"
#include "table/host_numa/host_numa.h"
#include "table/table_impl.h"
#include "testutil.h"

#define HEX_LEN (2 * sizeof(((struct eht_vmm_fabric *)0)->data))

/* A FABRIC description of two 2 MiB chunks; handle 1 is `second` (NULL: a JSON number instead). */
static json_t *fabric_desc(const char *second)
{
	char good[HEX_LEN + 1];
	for (size_t i = 0; i < HEX_LEN; i++)
		good[i] = "0123456789abcdef"[i % 16];
	good[HEX_LEN] = '\0';
	json_t *d = json_object();
	json_object_set_new(d, "name", json_string("t.fab"));
	json_object_set_new(d, "numa", json_integer(0));
	json_object_set_new(d, "handle_type", json_integer(EHT_VMM_FABRIC));
	json_object_set_new(d, "bytes", json_integer(4 << 20));
	json_object_set_new(d, "padded", json_integer(4 << 20));
	json_object_set_new(d, "chunk", json_integer(2 << 20));
	json_object_set_new(d, "nchunks", json_integer(2));
	json_object_set_new(d, "granularity", json_integer(2 << 20));
	json_object_set_new(d, "row_bytes", json_integer(256));
	json_t *arr = json_array();
	json_array_append_new(arr, json_string(good));
	json_array_append_new(arr, second ? json_string(second) : json_integer(7));
	json_object_set_new(d, "fabric", arr);
	return d;
}

/* Imports the description with handle 1 = second; returns the rc, the error text in *msg. */
static int import_with(const char *second, const char **msg)
{
	json_t *d = fabric_desc(second);
	struct eht_import_args a = {.device = -1, .nranks = 1};
	eht_table *t = (eht_table *)&a; /* must come back NULL */
	int rc = eht_host_numa_import_desc(d, NULL, 0, &a, &t);
	CHECK(t == NULL);
	json_decref(d);
	*msg = eht_last_error();
	return rc;
}

int main(void)
{
	t_setenv("EHT_NO_CUDA", "1");
	char hex[HEX_LEN + 2];
	const char *msg = NULL;

	/* Too short by one digit, one digit too many, empty, not a string. */
	memset(hex, 'a', HEX_LEN - 1);
	hex[HEX_LEN - 1] = '\0';
	CHECK_RC(import_with(hex, &msg), -EPROTO);
	CHECK(strstr(msg, "table t.fab: FABRIC handle 1 is not 128 hex digits") != NULL);
	memset(hex, 'a', HEX_LEN + 1);
	hex[HEX_LEN + 1] = '\0';
	CHECK_RC(import_with(hex, &msg), -EPROTO);
	CHECK(strstr(msg, "FABRIC handle 1 is not") != NULL);
	CHECK_RC(import_with("", &msg), -EPROTO);
	CHECK_RC(import_with(NULL, &msg), -EPROTO);
	CHECK(strstr(msg, "FABRIC handle 1 is not") != NULL);

	/* The right length with a stray character, first and last place. */
	memset(hex, 'F', HEX_LEN);
	hex[HEX_LEN] = '\0';
	hex[0] = 'g';
	CHECK_RC(import_with(hex, &msg), -EPROTO);
	CHECK(strstr(msg, "FABRIC handle 1 has a non-hex digit at 0") != NULL);
	hex[0] = 'F';
	hex[HEX_LEN - 1] = ' ';
	CHECK_RC(import_with(hex, &msg), -EPROTO);
	CHECK(strstr(msg, "non-hex digit at 127") != NULL);

	/* Well-formed (upper and lower case): the parse passes, the import then needs a GPU. */
	hex[HEX_LEN - 1] = 'e';
	int rc = import_with(hex, &msg);
	CHECK(rc < 0 && rc != -EPROTO);
	CHECK(strstr(msg, "FABRIC handle") == NULL);
	return t_done();
}
