/* SPDX-License-Identifier: Apache-2.0 */
/* cli_probe.c: `eht probe [--json]`: what this node offers for host tables. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "eht.h"

static double gib(uint64_t b) { return (double)b / (double)(1ull << 30); }

static const char *export_text(int s)
{
	return s == EHT_EXPORT_OK ? "yes" : s == EHT_EXPORT_UNSUPPORTED ? "no" : "unknown";
}

static void usage(FILE *f)
{
	fprintf(f, "usage: eht probe [--json]\n"
		   "What this node offers for host tables: GPUs (PCIe link, host NUMA node, handle export support),\n"
		   "NUMA nodes, /dev/shm, transparent and hugetlb huge pages, IMEX channels.\n");
}

int cmd_probe(int argc, char **argv)
{
	static const struct option longopts[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	int json = 0, c;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "probe", "h", longopts)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c != 'j')
			return 2;
		json = 1;
	}
	if (optind < argc)
		return cli_usage_error("probe", "takes no arguments");
	if (json) {
		char *s = NULL;
		if (eht_probe_json(&s))
			return cli_error("probe", 1, NULL);
		printf("%s\n", s);
		free(s);
		return 0;
	}
	struct eht_probe *p = NULL;
	if (eht_probe(&p))
		return cli_error("probe", 0, NULL);
	if (p->ndevices == 0)
		printf("GPUs: none (%s)\n", p->gpu_status);
	else
		printf("GPUs: %d (driver %d.%d)\n", p->ndevices, p->driver_version / 1000,
		       (p->driver_version % 1000) / 10);
	for (int i = 0; i < p->ndevices; i++) {
		const struct eht_probe_device *d = &p->devices[i];
		printf("  GPU %d  %s  sm_%d%d  %d SMs  %.1f GiB  pci %s  host NUMA node %d\n", d->ordinal, d->name,
		       d->cc_major, d->cc_minor, d->sm_count, gib(d->total_mem), d->pci_bus_id, d->host_numa_id);
		if (d->pcie_gen)
			printf("    PCIe Gen%d x%d (%s)\n", d->pcie_gen, d->pcie_width, d->pcie_speed);
		else
			printf("    PCIe link: unreadable\n");
		printf("    host-NUMA VMM %s, granularity %llu KiB\n", d->host_numa_vmm == 1 ? "yes" : "no",
		       (unsigned long long)(d->granularity >> 10));
		printf("    POSIX-fd export: %s%s%s\n", export_text(d->posix_fd_export), d->posix_fd_why[0] ? ": " : "",
		       d->posix_fd_why);
		printf("    FABRIC export:   %s%s%s (attribute %d)\n", export_text(d->fabric_export),
		       d->fabric_why[0] ? ": " : "", d->fabric_why, d->fabric_attr);
	}
	if (p->imex_channels < 0)
		printf("IMEX channels: none (/dev/nvidia-caps-imex-channels missing)\n");
	else
		printf("IMEX channels: %d\n", p->imex_channels);
	printf("NUMA nodes: %d\n", p->nnuma);
	for (int i = 0; i < p->nnuma; i++)
		printf("  node %d  total %.1f GiB  free %.1f GiB  available %.1f GiB\n", p->numa[i].node,
		       gib(p->numa[i].total), gib(p->numa[i].free), gib(p->numa[i].available));
	if (p->shm_total)
		printf("%s: %.1f GiB, %.1f GiB free\n", p->shm_path, gib(p->shm_total), gib(p->shm_free));
	else
		printf("%s: missing\n", p->shm_path);
	printf("THP: enabled %s, shmem %s\n", p->thp_enabled[0] ? p->thp_enabled : "unreadable",
	       p->thp_shmem_enabled[0] ? p->thp_shmem_enabled : "unreadable");
	printf("hugetlb: %llu of %llu pages free (%llu KiB pages)\n", (unsigned long long)p->hugepages_free,
	       (unsigned long long)p->hugepages_total, (unsigned long long)(p->hugepage_size >> 10));
	eht_probe_free(p);
	return 0;
}
