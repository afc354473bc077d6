/* SPDX-License-Identifier: Apache-2.0 */
/* mem_guard.h: running a copy out of a file mapping so that a SIGBUS (the file shrank under the
 * mapping, or its device failed) becomes an error instead of killing the process. */
#ifndef EHT_TABLE_MEM_GUARD_H
#define EHT_TABLE_MEM_GUARD_H

/* Runs fn(arg) on this thread with the process-wide SIGBUS guard armed. fn must only read mapped
 * files and write memory of its own (it may be left part way). Returns 0, -EIO when a SIGBUS cut
 * fn short, or -errno when the guard cannot be installed (with a message). Not nestable. */
int eht_guarded_call(void (*fn)(void *arg), void *arg);

#endif
