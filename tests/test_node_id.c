/* SPDX-License-Identifier: Apache-2.0 */
/* test_node_id.c: eht_node_id: the host's identity by default, EHT_NODE_ID when set (checked), and
 * its buffer errors. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

int main(void)
{
	char a[EHT_NODE_ID_MAX], b[EHT_NODE_ID_MAX], host[65] = "";
	t_setenv("EHT_NODE_ID", NULL);
	int n = eht_node_id(a, sizeof(a));
	CHECK(n > 5 && (size_t)n == strlen(a) && !strncmp(a, "host.", 5));
	gethostname(host, sizeof(host) - 1);
	CHECK(strstr(a, host) != NULL);
	CHECK_RC(eht_node_id(b, sizeof(b)), n); /* stable */
	CHECK(!strcmp(a, b));
	CHECK_RC(eht_node_id(b, 4), -ENOSPC);
	CHECK_RC(eht_node_id(NULL, 8), -EINVAL);

	t_setenv("EHT_NODE_ID", "n1");
	CHECK_RC(eht_node_id(b, sizeof(b)), 6);
	CHECK(!strcmp(b, "sim.n1"));
	t_setenv("EHT_NODE_ID", "n2");
	CHECK(eht_node_id(b, sizeof(b)) == 6 && !strcmp(b, "sim.n2"));
	/* An id that could not name a socket or a file, or too long, is refused, never cut. */
	t_setenv("EHT_NODE_ID", "a/b");
	CHECK_RC(eht_node_id(b, sizeof(b)), -EINVAL);
	CHECK(strstr(eht_last_error(), "EHT_NODE_ID") != NULL);
	char longid[80];
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	t_setenv("EHT_NODE_ID", longid);
	CHECK_RC(eht_node_id(b, sizeof(b)), -EINVAL);
	t_setenv("EHT_NODE_ID", ""); /* empty: not set */
	CHECK_RC(eht_node_id(b, sizeof(b)), n);
	return t_done();
}
