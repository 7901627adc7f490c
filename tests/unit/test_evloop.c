/* SPDX-License-Identifier: MIT */
/* test_evloop.c - the event loop: timers in order, posted work, fd readiness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_fire_in_deadline_order),
		cmocka_unit_test(test_posted_work_runs_once),
		cmocka_unit_test(test_fd_readiness),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
