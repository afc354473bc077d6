/* SPDX-License-Identifier: Apache-2.0 */
/* cli_probe.c: `eht probe [--json]`: what this node offers for host tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eht.h"
#include "gpu/dev.h"
#include "os/fsinfo.h"
#include "serve/serve_impl.h"

static double gib(uint64_t b) { return (double)b / (double)(1ull << 30); }

static const char *export_text(int s)
{
	return s == EHT_EXPORT_OK ? "yes" : s == EHT_EXPORT_UNSUPPORTED ? "no" : "unknown";
}

static void usage(FILE *f)
{
	fprintf(f, "usage: eht probe [--json] [--ckpt CHECKPOINT [--tensors PATTERN]]\n"
		   "What this node offers for host tables: GPUs (PCIe link, host NUMA node, handle export support),\n"
		   "NUMA nodes, /dev/shm, transparent and hugetlb huge pages, IMEX channels.\n"
		   "  --ckpt CHECKPOINT  also: the huge pages `eht serve CHECKPOINT` needs for its region tables\n"
		   "                     (CPU gathers run about twice as fast on them) and the vm.nr_hugepages to set\n"
		   "  --tensors PATTERN  the weight tensors eht serve --tensors would pick (default: its default)\n");
}

/* The huge pages a region-tier `eht serve` of ckpt needs: a header page plus the rows of each table. */
static int probe_ckpt(const char *path, const char *pattern, int json)
{
	eht_ckpt *ck = NULL;
	if (eht_ckpt_open(path, 0, &ck))
		return cli_error("probe", json, NULL);
	struct served *tabs = NULL;
	size_t n = 0;
	int rc = serve_pick_tables(ck, pattern ? pattern : EHT_SERVE_DEFAULT_PATTERN, &tabs, &n);
	eht_ckpt_close(ck);
	if (rc)
		return cli_error("probe", json, NULL);
	struct eht_hugetlb_pool pool;
	bool have = eht_hugetlb_pool(0, &pool) == 0;
	uint64_t hp = have ? pool.page_size : (2ull << 20), need = 0, bytes = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t b = tabs[i].rows * tabs[i].row_bytes;
		bytes += b;
		need += eht_hugetlb_region_pages(b, hp);
	}
	/* What is in use stays in use; the tables need theirs on top. */
	uint64_t used = pool.total - pool.available, set = used + need;
	char mode[32];
	eht_thp_shmem_mode(mode, sizeof(mode));
	bool thp = strcmp(mode, "never") && strcmp(mode, "deny") && strcmp(mode, "unknown");
	/* The CPU pages each table would get from a region-tier eht serve now: tables take huge pages in
	 * order while the pool has room for the whole table (as region_create.c's choice does); and the tier
	 * --tier auto would try first (table/share_huge.h): region-pinned for those, with a GPU. */
	const char **got = calloc(n ? n : 1, sizeof(*got)), **autot = calloc(n ? n : 1, sizeof(*autot));
	if (!got || !autot) {
		free(tabs);
		free(got);
		free(autot);
		return cli_error("probe", json, "out of memory");
	}
	const bool gpu = eht_dev_count() > 0;
	uint64_t left = pool.available;
	for (size_t i = 0; i < n; i++) {
		uint64_t pages = eht_hugetlb_region_pages(tabs[i].rows * tabs[i].row_bytes, hp);
		bool fits = have && left >= pages;
		left -= fits ? pages : 0;
		got[i] = fits ? "2 MiB (hugetlb)" : thp ? "2 MiB (shmem THP, advised)" : "4 KiB";
		autot[i] = eht_tier_name(!gpu ? EHT_TIER_REGION : fits ? EHT_TIER_REGION_PINNED : EHT_TIER_HOST_NUMA);
	}
	if (json) {
		json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:b}", "checkpoint", path, "tables",
				      (json_int_t)n, "bytes", (json_int_t)bytes, "hugepage_size", (json_int_t)hp,
				      "hugepages_total", (json_int_t)pool.total, "hugepages_available",
				      (json_int_t)pool.available, "hugepages_needed", (json_int_t)need, "nr_hugepages",
				      (json_int_t)set, "shmem_thp", mode, "fits", pool.available >= need);
		json_t *arr = json_array();
		for (size_t i = 0; o && arr && i < n; i++)
			json_array_append_new(arr, json_pack("{s:s, s:I, s:I, s:s, s:s}", "name", tabs[i].name, "bytes",
							     (json_int_t)(tabs[i].rows * tabs[i].row_bytes), "hugepages",
							     (json_int_t)eht_hugetlb_region_pages(tabs[i].rows * tabs[i].row_bytes, hp),
							     "cpu_pages", got[i], "auto_tier", autot[i]));
		if (o && arr)
			json_object_set_new(o, "table_pages", arr);
		else
			json_decref(arr);
		free(tabs);
		free(got);
		free(autot);
		return cli_print_json(o);
	}
	printf("%s: %zu table(s), %.2f GiB\n", path, n, (double)bytes / (double)(1ull << 30));
	for (size_t i = 0; i < n; i++)
		printf("  %-44s %.2f GiB, %llu huge pages; on the region tier now: %s CPU pages; --tier auto: %s%s\n",
		       tabs[i].name, (double)(tabs[i].rows * tabs[i].row_bytes) / (double)(1ull << 30),
		       (unsigned long long)eht_hugetlb_region_pages(tabs[i].rows * tabs[i].row_bytes, hp),
		       got[i], autot[i],
		       !strcmp(autot[i], eht_tier_name(EHT_TIER_HOST_NUMA)) ? " first (4 KiB CPU pages)" : "");
	free(tabs);
	free(got);
	free(autot);
	if (!have) {
		printf("hugetlb: none in this kernel; region tables get %s pages\n", thp ? "shmem THP" : "4 KiB");
		return 0;
	}
	printf("hugetlb: %llu of %llu %llu KiB pages available; the tables need %llu\n",
	       (unsigned long long)pool.available, (unsigned long long)pool.total, (unsigned long long)(hp >> 10),
	       (unsigned long long)need);
	if (pool.available >= need)
		printf("  enough: eht serve puts them on huge pages (--tier auto, region-pinned or region)\n");
	else
		printf("  set: sysctl vm.nr_hugepages=%llu (as root, before eht serve; the pages come from free memory:\n"
		       "  %.1f GiB; per NUMA node: /sys/devices/system/node/nodeN/hugepages/hugepages-%llukB/nr_hugepages)\n"
		       "  without: region tables on %s pages, CPU gathers about half as fast\n",
		       (unsigned long long)set, (double)(need * hp) / (double)(1ull << 30), (unsigned long long)(hp >> 10),
		       thp ? "shmem THP (advised)" : "4 KiB");
	return 0;
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_probe[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
					 {"ckpt", required_argument, NULL, 'c'}, {"tensors", required_argument, NULL, 't'},
					 {0}};

int cmd_probe(int argc, char **argv)
{
	const struct option *longopts = cli_opts_probe;
	int json = 0, c;
	const char *ckpt = NULL, *pattern = NULL;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "probe", "h", longopts)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'c')
			ckpt = optarg;
		else if (c == 't')
			pattern = optarg;
		else if (c == 'j')
			json = 1;
		else
			return 2;
	}
	if (pattern && !ckpt)
		return cli_usage_error("probe", "--tensors needs --ckpt");
	if (optind < argc)
		return cli_usage_error("probe", "takes no arguments");
	if (ckpt)
		return probe_ckpt(ckpt, pattern, json);
	if (json) {
		char *s = NULL;
		if (eht_probe_json(&s))
			return cli_error("probe", 1, NULL);
		json_error_t je;
		json_t *o = json_loads(s, 0, &je); /* the library's report, as every other: one compact line */
		free(s);
		if (!o)
			return cli_errorf("probe", 1, "the library's probe report is not JSON: %s", je.text);
		return cli_print_json(o);
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
	printf("hugetlb: %llu of %llu pages free (%llu KiB pages)%s\n", (unsigned long long)p->hugepages_free,
	       (unsigned long long)p->hugepages_total, (unsigned long long)(p->hugepage_size >> 10),
	       p->hugepages_free ? "" : "; region tables get 4 KiB pages unless shmem THP is advise: "
					"eht probe --ckpt CHECKPOINT says what vm.nr_hugepages to set");
	eht_probe_free(p);
	return 0;
}
