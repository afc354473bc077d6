/* SPDX-License-Identifier: Apache-2.0 */
/* test_probe.c: eht_probe on any machine: NUMA nodes, /dev/shm, huge pages, JSON; on a machine
 * without a GPU (or with EHT_NO_CUDA=1) zero devices and a reason; with GPUs, sane device facts. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "gpu/probe.h"
#include "os/numa.h"
#include "testutil.h"

int main(void)
{
	struct eht_probe *p = NULL;
	CHECK_RC(eht_probe(NULL), -EINVAL);
	CHECK_RC(eht_probe(&p), 0);
	if (!p)
		return t_done();
	CHECK(p->size == sizeof(*p));
	CHECK(p->nnuma >= 1);
	for (int i = 0; i < p->nnuma; i++) {
		CHECK(p->numa[i].total > 0);
		CHECK(p->numa[i].free <= p->numa[i].total);
		CHECK(p->numa[i].available <= p->numa[i].total);
	}
	struct statvfs v;
	if (statvfs("/dev/shm", &v) == 0) {
		CHECK(p->shm_total == (uint64_t)v.f_blocks * v.f_frsize);
		CHECK(p->shm_free <= p->shm_total);
	}
	CHECK(p->hugepages_free <= p->hugepages_total);
	if (!t_have_gpu()) {
		CHECK(p->ndevices == 0);
		CHECK(p->devices == NULL);
		CHECK(p->gpu_status[0] != '\0');
		/* Export checks report "no driver" instead of crashing. */
		CHECK(eht_vmm_export_supported(0, EHT_VMM_FABRIC, NULL, 0) < 0);
	} else {
		CHECK(p->ndevices >= 1);
		for (int i = 0; i < p->ndevices; i++) {
			const struct eht_probe_device *d = &p->devices[i];
			CHECK(d->name[0] && d->sm_count > 0 && d->total_mem > 0 && d->cc_major >= 3);
			CHECK(strlen(d->pci_bus_id) == 12);
			CHECK(d->fabric_export != EHT_EXPORT_UNKNOWN || d->host_numa_vmm != 1);
			CHECK(d->posix_fd_export != EHT_EXPORT_UNKNOWN || d->host_numa_vmm != 1);
			if (d->fabric_export == EHT_EXPORT_UNSUPPORTED)
				CHECK(strstr(d->fabric_why, "unsupported here") != NULL);
			/* Cached: the second answer is the first. */
			int again = eht_vmm_export_supported(i, EHT_VMM_FABRIC, NULL, 0);
			CHECK(again == (d->fabric_export == EHT_EXPORT_OK));
		}
	}
	/* NUMA memory of node 0's neighbours: an absent node is -ENOENT. */
	uint64_t t, f, a;
	CHECK_RC(eht_numa_node_mem(4095, &t, &f, &a), -ENOENT);
	CHECK_RC(eht_numa_node_mem(p->numa[0].node, &t, &f, &a), 0);

	char *s = NULL;
	CHECK_RC(eht_probe_json(&s), 0);
	json_error_t err;
	json_t *j = s ? json_loads(s, 0, &err) : NULL;
	CHECK(j != NULL);
	if (j) {
		CHECK(json_array_size(json_object_get(j, "devices")) == (size_t)p->ndevices);
		CHECK(json_array_size(json_object_get(j, "numa_nodes")) == (size_t)p->nnuma);
		CHECK(json_integer_value(json_object_get(json_object_get(j, "shm"), "total")) == (json_int_t)p->shm_total);
		CHECK(json_is_string(json_object_get(json_object_get(j, "thp"), "enabled")));
		json_decref(j);
	}
	free(s);

	/* The CLI prints the same JSON. */
	const char *cli = getenv("EHT_CLI");
	if (cli) {
		char cmd[1024];
		snprintf(cmd, sizeof(cmd), "'%s' probe --json", cli);
		FILE *f = popen(cmd, "r");
		json_t *c = f ? json_loadf(f, 0, &err) : NULL;
		CHECK(f && pclose(f) == 0);
		CHECK(c != NULL);
		if (c)
			CHECK(json_array_size(json_object_get(c, "numa_nodes")) == (size_t)p->nnuma);
		json_decref(c);
		snprintf(cmd, sizeof(cmd), "'%s' probe > /dev/null", cli);
		CHECK(system(cmd) == 0);
		/* What a checkpoint's region tables need: its two ~1 MiB tables take a header page and a data
		 * page each, on top of the pages in use. */
		snprintf(cmd, sizeof(cmd), "'%s' probe --json --ckpt '%s/safetensors/engram_single.safetensors'", cli, t_fixtures());
		f = popen(cmd, "r");
		c = f ? json_loadf(f, 0, &err) : NULL;
		CHECK(f && pclose(f) == 0);
		CHECK(c != NULL);
		if (c && p->hugepage_size == (2u << 20)) {
			CHECK(json_integer_value(json_object_get(c, "tables")) == 2);
			CHECK(json_integer_value(json_object_get(c, "hugepages_needed")) == 4);
			json_int_t total = json_integer_value(json_object_get(c, "hugepages_total"));
			json_int_t avail = json_integer_value(json_object_get(c, "hugepages_available"));
			CHECK(json_integer_value(json_object_get(c, "nr_hugepages")) == total - avail + 4);
			json_t *tp = json_object_get(c, "table_pages");
			CHECK(json_array_size(tp) == 2);
			const char *cp = json_string_value(json_object_get(json_array_get(tp, 0), "cpu_pages"));
			CHECK(cp && (avail >= 2 ? strstr(cp, "hugetlb") != NULL : strstr(cp, "hugetlb") == NULL));
			/* The tier eht serve --tier auto tries first: the region-pinned tier on those pages. */
			const char *at = json_string_value(json_object_get(json_array_get(tp, 0), "auto_tier"));
			CHECK(at && !strcmp(at, p->ndevices == 0 ? "region" : avail >= 2 ? "region-pinned" : "host-numa"));
		}
		json_decref(c);
		snprintf(cmd, sizeof(cmd), "'%s' probe --tensors x > /dev/null 2>&1", cli);
		CHECK(system(cmd) != 0);
	}
	eht_probe_free(p);
	eht_probe_free(NULL);
	return t_done();
}
