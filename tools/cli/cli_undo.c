/* SPDX-License-Identifier: Apache-2.0 */
/* cli_undo.c: what a command made on disk or in the kernel (a bench's test file, a cgroup, the shards
 * `eht synth` is writing) is undone when a signal ends it, not only on its normal exit paths. */
#include <errno.h>
#include <signal.h>

#include "cli.h"

static const int undo_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static struct {
	cli_undo_fn fn;
	void *arg;
} undo[8];
static volatile sig_atomic_t nundo;
static struct sigaction undo_old[sizeof(undo_signals) / sizeof(undo_signals[0])];

static void undo_handler(int sig)
{
	for (sig_atomic_t i = nundo; i > 0; i--)
		undo[i - 1].fn(undo[i - 1].arg);
	nundo = 0;
	signal(sig, SIG_DFL); /* then die of it, as without the handler */
	raise(sig);
}

int cli_undo_push(cli_undo_fn fn, void *arg)
{
	if (nundo >= (sig_atomic_t)(sizeof(undo) / sizeof(undo[0])))
		return -ENOSPC;
	undo[nundo].fn = fn;
	undo[nundo].arg = arg;
	if (nundo++ == 0) {
		struct sigaction sa = {.sa_handler = undo_handler};
		sigfillset(&sa.sa_mask); /* one handler at a time */
		for (size_t i = 0; i < sizeof(undo_signals) / sizeof(undo_signals[0]); i++)
			sigaction(undo_signals[i], &sa, &undo_old[i]);
	}
	return 0;
}

void cli_undo_pop(void)
{
	if (nundo > 0 && --nundo == 0)
		for (size_t i = 0; i < sizeof(undo_signals) / sizeof(undo_signals[0]); i++)
			sigaction(undo_signals[i], &undo_old[i], NULL);
}
