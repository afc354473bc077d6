/* SPDX-License-Identifier: Apache-2.0 */
/* bench_cgroup.h: a memory limit for `eht bench disk --mem-limit`: a cgroup v2 or v1 child, or a
 * transient systemd scope, each tried in turn. */
#ifndef EHT_CLI_BENCH_CGROUP_H
#define EHT_CLI_BENCH_CGROUP_H

#include <stddef.h>
#include <stdint.h>

/* Mechanisms, as reported (JSON "limit_mechanism"). */
#define BENCH_CG_V2 "cgroup-v2"
#define BENCH_CG_V1 "cgroup-v1"
#define BENCH_CG_SCOPE "cgroup-v2-systemd-scope"
#define BENCH_CG_BIGFILE "file-larger-than-memory"
#define BENCH_CG_NONE "none"

struct bench_cg {
	char dir[1600];     /* the cgroup made for the bench (empty: none made here) */
	char home[1600];   /* the cgroup the process came from (its cgroup.procs) */
	char enabled[1800]; /* a subtree_control where "+memory" was written by us (undone at leave) */
	int v2, fake;
	char pid[24];       /* this process's pid, for cgroup.procs (made at enter, for bench_cg_undo) */
	char home_procs[1700]; /* home's cgroup.procs */
	const char *mech;  /* one of BENCH_CG_* */
	uint64_t limit;    /* bytes the mechanism applies */
};

/* Moves this process under a memory limit of `limit` bytes: a child of its own cgroup v2 (the
 * memory controller enabled there, which the kernel allows only when no other process shares that
 * cgroup), a sibling under its parent (where the parent already delegates the memory controller),
 * then a child of its cgroup v1 memory hierarchy. EHT_BENCH_CGROUP_ROOT=DIR (tests) takes DIR as a
 * cgroup v2 hierarchy the process sits at the top of (files are created, nothing is removed).
 * Inside a scope made by bench_cg_scope_exec (EHT_BENCH_CG_SCOPE set), reports that scope's limit.
 * Returns 0 with c->mech set, or -errno with why (each attempt's reason) in why. */
int bench_cg_enter(struct bench_cg *c, uint64_t limit, char *why, size_t wl);
/* Back to the cgroup the process came from; removes the one made. */
void bench_cg_leave(struct bench_cg *c);
/* bench_cg_leave from a signal handler (a cli_undo_fn; c a struct bench_cg): the same writes and
 * rmdir on the strings bench_cg_enter prepared, no messages. */
void bench_cg_undo(void *c);
/* Bytes charged to the cgroup made (0 when none). */
uint64_t bench_cg_usage(const struct bench_cg *c);
/* Re-runs this command (/proc/self/cmdline) inside a transient systemd scope with MemoryMax=limit
 * (`systemd-run --scope`), where systemd runs the machine and this process is not already in one.
 * Returns the command's exit status (>= 0), or -errno with why when no scope could be started. */
int bench_cg_scope_exec(uint64_t limit, char *why, size_t wl);

#endif
