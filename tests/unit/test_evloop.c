/* SPDX-License-Identifier: MIT */
/* test_evloop.c - the event loop: timers in order, posted work, fd readiness,
 * the spinning (busy-poll) turns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "util/evloop.h"

static uint64_t fake_now;
static uint64_t fake_clock(void *arg) { (void)arg; return fake_now; }

static int order[8], norder;
static struct ul_timer timers[3];
static void timer_cb(struct ul_timer *t) { order[norder++] = (int)(t - timers); }

static void test_timers_fire_in_deadline_order(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(fake_clock, NULL);
	assert_non_null(loop);
	fake_now = 1000;
	norder = 0;
	for (int i = 0; i < 3; i++)
		ul_timer_init(&timers[i], timer_cb);
	ul_timer_start(loop, &timers[0], 3000);
	ul_timer_start(loop, &timers[1], 2000);
	ul_timer_start(loop, &timers[2], 5000);
	ul_loop_run_once(loop, 0);
	assert_int_equal(norder, 0);
	fake_now = 3500;
	ul_loop_run_once(loop, 0);
	assert_int_equal(norder, 2);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 0);
	ul_timer_stop(loop, &timers[2]);
	fake_now = 9000;
	ul_loop_run_once(loop, 0);
	assert_int_equal(norder, 2);
	assert_false(ul_timer_armed(&timers[2]));
	ul_loop_destroy(loop);
}

static int work_runs;
static void work_fn(struct ul_work *w) { (void)w; work_runs++; }

static void test_posted_work_runs_once(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(NULL, NULL);
	struct ul_work w = { .fn = work_fn };
	work_runs = 0;
	ul_loop_post(loop, &w);
	ul_loop_post(loop, &w);
	ul_loop_run_once(loop, 100);
	assert_int_equal(work_runs, 1);
	ul_loop_destroy(loop);
}

static int io_hits;
static void io_cb(struct ul_io *io, uint32_t ev)
{
	char c;
	(void)ev;
	assert_int_equal(read(io->fd, &c, 1), 1);
	io_hits++;
}

static void test_fd_readiness(void **state)
{
	(void)state;
	int p[2];
	struct ul_io io;
	struct ul_loop *loop = ul_loop_create(NULL, NULL);
	assert_int_equal(pipe(p), 0);
	ul_io_init(&io, p[0], io_cb);
	assert_int_equal(ul_io_start(loop, &io, EPOLLIN), 0);
	io_hits = 0;
	assert_int_equal(write(p[1], "x", 1), 1);
	ul_loop_run_once(loop, 1000);
	assert_int_equal(io_hits, 1);
	ul_io_stop(loop, &io);
	assert_int_equal(write(p[1], "y", 1), 1);
	ul_loop_run_once(loop, 10);
	assert_int_equal(io_hits, 1);
	close(p[0]);
	close(p[1]);
	ul_loop_destroy(loop);
}

/* A callback that stops another io with an event in the same batch, and
 * frees it: the freed io's event must not be dispatched. The memory is
 * "reused" here (an io-looking struct, active, with another callback) so
 * that a loop reading it after the stop fails without a sanitizer too. */
struct pair_io {
	struct ul_io io;
	int wfd;
	struct pair_io *other;
};

static int pair_hits, reused_hits;
static struct ul_loop *pair_loop;

static void reused_cb(struct ul_io *io, uint32_t ev)
{
	(void)io;
	(void)ev;
	reused_hits++;
}

static void pair_cb(struct ul_io *io, uint32_t ev)
{
	struct pair_io *self = (struct pair_io *)io;
	struct pair_io *o = self->other;

	(void)ev;
	pair_hits++;
	if (o->io.cb == reused_cb)   /* the other one is gone already */
		return;
	ul_io_stop(pair_loop, &o->io);
	close(o->io.fd);
	close(o->wfd);
	/* what another owner would find after free() and malloc() */
	memset(o, 0, sizeof(*o));
	o->io.cb = reused_cb;
	o->io.active = true;
}

static void test_stopped_io_gets_no_event_from_the_same_batch(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(NULL, NULL);
	struct pair_io a, b;
	int fds[2];

	for (int k = 0; k < 2; k++) {
		struct pair_io *p = k ? &b : &a;

		memset(p, 0, sizeof(*p));
		assert_int_equal(pipe(fds), 0);
		ul_io_init(&p->io, fds[0], pair_cb);
		p->wfd = fds[1];
		p->other = k ? &a : &b;
		assert_int_equal(ul_io_start(loop, &p->io, EPOLLIN), 0);
		assert_int_equal(write(p->wfd, "x", 1), 1);
	}
	pair_loop = loop;
	pair_hits = reused_hits = 0;
	/* both pipes are readable: one epoll_wait returns both events */
	ul_loop_run_once(loop, 1000);
	assert_int_equal(pair_hits, 1);
	assert_int_equal(reused_hits, 0);
	/* the survivor still works */
	{
		struct pair_io *live = a.io.cb == pair_cb ? &a : &b;

		assert_int_equal(write(live->wfd, "y", 1), 1);
		ul_loop_run_once(loop, 1000);
		assert_int_equal(pair_hits, 2);
		assert_int_equal(reused_hits, 0);
		ul_io_stop(loop, &live->io);
		close(live->io.fd);
		close(live->wfd);
	}
	ul_loop_destroy(loop);
}

/* --- busy polling: a "hot" io read by its poll op, no epoll_wait ---------- */

struct pio {
	struct ul_io io;
	int wfd;
	int cbs, polls, got;   /* epoll callbacks, poll calls, bytes read by polls */
};

static struct pio *pio_of(struct ul_io *io) { return (struct pio *)((char *)io - offsetof(struct pio, io)); }

static void pio_cb(struct ul_io *io, uint32_t ev)
{
	char c;
	(void)ev;
	while (read(io->fd, &c, 1) == 1)
		;
	pio_of(io)->cbs++;
}

static bool pio_poll(struct ul_io *io)
{
	struct pio *p = pio_of(io);
	char c;
	bool any = false;

	p->polls++;
	while (read(io->fd, &c, 1) == 1) {
		p->got++;
		any = true;
	}
	return any;
}

static void pio_open(struct ul_loop *loop, struct pio *p, bool pollable)
{
	int fds[2];

	memset(p, 0, sizeof(*p));
	assert_int_equal(pipe2(fds, O_NONBLOCK), 0);
	ul_io_init(&p->io, fds[0], pio_cb);
	if (pollable)
		p->io.poll = pio_poll;
	p->wfd = fds[1];
	assert_int_equal(ul_io_start(loop, &p->io, EPOLLIN), 0);
}

static void pio_close(struct ul_loop *loop, struct pio *p)
{
	ul_io_stop(loop, &p->io);
	close(p->io.fd);
	close(p->wfd);
}

static void pio_send(struct pio *p) { assert_int_equal(write(p->wfd, "x", 1), 1); }

/* Make `p` hot: a full turn sees its input and puts it in the hot set. */
static void make_hot(struct ul_loop *loop, struct pio *p, int (*turn)(struct ul_loop *))
{
	pio_send(p);
	turn(loop);
	assert_int_equal(p->cbs, 1);
}

static void test_spin_polls_the_hot_io_directly(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(fake_clock, NULL);
	struct pio hot;

	fake_now = 1000000;
	pio_open(loop, &hot, true);
	make_hot(loop, &hot, ul_loop_spin_once);
	/* back within 20 us: its input comes through the poll op, not epoll */
	fake_now += 500;
	pio_send(&hot);
	assert_int_equal(ul_loop_spin_once(loop), 1);
	assert_int_equal(hot.got, 1);
	assert_int_equal(hot.cbs, 1);
	/* after a pause, a full epoll turn (which also finds nothing to do) */
	fake_now += 25000;
	hot.polls = 0;
	pio_send(&hot);
	ul_loop_spin_once(loop);
	assert_int_equal(hot.polls, 0);
	assert_int_equal(hot.cbs, 2);
	pio_close(loop, &hot);
	ul_loop_destroy(loop);
}

static void test_spin_serves_other_fds_within_16_calls(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(fake_clock, NULL);
	struct pio hot, cold;
	int calls = 0;

	fake_now = 1000000;
	pio_open(loop, &hot, true);
	pio_open(loop, &cold, false);
	make_hot(loop, &hot, ul_loop_spin_once);
	pio_send(&cold);
	/* a caller spinning fast (100 ns a call) whose hot io always has input */
	while (cold.cbs == 0 && calls < 64) {
		fake_now += 100;
		pio_send(&hot);
		ul_loop_spin_once(loop);
		calls++;
	}
	assert_int_equal(cold.cbs, 1);
	assert_in_range(calls, 1, 16);
	assert_true(hot.got > 0);   /* the calls before it were hot polls */
	pio_close(loop, &hot);
	pio_close(loop, &cold);
	ul_loop_destroy(loop);
}

static int spin_timer_hits;
static void spin_timer_cb(struct ul_timer *t) { (void)t; spin_timer_hits++; }

static void test_spin_runs_due_timers_on_hot_turns(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(fake_clock, NULL);
	struct pio hot, cold;
	struct ul_timer t;

	fake_now = 1000000;
	pio_open(loop, &hot, true);
	pio_open(loop, &cold, false);
	make_hot(loop, &hot, ul_loop_spin_once);
	ul_timer_init(&t, spin_timer_cb);
	spin_timer_hits = 0;
	assert_int_equal(ul_timer_start(loop, &t, 0), 0);   /* due now: a kick */
	pio_send(&cold);   /* left for the next full turn: this one is hot only */
	fake_now += 100;
	ul_loop_spin_once(loop);
	assert_int_equal(spin_timer_hits, 1);
	assert_int_equal(cold.cbs, 0);
	assert_int_equal(hot.polls, 1);
	pio_close(loop, &hot);
	pio_close(loop, &cold);
	ul_loop_destroy(loop);
}

static void test_spin_leaves_cold_ios_to_epoll(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(fake_clock, NULL);
	struct pio hot;

	fake_now = 1000000;
	pio_open(loop, &hot, true);
	make_hot(loop, &hot, ul_loop_spin_once);
	/* its owner says a poll would find nothing (bulk streaming): the hot
	 * turns leave it alone, full turns serve it through epoll */
	hot.io.cold = true;
	pio_send(&hot);
	for (int i = 0; i < 16 && hot.cbs < 2; i++) {
		fake_now += 100;
		ul_loop_spin_once(loop);
	}
	assert_int_equal(hot.polls, 0);
	assert_int_equal(hot.cbs, 2);
	/* warm again: the next epoll event makes it hot */
	hot.io.cold = false;
	pio_send(&hot);
	for (int i = 0; i < 16 && hot.cbs < 3; i++) {
		fake_now += 100;
		ul_loop_spin_once(loop);
	}
	assert_int_equal(hot.cbs, 3);
	fake_now += 100;
	pio_send(&hot);
	ul_loop_spin_once(loop);
	assert_int_equal(hot.polls, 1);
	assert_int_equal(hot.got, 1);
	pio_close(loop, &hot);
	ul_loop_destroy(loop);
}

/* --- parking: a hot io out of epoll while the loop spins --------------- */

/* `n` spinning turns 100 ns apart, each after one byte to `p` (if any) */
static void spin_turns(struct ul_loop *loop, struct pio *p, int n)
{
	for (int i = 0; i < n; i++) {
		fake_now += 100;
		if (p)
			pio_send(p);
		ul_loop_spin_once(loop);
	}
}

/* Spin with input on every turn until `p` is parked (64 turns in a row). */
static void make_parked(struct ul_loop *loop, struct pio *p)
{
	make_hot(loop, p, ul_loop_spin_once);
	spin_turns(loop, p, 80);
	assert_true(p->io.parked);
	assert_true(p->io.hot);
	p->cbs = p->polls = p->got = 0;
}

static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_spin_parks_the_hot_io(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(fake_clock, NULL);
	struct pio hot;
	uint64_t t0;

	fake_now = 1000000;
	pio_open(loop, &hot, true);
	/* after 64 turns in a row, on its 8th poll with input */
	make_hot(loop, &hot, ul_loop_spin_once);
	spin_turns(loop, NULL, 70);
	for (int i = 0; i < 8; i++) {
		assert_false(hot.io.parked);
		spin_turns(loop, &hot, 1);
	}
	assert_true(hot.io.parked);
	hot.cbs = hot.polls = hot.got = 0;
	/* out of epoll: the full turns (every 16th) poll it as well, epoll
	 * never reports it */
	spin_turns(loop, &hot, 32);
	assert_int_equal(hot.got, 32);
	assert_int_equal(hot.cbs, 0);
	/* a caller back after a pause gets a full turn: that reads it too */
	fake_now += 25000;
	pio_send(&hot);
	ul_loop_spin_once(loop);
	assert_int_equal(hot.got, 33);
	assert_int_equal(hot.cbs, 0);
	/* a turn that may block puts it back into epoll first: its input
	 * wakes the wait and comes through the callback */
	pio_send(&hot);
	t0 = real_ms();
	assert_int_equal(ul_loop_run_once(loop, 2000), 1);
	assert_true(real_ms() - t0 < 1000);
	assert_int_equal(hot.cbs, 1);
	assert_false(hot.io.parked);
	pio_close(loop, &hot);
	ul_loop_destroy(loop);
}

static void test_parked_io_goes_back_to_epoll(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(fake_clock, NULL);
	struct pio hot;
	int i;

	fake_now = 1000000;
	pio_open(loop, &hot, true);
	/* idle for longer than the hot set keeps it */
	make_parked(loop, &hot);
	for (i = 0; i < 5000 && hot.io.hot; i++)
		spin_turns(loop, NULL, 1);
	assert_false(hot.io.hot);
	assert_false(hot.io.parked);
	spin_turns(loop, &hot, 1);   /* nothing hot: a full turn */
	assert_int_equal(hot.cbs, 1);
	/* marked cold by its owner */
	make_parked(loop, &hot);
	hot.io.cold = true;
	pio_send(&hot);
	for (i = 0; i < 16 && hot.cbs == 0; i++)
		spin_turns(loop, NULL, 1);
	assert_int_equal(hot.cbs, 1);
	assert_int_equal(hot.polls, 0);
	assert_false(hot.io.parked);
	pio_close(loop, &hot);
	ul_loop_destroy(loop);
}

static void test_stop_a_parked_io(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(fake_clock, NULL);
	struct pio hot;
	uint64_t t0;

	fake_now = 1000000;
	pio_open(loop, &hot, true);
	make_parked(loop, &hot);
	ul_io_stop(loop, &hot.io);
	assert_false(hot.io.parked);
	assert_false(hot.io.hot);
	/* nothing is parked any more: a blocking turn waits its full time */
	t0 = real_ms();
	assert_int_equal(ul_loop_run_once(loop, 50), 0);
	assert_true(real_ms() - t0 >= 40);
	/* and the fd can be registered again */
	assert_int_equal(ul_io_start(loop, &hot.io, EPOLLIN), 0);
	pio_send(&hot);
	assert_int_equal(ul_loop_run_once(loop, 2000), 1);
	assert_int_equal(hot.cbs, 1);
	pio_close(loop, &hot);
	ul_loop_destroy(loop);
}

/* ul_loop_turn_now(): inside a turn, the clock as the turn began (the
 * callbacks may see it advance meanwhile); each turn reads it afresh, in
 * ul_loop_run_once() and ul_loop_spin_once() alike; outside, the clock. */
static struct ul_loop *tn_loop;
static uint64_t tn_seen[2];
static void tn_work(struct ul_work *w)
{
	(void)w;
	tn_seen[0] = ul_loop_turn_now(tn_loop);
	fake_now += 100;   /* time passes inside the turn */
	tn_seen[1] = ul_loop_turn_now(tn_loop);
}

static void test_turn_now_is_read_per_turn(void **state)
{
	struct ul_work w = { .fn = tn_work };
	(void)state;

	tn_loop = ul_loop_create(fake_clock, NULL);
	assert_non_null(tn_loop);
	fake_now = 1000;
	assert_int_equal(ul_loop_turn_now(tn_loop), 1000);
	ul_loop_post(tn_loop, &w);
	ul_loop_run_once(tn_loop, 0);
	assert_int_equal(tn_seen[0], 1000);
	assert_int_equal(tn_seen[1], 1000);
	assert_int_equal(ul_loop_turn_now(tn_loop), 1100);   /* outside: live */
	fake_now = 5000;   /* a stale cache would still say 1000 */
	ul_loop_post(tn_loop, &w);
	ul_loop_run_once(tn_loop, 0);
	assert_int_equal(tn_seen[0], 5000);
	fake_now = 9000;
	ul_loop_post(tn_loop, &w);
	ul_loop_spin_once(tn_loop);
	assert_int_equal(tn_seen[0], 9000);
	assert_int_equal(tn_seen[1], 9000);
	ul_loop_destroy(tn_loop);
}

/* A timer that re-arms itself due now from its callback (socklnd's rx
 * budget yield does) runs once per turn: the fds are served in between. */
static struct ul_loop *rearm_loop;
static int rearm_runs;
static void rearm_cb(struct ul_timer *t)
{
	rearm_runs++;
	assert_int_equal(ul_timer_start(rearm_loop, t, 0), 0);
}

static void test_self_rearming_timer_yields_to_fds(void **state)
{
	(void)state;
	struct ul_loop *loop = ul_loop_create(fake_clock, NULL);
	struct ul_timer t;
	struct pio p;

	fake_now = 1000000;
	rearm_loop = loop;
	rearm_runs = 0;
	pio_open(loop, &p, false);
	ul_timer_init(&t, rearm_cb);
	assert_int_equal(ul_timer_start(loop, &t, 0), 0);
	pio_send(&p);
	ul_loop_run_once(loop, 0);
	assert_int_equal(rearm_runs, 1);
	assert_int_equal(p.cbs, 1);
	for (int i = 0; i < 3; i++)
		ul_loop_spin_once(loop);
	assert_int_equal(rearm_runs, 4);
	ul_timer_stop(loop, &t);
	pio_close(loop, &p);
	ul_loop_destroy(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_fire_in_deadline_order),
		cmocka_unit_test(test_turn_now_is_read_per_turn),
		cmocka_unit_test(test_posted_work_runs_once),
		cmocka_unit_test(test_fd_readiness),
		cmocka_unit_test(test_stopped_io_gets_no_event_from_the_same_batch),
		cmocka_unit_test(test_spin_polls_the_hot_io_directly),
		cmocka_unit_test(test_spin_serves_other_fds_within_16_calls),
		cmocka_unit_test(test_spin_runs_due_timers_on_hot_turns),
		cmocka_unit_test(test_spin_leaves_cold_ios_to_epoll),
		cmocka_unit_test(test_spin_parks_the_hot_io),
		cmocka_unit_test(test_parked_io_goes_back_to_epoll),
		cmocka_unit_test(test_stop_a_parked_io),
		cmocka_unit_test(test_self_rearming_timer_yields_to_fds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
