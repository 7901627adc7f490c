/* SPDX-License-Identifier: MIT */
/*
 * test_core_lock.c - the instance lock and its condition (instance.h over util/ul_lock.h):
 * mutual exclusion under contention (the futex slow paths), a contender
 * that spins, then sleeps, on a lock held long, broadcast wakeups, and the
 * timed wait's timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core/core.h"

#define NTHREADS 4
#define NITER 200000

struct shared {
	ulnet_t *ln;
	unsigned long counter;   /* protected by ln_lock only */
	int ready;               /* predicate of the condition */
	int woken;
};

static void *hammer(void *arg)
{
	struct shared *s = arg;

	for (int i = 0; i < NITER; i++) {
		lnet_lock(s->ln);
		/* a non-atomic read-modify-write: lost updates if two threads
		 * were ever inside together */
		unsigned long v = s->counter;

		if ((i & 1023) == 0)
			sched_yield();   /* held across a yield: others must sleep */
		s->counter = v + 1;
		lnet_unlock(s->ln);
	}
	return NULL;
}

static void test_mutual_exclusion(void **state)
{
	struct shared s = { .ln = calloc(1, sizeof(ulnet_t)) };
	pthread_t th[NTHREADS];
	(void)state;

	assert_non_null(s.ln);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, hammer, &s), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(s.counter, (unsigned long)NTHREADS * NITER);
	assert_int_equal(s.ln->ln_lock, 0);   /* left free */
	free(s.ln);
}

static void *waiter(void *arg)
{
	struct shared *s = arg;

	lnet_lock(s->ln);
	while (!s->ready)
		lnet_cond_wait_locked(s->ln, NULL);
	s->woken++;
	lnet_unlock(s->ln);
	return NULL;
}

static void test_broadcast_wakes_all(void **state)
{
	struct shared s = { .ln = calloc(1, sizeof(ulnet_t)) };
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	pthread_t th[NTHREADS];
	(void)state;

	assert_non_null(s.ln);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, waiter, &s), 0);
	nanosleep(&pause, NULL);   /* let them sleep (not required for the test) */
	lnet_lock(s.ln);
	s.ready = 1;
	lnet_cond_broadcast(s.ln);
	lnet_unlock(s.ln);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(s.woken, NTHREADS);
	free(s.ln);
}

static void test_timed_wait_times_out(void **state)
{
	ulnet_t *ln = calloc(1, sizeof(*ln));
	struct timespec now, until;
	uint64_t t0, t1, dl;
	int rc = 0;
	(void)state;

	assert_non_null(ln);
	clock_gettime(CLOCK_MONOTONIC, &now);
	t0 = (uint64_t)now.tv_sec * LNET_NSEC_PER_SEC + (uint64_t)now.tv_nsec;
	dl = t0 + 30 * 1000 * 1000;
	until.tv_sec = (time_t)(dl / LNET_NSEC_PER_SEC);
	until.tv_nsec = (long)(dl % LNET_NSEC_PER_SEC);
	lnet_lock(ln);
	/* nobody broadcasts: only the timeout (or a spurious wakeup) ends it */
	do {
		rc = lnet_cond_wait_locked(ln, &until);
		clock_gettime(CLOCK_MONOTONIC, &now);
		t1 = (uint64_t)now.tv_sec * LNET_NSEC_PER_SEC + (uint64_t)now.tv_nsec;
	} while (rc == 0 && t1 < dl);
	lnet_unlock(ln);
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(t1 >= dl);
	assert_int_equal(ln->ln_lock, 0);
	free(ln);
}

/* A lock held far longer than the bounded spin: the contender stops
 * spinning, marks the lock (2: the unlock must wake someone) and sleeps;
 * the unlock wakes it and it gets the lock. */
struct held {
	uint32_t lock;
	int got;   /* under lock */
};

static void *contender(void *arg)
{
	struct held *h = arg;

	ul_lock(&h->lock);
	h->got = 1;
	ul_unlock(&h->lock);
	return NULL;
}

static void test_contender_sleeps_after_spin(void **state)
{
	struct held h = { 0 };
	struct timespec tick = { 0, 1000 * 1000 };
	pthread_t th;
	int marked = 0;
	(void)state;

	ul_lock(&h.lock);
	assert_int_equal(pthread_create(&th, NULL, contender, &h), 0);
	/* bounded: 2 s for a spin of a few microseconds to give up */
	for (int i = 0; i < 2000 && !marked; i++) {
		nanosleep(&tick, NULL);
		marked = __atomic_load_n(&h.lock, __ATOMIC_ACQUIRE) == 2;
	}
	assert_true(marked);
	assert_int_equal(h.got, 0);   /* still ours */
	ul_unlock(&h.lock);
	pthread_join(th, NULL);
	assert_int_equal(h.got, 1);
	assert_int_equal(h.lock, 0);
}

/* socklnd's shutdown handshake on a bare ul_lock pair (no instance): a
 * timed wait ended by a broadcast well before its deadline. */
struct bare {
	uint32_t lock, cond;
	int done;
};

static void *bare_finisher(void *arg)
{
	struct bare *b = arg;
	struct timespec pause = { 0, 10 * 1000 * 1000 };

	nanosleep(&pause, NULL);
	ul_lock(&b->lock);
	b->done = 1;
	ul_cond_broadcast(&b->cond);
	ul_unlock(&b->lock);
	return NULL;
}

static void test_bare_timed_wait_woken(void **state)
{
	struct bare b = { 0 };
	struct timespec now, until;
	pthread_t th;
	int rc = 0;
	(void)state;

	clock_gettime(CLOCK_MONOTONIC, &now);
	until = now;
	until.tv_sec += 10;   /* far: only the broadcast can end the wait in time */
	assert_int_equal(pthread_create(&th, NULL, bare_finisher, &b), 0);
	ul_lock(&b.lock);
	while (!b.done && rc == 0)
		rc = ul_cond_wait(&b.cond, &b.lock, &until);
	ul_unlock(&b.lock);
	pthread_join(th, NULL);
	assert_int_equal(rc, 0);
	assert_int_equal(b.done, 1);
	assert_int_equal(b.lock, 0);
	assert_true(b.cond >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mutual_exclusion),
		cmocka_unit_test(test_contender_sleeps_after_spin),
		cmocka_unit_test(test_broadcast_wakes_all),
		cmocka_unit_test(test_timed_wait_times_out),
		cmocka_unit_test(test_bare_timed_wait_woken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
