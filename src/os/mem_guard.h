/* SPDX-License-Identifier: Apache-2.0 */
/* mem_guard.h: running a copy out of a file mapping so that a SIGBUS (the file shrank under the
 * mapping, or its device failed) becomes an error instead of killing the process. */
#ifndef EHT_OS_MEM_GUARD_H
#define EHT_OS_MEM_GUARD_H

#include <setjmp.h>
#include <stdatomic.h>
#include <stddef.h>

/* Runs fn(arg) on this thread with the process-wide SIGBUS guard armed. fn must only read mapped
 * files and write memory of its own (it may be left part way). Returns 0, -EIO when a SIGBUS cut
 * fn short, or -errno when the guard cannot be installed (with a message). Not nestable. */
int eht_guarded_call(void (*fn)(void *arg), void *arg);

/* Installs the process-wide SIGBUS guard once (before the first eht_guard_arm). Returns 0 or -errno
 * of sigaction, with a message. */
int eht_guard_install(void);

/* For hot copy loops (the disk tier's): arm with a sigsetjmp(jb, 0) buffer of this thread, copy,
 * disarm; a SIGBUS in between siglongjmps to jb (once: the arming is gone). A SIGBUS with nothing
 * armed goes to the handler installed before eht's. */
extern _Thread_local sigjmp_buf *volatile eht_guard_jump;
static inline void eht_guard_arm(sigjmp_buf *jb)
{
	eht_guard_jump = jb;
	atomic_signal_fence(memory_order_seq_cst); /* the store before the loads it guards */
}
static inline void eht_guard_disarm(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	eht_guard_jump = NULL;
}

#endif
