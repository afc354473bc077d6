/* SPDX-License-Identifier: Apache-2.0 */
/* test_disk_ticket_close.c: disk prefetch tickets still out when their table is closed. Close
 * finishes them (reads in flight completed, queued ones dropped, a waiting thread woken); from then
 * on wait and release fail with -EBADF naming the table, the ticket holds no rows, and each release
 * frees its ticket, the last one what the table left (ASan and TSan builds check that nothing is
 * used after it is freed, that nothing leaks, and the waiter's race with close). */
#include <pthread.h>
#include <string.h>

#include "disk_ref.h"
#include "testutil.h"

static const char *path;

static eht_table *open_table(unsigned slots)
{
	char wn[128], sn[128];
	struct eht_disk_opts o = {.size = sizeof(o), .weight = W_NAME(1, wn), .scale = S_NAME(1, sn),
				  .io_threads = 2, .prefetch_rows = 512, .prefetch_slots = slots, .name = "tk-table"};
	eht_table *t = NULL;
	CHECK_RC(eht_disk_open(path, &o, &t), 0);
	return t;
}

static int64_t ids[1000];

/* Out at close: one done (waited for), one perhaps still queued or reading, one never waited. */
static void closed_under_tickets(void)
{
	eht_table *t = open_table(3);
	if (!t)
		return;
	eht_disk_ticket *a = NULL, *b = NULL, *c = NULL;
	CHECK_RC(eht_disk_prefetch(t, ids, EHT_ID_INT64, 0, 1000, 0, &a), 0);
	CHECK_RC(eht_disk_wait(a), 0);
	CHECK(eht_disk_ticket_rows(a) > 0);
	CHECK_RC(eht_disk_prefetch(t, ids, EHT_ID_INT64, 0, 1000, 0, &b), 0);
	CHECK_RC(eht_disk_prefetch(t, ids, EHT_ID_INT64, 0, 10, 0, &c), 0);
	CHECK_RC(eht_table_close(t), 0);
	CHECK_RC(eht_disk_wait(a), -EBADF);
	CHECK(strstr(eht_last_error(), "tk-table") && strstr(eht_last_error(), "closed"));
	CHECK(eht_disk_ticket_rows(a) == 0 && eht_disk_ticket_rows(b) == 0);
	CHECK_RC(eht_disk_wait(b), -EBADF);
	CHECK_RC(eht_disk_release(b), -EBADF);
	CHECK_RC(eht_disk_release(a), -EBADF);
	CHECK_RC(eht_disk_wait(c), -EBADF);
	CHECK_RC(eht_disk_release(c), -EBADF); /* the last one: frees what the table left */
}

/* No ticket out, or prefetch never used: close frees everything at once. */
static void closed_without_tickets(void)
{
	eht_table *t = open_table(2);
	eht_disk_ticket *a = NULL;
	if (t) {
		CHECK_RC(eht_disk_prefetch(t, ids, EHT_ID_INT64, 0, 1000, 0, &a), 0);
		CHECK_RC(eht_disk_release(a), 0);
		CHECK_RC(eht_table_close(t), 0);
	}
	t = open_table(2);
	if (t)
		CHECK_RC(eht_table_close(t), 0);
}

struct waiter {
	eht_disk_ticket *tk;
	int rc;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;
	w->rc = eht_disk_wait(w->tk);
	return NULL;
}

/* A thread waits on a ticket while another closes the table: it returns (done before the close, or
 * -EBADF after it), whichever thread runs first. */
static void closed_while_waited(void)
{
	for (int round = 0; round < 20; round++) {
		eht_table *t = open_table(1);
		if (!t)
			return;
		struct waiter w = {.rc = 1};
		CHECK_RC(eht_disk_prefetch(t, ids, EHT_ID_INT64, 0, 1000, 0, &w.tk), 0);
		pthread_t th;
		CHECK(pthread_create(&th, NULL, wait_main, &w) == 0);
		CHECK_RC(eht_table_close(t), 0);
		pthread_join(th, NULL);
		CHECK(w.rc == 0 || w.rc == -EBADF);
		CHECK_RC(eht_disk_release(w.tk), -EBADF);
	}
}

int main(void)
{
	char single[1024];
	snprintf(single, sizeof(single), "%s/safetensors/engram_single.safetensors", t_fixtures());
	path = single;
	for (size_t i = 0; i < 1000; i++)
		ids[i] = (int64_t)((i * 2654435761u) % 4099);
	closed_under_tickets();
	closed_without_tickets();
	closed_while_waited();
	return t_done();
}
