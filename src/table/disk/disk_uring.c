/* SPDX-License-Identifier: Apache-2.0 */
/* disk_uring.c: the disk tier's rows read with io_uring at high queue depth (EHT_DISK_URING).
 * Reads stay buffered, not O_DIRECT: the disk tier lives on the page cache (warm steps are memory
 * copies), and rows of 264 bytes are far smaller than the 4 KiB blocks O_DIRECT would force. Cold
 * reads of uncached pages are handed by the kernel to its io-wq workers, so a few user threads keep
 * hundreds of reads in flight. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "table/disk/disk_impl.h"
#include "util/err.h"

#if EHT_HAVE_URING
bool disk_uring_available(void) { return true; }

int disk_read_uring(struct disk *d, const uint64_t *miss, const uint32_t *idx, size_t m, uint8_t *dst)
{
	int rc = 0;
	struct io_uring *ring = disk_ring_get(&rc);
	if (!ring)
		return rc;
	const size_t total = m * d->nparts;
	size_t submitted = 0, completed = 0;
	int err = 0;
	uint64_t err_row = 0, err_off = 0;
	unsigned err_part = 0;
	bool err_short = false;
	/* Keep the ring full; after an error submit nothing more but reap everything in flight, since
	 * the kernel still writes into dst until each read completes. */
	while (completed < submitted || (submitted < total && !err)) {
		while (submitted < total && !err) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			if (!sqe)
				break;
			size_t i = submitted / d->nparts;
			unsigned k = (unsigned)(submitted % d->nparts);
			const struct disk_part *p = &d->part[k];
			uint64_t off = p->file_offset + (miss[i] - d->first_row) * p->row_bytes;
			io_uring_prep_read(sqe, p->fd, dst + (size_t)idx[i] * d->rb + p->dst_off, (unsigned)p->row_bytes, off);
			io_uring_sqe_set_data64(sqe, submitted);
			submitted++;
		}
		int s = io_uring_submit_and_wait(ring, 1);
		if (s < 0 && s != -EINTR && s != -EAGAIN && !err) {
			err = -s;
			err_short = false;
			err_row = miss[completed / d->nparts];
			err_part = 0;
			err_off = d->part[0].file_offset;
			if (completed == submitted)
				break; /* nothing in flight to wait for */
		}
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(ring, head, cqe)
		{
			size_t q = (size_t)io_uring_cqe_get_data64(cqe);
			size_t i = q / d->nparts;
			unsigned k = (unsigned)(q % d->nparts);
			const struct disk_part *p = &d->part[k];
			if ((uint64_t)cqe->res != p->row_bytes && !err) {
				err = cqe->res < 0 ? -cqe->res : EIO;
				err_short = cqe->res >= 0;
				err_row = miss[i];
				err_part = k;
				err_off = p->file_offset + (miss[i] - d->first_row) * p->row_bytes;
			}
			seen++;
		}
		io_uring_cq_advance(ring, seen);
		completed += seen;
	}
	if (err)
		return disk_read_error(d, &d->part[err_part], err_row, err_off, err,
				       err_short ? "short read (end of file) of" : "reading (io_uring)");
	return 0;
}

#else

bool disk_uring_available(void) { return false; }

int disk_read_uring(struct disk *d, const uint64_t *miss, const uint32_t *idx, size_t m, uint8_t *dst)
{
	(void)d, (void)miss, (void)idx, (void)m, (void)dst;
	return eht_err(EOPNOTSUPP, "disk: this libeht was built without liburing");
}

#endif
