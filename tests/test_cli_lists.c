/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_lists.c: the lists the completion offers (`eht --list strategies [bench]|tiers [serve|bench]|commands`)
 * are the library's own: every strategy of eht_lookup_strategy_count / _name and no other, in its
 * order, every tier of eht_tier_count / _name, serve's --tier values "auto" and the
 * tiers eht_tier_caps says are shared or opened in place, the benches' those shared or wrapped; and
 * the tier registry's public functions themselves (eht_tier_by_name, eht_tier_caps). */
#include <string.h>

#include "testutil.h"

static char out[1 << 16], err[1 << 12];

/* `eht --list ARGS`: stdout, and the exit status must be 0. */
static const char *list(const char *args)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "--list %s", args);
	int st = t_cli_run(cmd, 60, out, sizeof(out), err, sizeof(err));
	if (st != 0) {
		fprintf(stderr, "eht %s: exit %d, stderr '%s'\n", cmd, st, err);
		t_failures++;
	}
	return out;
}

/* Appends name and a newline to buf. */
static void add(char *buf, size_t len, const char *name)
{
	size_t n = strlen(buf);
	snprintf(buf + n, len - n, "%s\n", name);
}

static void expect(const char *args, const char *want)
{
	const char *got = list(args);
	if (strcmp(got, want)) {
		fprintf(stderr, "eht --list %s:\n%s\nwant:\n%s\n", args, got, want);
		t_failures++;
	}
}

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	setenv("EHT_NO_CUDA", "1", 1);
	char want[4096] = "";

	/* strategies: each of the library's, in its order */
	int ns = eht_lookup_strategy_count();
	CHECK(ns >= 2);
	for (int i = 0; i < ns; i++)
		add(want, sizeof(want), eht_lookup_strategy_name(i));
	expect("strategies", want);
	/* a bench's: the same, and the engine's own call that `eht bench lookup --strategies` takes */
	add(want, sizeof(want), "layer");
	expect("strategies bench", want);

	/* the tier registry */
	int nt = eht_tier_count();
	CHECK(nt >= EHT_TIER_MEMORY);
	CHECK(!strcmp(eht_tier_name(nt + 1), "none") && !strcmp(eht_tier_name(0), "none"));
	CHECK(eht_tier_caps(0) == 0 && eht_tier_caps(nt + 1) == 0 && eht_tier_caps(-1) == 0);
	CHECK(eht_tier_caps(EHT_TIER_DISK) & EHT_TIER_CAP_IN_PLACE);
	CHECK(eht_tier_caps(EHT_TIER_MEMORY) == EHT_TIER_CAP_WRAP);
	CHECK((eht_tier_caps(EHT_TIER_REGION) & EHT_TIER_CAP_SHARE) && (eht_tier_caps(EHT_TIER_HOST_NUMA) & EHT_TIER_CAP_SHARE));
	CHECK_RC(eht_tier_by_name("nonesuch"), -EINVAL);
	CHECK(strstr(eht_last_error(), "nonesuch") && strstr(eht_last_error(), eht_tier_name(nt)));
	CHECK_RC(eht_tier_by_name(NULL), -EINVAL);
	want[0] = 0;
	char serve[1024] = "auto\n", bench[1024] = "";
	for (int t = 1; t <= nt; t++) {
		const char *name = eht_tier_name(t);
		CHECK(strcmp(name, "none") != 0);
		CHECK_RC(eht_tier_by_name(name), t);
		add(want, sizeof(want), name);
		unsigned caps = eht_tier_caps(t);
		CHECK(caps != 0);
		if (caps & (EHT_TIER_CAP_SHARE | EHT_TIER_CAP_IN_PLACE))
			add(serve, sizeof(serve), name);
		if (caps & (EHT_TIER_CAP_SHARE | EHT_TIER_CAP_WRAP))
			add(bench, sizeof(bench), name);
	}
	expect("tiers", want);
	expect("tiers serve", serve);
	expect("tiers bench", bench);

	/* commands: the command table's paths, the completion table's first column */
	char table[1 << 14];
	CHECK(t_cli_run("--completion-table", 60, table, sizeof(table), NULL, 0) == 0);
	want[0] = 0;
	for (char *line = strtok(table, "\n"); line; line = strtok(NULL, "\n")) {
		char *tab = strchr(line, '\t');
		if (tab)
			*tab = 0;
		add(want, sizeof(want), line);
	}
	expect("commands", want);

	/* anything else is a usage error */
	CHECK(t_cli_run("--list frobs", 60, out, sizeof(out), err, sizeof(err)) == 2 && strstr(err, "frobs"));
	CHECK(t_cli_run("--list tiers status", 60, out, sizeof(out), err, sizeof(err)) == 2);
	return t_done();
}
