/* SPDX-License-Identifier: Apache-2.0 */
/* mem_guard.c: the process-wide SIGBUS guard: reads of a file mapping (the file was truncated under
 * the mapping, or its device failed) that end in an error instead of killing the process. Used by
 * the disk tier's copies, serve's loads and the CLI's checks (os/mem_guard.h). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "os/mem_guard.h"
#include "util/err.h"

/* Not initial-exec: that would force all of libeht's TLS into the static TLS block, which a
 * library dlopen'ed late (Python's ctypes) cannot get. The handler reads eht_guard_jump only on a thread
 * that has just written it, so its TLS block exists and no lazy allocation happens there.
 * volatile: the stores around the copy loop must not be merged away (memcpy is a builtin the
 * compiler knows does not read this). */
_Thread_local sigjmp_buf *volatile eht_guard_jump;

static struct sigaction old_bus;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static int guard_rc;

static void bus_handler(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *jb = eht_guard_jump;
	if (jb) {
		eht_guard_jump = NULL;
		siglongjmp(*jb, 1);
	}
	/* Not ours: behave as the handler installed before us would have. */
	if (old_bus.sa_flags & SA_SIGINFO) {
		if (old_bus.sa_sigaction) {
			old_bus.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (old_bus.sa_handler != SIG_DFL && old_bus.sa_handler != SIG_IGN) {
		old_bus.sa_handler(sig);
		return;
	}
	/* Default action: restore it; the faulting instruction runs again and the process dies as it
	 * would have without us. */
	signal(SIGBUS, SIG_DFL);
	if (si && si->si_code <= 0) /* sent by kill(): re-raise */
		raise(SIGBUS);
}

static void install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bus_handler;
	/* NODEFER: we leave the handler by siglongjmp without restoring the mask (sigsetjmp(.., 0)
	 * saves a system call per copy), so SIGBUS must not stay blocked. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &old_bus) != 0)
		guard_rc = eht_err_sys(errno, "installing the SIGBUS guard");
}

int eht_guard_install(void)
{
	pthread_once(&guard_once, install);
	return guard_rc;
}

int eht_guarded_call(void (*fn)(void *arg), void *arg)
{
	int rc = eht_guard_install();
	if (rc)
		return rc;
	sigjmp_buf jb;
	if (sigsetjmp(jb, 0))
		return eht_err(EIO, "SIGBUS reading a mapped file: it shrank under the mapping or its device failed");
	eht_guard_arm(&jb);
	fn(arg);
	eht_guard_disarm();
	return 0;
}
