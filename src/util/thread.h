/* SPDX-License-Identifier: Apache-2.0 */
/* thread.h: names for eht's threads, so that top -H, ps -L and a debugger show which thread of an
 * engine's process is eht's and what it does (eht-pool/N, eht-bell, ...). */
#ifndef EHT_UTIL_THREAD_H
#define EHT_UTIL_THREAD_H

/* The names of the threads the lookup engine runs (the benches tell its CPU apart by them). */
#define EHT_THREAD_POOL "eht-pool/" /* + the worker's index: the CPU pool's workers */
#define EHT_THREAD_BELL "eht-bell"  /* the doorbell poller */

/* Names the calling thread (printf format; Linux keeps 15 bytes of it). Best effort: a name that
 * cannot be set changes nothing else. */
void eht_thread_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
