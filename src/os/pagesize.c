/* SPDX-License-Identifier: Apache-2.0 */
/* pagesize.c: the CPU page size of a range of this process's memory, read from /proc/self/smaps. */
#include "os/pagesize.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The PMD size THP uses (2 MiB on x86-64 and 4 KiB-granule arm64). */
static uint64_t pmd_size(void)
{
	uint64_t v = 0;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");
	if (f) {
		unsigned long long x = 0;
		if (fscanf(f, "%llu", &x) == 1)
			v = x;
		fclose(f);
	}
	return v ? v : (2ull << 20);
}

/* One mapping's fields (kB values as smaps gives them). */
struct vma {
	uint64_t lo, hi, overlap;
	uint64_t rss, huge, hugetlb, kps;
	bool ht, hg, pf, eligible;
	bool open;
};

static void vma_add(struct eht_page_stat *st, const struct vma *v)
{
	if (!v->open || !v->overlap)
		return;
	/* smaps totals a whole mapping: the part inside the range counts in proportion. */
	double f = (double)v->overlap / (double)(v->hi - v->lo);
	st->mapped += v->overlap;
	st->resident += (uint64_t)((double)(v->rss + v->hugetlb) * 1024.0 * f);
	st->huge += (uint64_t)((double)(v->huge + v->hugetlb) * 1024.0 * f);
	if (v->kps * 1024 > st->kernel_page)
		st->kernel_page = v->kps * 1024;
	st->hugetlb |= v->ht;
	st->thp_advised |= v->hg;
	st->pfnmap |= v->pf;
	st->thp_eligible |= v->eligible;
}

int eht_page_stat(const void *addr, size_t len, struct eht_page_stat *st)
{
	memset(st, 0, sizeof(*st));
	if (!addr || !len)
		return -EINVAL;
	FILE *f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -errno;
	uint64_t a = (uint64_t)(uintptr_t)addr, b = a + len;
	struct vma v = {0};
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, x;
		char key[64];
		if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2) {
			vma_add(st, &v);
			memset(&v, 0, sizeof(v));
			v.lo = lo;
			v.hi = hi;
			uint64_t s = lo > a ? lo : a, e = hi < b ? hi : b;
			v.overlap = e > s ? e - s : 0;
			v.open = true;
			continue;
		}
		if (!v.overlap)
			continue;
		if (!strncmp(line, "VmFlags:", 8)) {
			/* Two-letter words: ht hugetlb, hg MADV_HUGEPAGE, pf PFN map, io I/O memory. */
			char *save = NULL;
			for (char *w = strtok_r(line + 8, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
				v.ht |= !strcmp(w, "ht");
				v.hg |= !strcmp(w, "hg");
				v.pf |= !strcmp(w, "pf") || !strcmp(w, "io");
			}
			continue;
		}
		if (sscanf(line, "%63[^:]: %llu kB", key, &x) != 2)
			continue;
		if (!strcmp(key, "Rss"))
			v.rss = x;
		else if (!strcmp(key, "KernelPageSize"))
			v.kps = x;
		else if (!strcmp(key, "AnonHugePages") || !strcmp(key, "ShmemPmdMapped") || !strcmp(key, "FilePmdMapped"))
			v.huge += x;
		else if (!strcmp(key, "Shared_Hugetlb") || !strcmp(key, "Private_Hugetlb"))
			v.hugetlb += x;
		else if (!strcmp(key, "THPeligible"))
			v.eligible = x != 0;
	}
	vma_add(st, &v);
	fclose(f);
	return st->mapped ? 0 : -ENOENT;
}

uint64_t eht_page_stat_size(const struct eht_page_stat *st)
{
	if (st->hugetlb)
		return st->kernel_page;
	if (st->pfnmap)
		return 0;
	/* Nothing faulted in yet: the mapping's own page size, unless THP may still give huge pages. */
	if (!st->resident)
		return st->thp_eligible ? 0 : st->kernel_page;
	if (st->huge * 2 >= st->resident)
		return pmd_size();
	long ps = sysconf(_SC_PAGESIZE);
	return st->kernel_page ? st->kernel_page : (uint64_t)(ps > 0 ? ps : 4096);
}

static const char *size_text(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%" PRIu64 " GiB", b >> 30);
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%" PRIu64 " MiB", b >> 20);
	else
		snprintf(buf, len, "%" PRIu64 " KiB", b >> 10);
	return buf;
}

const char *eht_page_stat_text(const struct eht_page_stat *st, char *buf, size_t len)
{
	char s[32];
	uint64_t ps = eht_page_stat_size(st);
	int pct = st->resident ? (int)(100.0 * (double)st->huge / (double)st->resident + 0.5) : 0;
	if (pct > 100)
		pct = 100;
	if (st->hugetlb)
		snprintf(buf, len, "%s (hugetlb)", size_text(ps, s, sizeof(s)));
	else if (st->pfnmap)
		snprintf(buf, len, "unknown (driver mapping)");
	else if (!ps)
		snprintf(buf, len, "unknown (not resident)");
	else if (st->huge)
		snprintf(buf, len, "%s (THP %d%%)", size_text(ps, s, sizeof(s)), pct);
	else
		snprintf(buf, len, "%s%s", size_text(ps, s, sizeof(s)), st->thp_advised ? " (THP advised, none yet)" : "");
	return buf;
}
