/* SPDX-License-Identifier: Apache-2.0 */
/* node_id.c: which node this process runs on ($EHT_NODE_ID, else host name and boot id), so that a
 * job spanning nodes can be split into node-local groups. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eht.h"
#include "util/err.h"
#include "util/settings.h"

static int valid_id(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

/* The boot id tells two machines that were cloned with one host name apart; a missing /proc only
 * leaves the host name. */
static void boot_id(char *out, size_t len)
{
	out[0] = '\0';
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return;
	if (!fgets(out, (int)len, f))
		out[0] = '\0';
	fclose(f);
	out[strcspn(out, "\n")] = '\0';
}

int eht_node_id(char *buf, size_t len)
{
	if (!buf || len == 0)
		return eht_err(EINVAL, "eht_node_id: NULL or empty buffer");
	buf[0] = '\0';
	const char *env = eht_setting_str(EHT_SET_NODE_ID);
	char id[EHT_NODE_ID_MAX];
	if (env && env[0]) {
		if (!valid_id(env))
			return eht_err(EINVAL, "EHT_NODE_ID '%.80s': must be 1..64 characters of [A-Za-z0-9._-]", env);
		snprintf(id, sizeof(id), "sim.%s", env);
	} else {
		char host[65] = "", boot[64];
		if (gethostname(host, sizeof(host) - 1) != 0)
			snprintf(host, sizeof(host), "unknown");
		boot_id(boot, sizeof(boot));
		snprintf(id, sizeof(id), "host.%.64s.%.40s", host, boot);
	}
	size_t n = strlen(id);
	if (n + 1 > len)
		return eht_err(ENOSPC, "eht_node_id: %zu bytes needed, buffer holds %zu", n + 1, len);
	memcpy(buf, id, n + 1);
	return (int)n;
}
