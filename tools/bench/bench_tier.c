/* SPDX-License-Identifier: Apache-2.0 */
/* bench_tier.c: a bench's table in a tier the library makes: its own memory wrapped, or shared as
 * eht serve shares a worker's tables (the tiers by the library's registry, never spelled here). */
#include "bench_tier.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cli.h"
#include "table/table_impl.h"
#include "util/clock.h"
#include "util/err.h"

int bench_tier_can(int tier) { return tier > 0 && (eht_tier_caps(tier) & (EHT_TIER_CAP_SHARE | EHT_TIER_CAP_WRAP)); }

int bench_tier_names(char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (int t = 1; t <= eht_tier_count(); t++)
		if (bench_tier_can(t) && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", eht_tier_name(t));
	return n < len ? 0 : -ENOSPC;
}

int bench_tier_parse(const char *cmd, const char *s)
{
	int t = eht_tier_by_name(s);
	if (t > 0 && bench_tier_can(t))
		return 0;
	char names[128];
	(void)bench_tier_names(names, sizeof(names));
	return cli_errorf(cmd, 2, "--tier is one of %s, not '%s'", names, s);
}

int bench_table_open(const char *tier, uint64_t rows, uint64_t rb, int device,
		     void (*fill)(void *host, size_t bytes, void *arg), void *arg, double *fill_s, double *make_s,
		     struct bench_table *bt)
{
	memset(bt, 0, sizeof(*bt));
	double t0 = eht_now_s(), tf = 0;
	snprintf(bt->tier, sizeof(bt->tier), "%s", tier);
	bt->bytes = (size_t)(rows * rb);
	int rc, t = eht_tier_by_name(tier);
	if (t <= 0 || !bench_tier_can(t))
		return t < 0 ? t : eht_err(EINVAL, "bench: a table cannot be made in tier %s", tier);
	if (eht_tier_caps(t) & EHT_TIER_CAP_WRAP) {
		void *p = mmap(NULL, bt->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return eht_err_sys(errno, "bench: mmap of %zu bytes", bt->bytes);
		bt->anon = p;
		/* THP before the first touch (eht_table_wrap advises it too, but after the fill is late). */
		madvise(p, bt->bytes, MADV_HUGEPAGE);
		double a = eht_now_s();
		fill(p, bt->bytes, arg);
		tf = eht_now_s() - a;
		rc = eht_table_wrap(p, rows, rb, device, "bench", &bt->t);
	} else {
		eht_group *g = NULL;
		struct eht_share_opts so = {.size = sizeof(so), .device = device < 0 ? 0 : device, .row_bytes = rb,
					    .name = "bench", .tier = t};
		rc = eht_group_create_single(&g);
		if (!rc)
			rc = eht_table_share(bt->bytes, g, &so, &bt->t);
		eht_group_destroy(g);
	}
	if (rc) {
		bench_table_close(bt);
		return rc;
	}
	struct eht_table_info ti = {.size = sizeof(ti)};
	if ((rc = eht_table_get_info(bt->t, &ti)) != 0) {
		bench_table_close(bt);
		return rc;
	}
	bt->host = ti.host;
	if (!bt->anon) {
		double a = eht_now_s();
		fill(bt->host, bt->bytes, arg);
		tf = eht_now_s() - a;
	}
	*fill_s = tf;
	*make_s = eht_now_s() - t0 - tf;
	return 0;
}

/* EHT_BENCH_SMAPS=1: the smaps blocks of the first two mappings over the rows, to stderr (what the
 * kernel says of a driver's mapping beyond the page size). */
static void smaps_dump(const void *host, size_t bytes)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	if (!f)
		return;
	uint64_t a = (uint64_t)(uintptr_t)host, b = a + bytes;
	char line[512];
	int in = 0, shown = 0;
	while (fgets(line, sizeof(line), f) && shown <= 2) {
		unsigned long long lo, hi;
		if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2) {
			in = hi > a && lo < b;
			shown += in;
			if (shown > 2)
				break;
		}
		if (in)
			fputs(line, stderr);
	}
	fclose(f);
}

uint64_t bench_table_pages(const struct bench_table *bt, char *text, size_t len)
{
	if (getenv("EHT_BENCH_SMAPS") && bt->host)
		smaps_dump(bt->host, bt->bytes);
	eht_table_page_text(bt->t, text, len);
	return eht_table_page_size(bt->t);
}

void bench_table_close(struct bench_table *bt)
{
	eht_table_close(bt->t);
	bt->t = NULL;
	if (bt->anon)
		munmap(bt->anon, bt->bytes);
	bt->anon = NULL;
}
