/* SPDX-License-Identifier: Apache-2.0 */
/* test_ring_clock.c: the poller's prediction of a captured request's next ring (ring_clock.h): no
 * window until three intervals in a row are alike, then a window around the next ring (3 % of the
 * period either side, 0.1 to 2 ms); none again after an interval off the period; none for periods
 * below 1 ms or above 1 s; and a clock that goes back starts over. */
#include "lookup/gather/bell/ring_clock.h"
#include "testutil.h"

#include <math.h>

static bool near(double a, double b) { return fabs(a - b) < 1e-9; }

/* Rings at t0, t0 + p, ... (k of them) into a fresh clock. */
static struct lk_ring_clock rings(double t0, double p, int k)
{
	struct lk_ring_clock c = {0};
	for (int i = 0; i < k; i++)
		eht_lk_ring_seen(&c, t0 + i * p);
	return c;
}

int main(void)
{
	double f = -1, u = -1;
	/* A prefill step's period (47 ms): three intervals alike (four rings) are needed. */
	struct lk_ring_clock c = rings(10.0, 0.047, 3);
	CHECK(!eht_lk_ring_window(&c, &f, &u));
	eht_lk_ring_seen(&c, 10.141);
	CHECK(eht_lk_ring_window(&c, &f, &u));
	CHECK(near(f, 10.141 + 0.047 - 0.03 * 0.047) && near(u, 10.141 + 0.047 + 0.03 * 0.047));
	/* A step 10 % longer still counts as steady; the window follows the latest interval. */
	eht_lk_ring_seen(&c, 10.141 + 0.0517);
	CHECK(eht_lk_ring_window(&c, &f, &u));
	CHECK(near(u - f, 2 * 0.03 * 0.0517) && near(f, 10.141 + 2 * 0.0517 - 0.03 * 0.0517));
	/* An interval far off the period (the engine paused) ends the run: no window until three alike. */
	double t = 10.141 + 0.0517 + 0.5;
	eht_lk_ring_seen(&c, t);
	CHECK(!eht_lk_ring_window(&c, &f, &u));
	eht_lk_ring_seen(&c, t + 0.047);
	CHECK(!eht_lk_ring_window(&c, &f, &u)); /* 0.047 is not within 20 % of 0.5 */
	eht_lk_ring_seen(&c, t + 0.094);
	CHECK(!eht_lk_ring_window(&c, &f, &u)); /* one alike interval */
	eht_lk_ring_seen(&c, t + 0.141);
	CHECK(eht_lk_ring_window(&c, &f, &u));

	/* A decode step (3 ms): 3 % is 90 us, the margin 0.1 ms at least. */
	c = rings(1.0, 0.003, 4);
	CHECK(eht_lk_ring_window(&c, &f, &u));
	CHECK(near(f, 1.0 + 4 * 0.003 - 1e-4) && near(u, 1.0 + 4 * 0.003 + 1e-4));
	/* A 200 ms period: the margin 2 ms at most. */
	c = rings(1.0, 0.2, 4);
	CHECK(eht_lk_ring_window(&c, &f, &u) && near(u - f, 4e-3));
	/* Below 1 ms (the poller's spin after a ring covers it) and above 1 s: no window. */
	c = rings(1.0, 0.0005, 6);
	CHECK(!eht_lk_ring_window(&c, &f, &u));
	c = rings(1.0, 2.0, 6);
	CHECK(!eht_lk_ring_window(&c, &f, &u));
	/* A time not after the last ring starts over. */
	c = rings(1.0, 0.01, 5);
	CHECK(eht_lk_ring_window(&c, &f, &u));
	eht_lk_ring_seen(&c, 1.0);
	CHECK(!eht_lk_ring_window(&c, &f, &u));
	CHECK(c.period == 0 && c.steady == 0);
	/* A fresh clock has no window. */
	struct lk_ring_clock z = {0};
	CHECK(!eht_lk_ring_window(&z, &f, &u));
	return t_done();
}
