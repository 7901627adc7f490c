/* SPDX-License-Identifier: MIT */
/*
 * lock.c - the slow paths of the instance lock and its condition (core.h):
 * futex waits and wakes. The uncontended lock and unlock are inline.
 *
 * The lock word is 0 (free), 1 (held) or 2 (held, and a thread may sleep on
 * it): the classic three-state futex mutex (U. Drepper, "Futexes Are
 * Tricky", mutex 3). The condition is a sequence number: a waiter reads it
 * under the lock, unlocks and sleeps while it is unchanged; a broadcast
 * bumps it and wakes every sleeper. Waiters recheck their predicate, so a
 * spurious wakeup costs a loop turn, never correctness.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"

static long lnet_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts,
		       uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, val3);
}

void lnet_mutex_lock_slow(uint32_t *word)
{
	uint32_t c = __atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE);

	/* 2 from now on: we (or whoever wins) may leave sleepers behind, so
	 * the unlock must wake one */
	while (c != 0) {
		lnet_futex(word, FUTEX_WAIT_PRIVATE, 2, NULL, 0);
		c = __atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE);
	}
}

void lnet_mutex_wake(uint32_t *word)
{
	lnet_futex(word, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
}

int lnet_cond_wait_locked(ulnet_t *ln, const struct timespec *abs_mono)
{
	uint32_t seq = __atomic_load_n(&ln->ln_cond_seq, __ATOMIC_RELAXED);
	long rc;

	lnet_unlock(ln);
	if (abs_mono)
		/* absolute, CLOCK_MONOTONIC (no FUTEX_CLOCK_REALTIME) */
		rc = lnet_futex(&ln->ln_cond_seq, FUTEX_WAIT_BITSET_PRIVATE, seq, abs_mono,
				FUTEX_BITSET_MATCH_ANY);
	else
		rc = lnet_futex(&ln->ln_cond_seq, FUTEX_WAIT_PRIVATE, seq, NULL, 0);
	rc = rc < 0 && errno == ETIMEDOUT ? -ETIMEDOUT : 0;
	lnet_lock(ln);
	return (int)rc;
}

void lnet_cond_broadcast(ulnet_t *ln)
{
	__atomic_fetch_add(&ln->ln_cond_seq, 1, __ATOMIC_RELEASE);
	lnet_futex(&ln->ln_cond_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, 0);
}
