/* SPDX-License-Identifier: Apache-2.0 */
/* disk_guard.c: copies from a file mapping that turn a SIGBUS (the file was truncated under the
 * mapping, or the device failed) into an error instead of killing the process. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "table/disk/disk_impl.h"
#include "table/mem_guard.h"
#include "util/err.h"

/* Not initial-exec: that would force all of libeht's TLS into the static TLS block, which a
 * library dlopen'ed late (Python's ctypes) cannot get. The handler reads tl_jump only on a thread
 * that has just written it, so its TLS block exists and no lazy allocation happens there.
 * volatile: the stores around the copy loop must not be merged away (memcpy is a builtin the
 * compiler knows does not read this). */
static _Thread_local sigjmp_buf *volatile tl_jump;
#define PREFETCH_AHEAD 8

static struct sigaction old_bus;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static int guard_rc;

static void bus_handler(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *jb = tl_jump;
	if (jb) {
		tl_jump = NULL;
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
		guard_rc = eht_err_sys(errno, "disk: installing the SIGBUS guard");
}

int disk_guard_install(void)
{
	pthread_once(&guard_once, install);
	return guard_rc;
}

int disk_guarded_copy_rows(const uint8_t *base, const uint64_t *rows, size_t n, uint64_t first_row,
			   uint64_t row_bytes, uint8_t *dst, uint64_t dst_stride, size_t *fault_index)
{
	sigjmp_buf jb;
	volatile size_t i = 0;
	if (sigsetjmp(jb, 0)) {
		*fault_index = i;
		return -EIO;
	}
	tl_jump = &jb;
	atomic_signal_fence(memory_order_seq_cst);
	for (; i < n; i++) {
		/* Rows sit on different pages: start the next ones' misses early (a prefetch never faults). */
		if (i + PREFETCH_AHEAD < n) {
			const uint8_t *q = base + (rows[i + PREFETCH_AHEAD] - first_row) * row_bytes;
			for (uint64_t o = 0; o < row_bytes && o < 512; o += 64)
				__builtin_prefetch(q + o, 0, 0);
		}
		memcpy(dst + i * dst_stride, base + (rows[i] - first_row) * row_bytes, row_bytes);
	}
	atomic_signal_fence(memory_order_seq_cst);
	tl_jump = NULL;
	return 0;
}

/* Copies n bytes; common row sizes as constant-size copies (inlined moves, no libc call a part). */
static inline void copy_part(uint8_t *dst, const uint8_t *src, uint64_t n)
{
	switch (n) {
	case 8:
		memcpy(dst, src, 8);
		break;
	case 16:
		memcpy(dst, src, 16);
		break;
	case 128:
		memcpy(dst, src, 128);
		break;
	case 256:
		memcpy(dst, src, 256);
		break;
	case 512:
		memcpy(dst, src, 512);
		break;
	default:
		memcpy(dst, src, n);
	}
}

static inline void prefetch_part(const struct disk_part *p, uint64_t rel)
{
	const uint8_t *q = p->data + rel * p->row_bytes;
	/* The bound computed first: gcc 12 deletes the whole loop under a two-part condition. */
	uint64_t lim = p->row_bytes < 512 ? p->row_bytes : 512;
	for (uint64_t o = 0; o < lim; o += 64)
		__builtin_prefetch(q + o, 0, 0);
}

int disk_guarded_copy_packed(const struct disk *d, const uint64_t *rows, size_t n, uint8_t *dst,
			     size_t *fault_index, unsigned *fault_part)
{
	sigjmp_buf jb;
	volatile size_t i = 0;
	volatile unsigned k = 0;
	const struct disk_part *p0 = &d->part[0], *p1 = &d->part[d->nparts > 1];
	const bool two = d->nparts > 1;
	if (sigsetjmp(jb, 0)) {
		*fault_index = i;
		*fault_part = k;
		return -EIO;
	}
	tl_jump = &jb;
	atomic_signal_fence(memory_order_seq_cst);
	/* One pass over both parts: the weight and scale misses of a row (two pages, each a TLB miss
	 * on a 4 KiB mapping) are in flight together, ahead of the copies. */
	for (size_t j = 0; j < n; j++) {
		if (j + PREFETCH_AHEAD < n) {
			uint64_t r = rows[j + PREFETCH_AHEAD] - d->first_row;
			prefetch_part(p0, r);
			if (two)
				prefetch_part(p1, r);
		}
		uint64_t r = rows[j] - d->first_row;
		uint8_t *o = dst + j * d->rb;
		i = j;
		k = 0;
		copy_part(o + p0->dst_off, p0->data + r * p0->row_bytes, p0->row_bytes);
		if (two) {
			k = 1;
			copy_part(o + p1->dst_off, p1->data + r * p1->row_bytes, p1->row_bytes);
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	tl_jump = NULL;
	return 0;
}

int eht_guarded_call(void (*fn)(void *arg), void *arg)
{
	int rc = disk_guard_install();
	if (rc)
		return rc;
	sigjmp_buf jb;
	if (sigsetjmp(jb, 0))
		return eht_err(EIO, "SIGBUS reading a mapped file: it shrank under the mapping or its device failed");
	tl_jump = &jb;
	atomic_signal_fence(memory_order_seq_cst);
	fn(arg);
	atomic_signal_fence(memory_order_seq_cst);
	tl_jump = NULL;
	return 0;
}
