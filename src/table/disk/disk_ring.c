/* SPDX-License-Identifier: Apache-2.0 */
/* disk_ring.c: one io_uring per thread for the disk tier's reads (the read split's uncached rows
 * and EHT_DISK_URING's every row share it), made on first use and freed when the thread exits. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "table/disk/disk_impl.h"
#include "util/err.h"

#if EHT_HAVE_URING
static pthread_key_t ring_key;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;
static int ring_key_rc;

static void ring_free(void *v)
{
	io_uring_queue_exit(v);
	free(v);
}

static void ring_key_make(void) { ring_key_rc = pthread_key_create(&ring_key, ring_free); }

struct io_uring *disk_ring_get(int *rc)
{
	pthread_once(&ring_once, ring_key_make);
	if (ring_key_rc) {
		*rc = eht_err(ring_key_rc, "disk: pthread_key_create");
		return NULL;
	}
	struct io_uring *r = pthread_getspecific(ring_key);
	if (r)
		return r;
	if (!(r = calloc(1, sizeof(*r)))) {
		*rc = eht_err(ENOMEM, "disk: out of memory");
		return NULL;
	}
	int e = io_uring_queue_init(DISK_RING_DEPTH, r, 0);
	if (e < 0 || pthread_setspecific(ring_key, r) != 0) {
		if (e >= 0)
			io_uring_queue_exit(r);
		free(r);
		*rc = e < 0 ? eht_err(-e, "disk: io_uring_queue_init (%u entries) failed: %s; the kernel may forbid "
				     "io_uring (sysctl kernel.io_uring_disabled)", DISK_RING_DEPTH, strerror(-e))
			    : eht_err(ENOMEM, "disk: pthread_setspecific");
		return NULL;
	}
	return r;
}
#endif
