/* SPDX-License-Identifier: MIT */
/*
 * ul_lock.c - the slow paths of the futex lock and its condition
 * (ul_lock.h): futex waits and wakes. The uncontended lock and unlock are
 * inline.
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

#include "util/ul_lock.h"

static long ul_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts,
		     uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, val3);
}

/* How many times a contended ul_lock() looks again before it sleeps, each
 * look after a pause (~40 cycles here: ~1.5 us in all). The hot locks are
 * held for well under a microsecond, and a futex sleep and its wake cost
 * several (more in a VM, where the wake is an IPI). Without it, an
 * application thread calling ulnet_put() while the progress thread
 * completed its earlier PUTs slept on the lock again and again: 64 B PUTs
 * from a thread, 1.19 M/s on average over 8 runs (0.79-2.2) against
 * 1.62 M/s (1.30-2.10) with the spin. */
#define UL_LOCK_SPIN 100

void ul_lock_slow(uint32_t *lock)
{
	uint32_t c;

	for (int i = 0; i < UL_LOCK_SPIN; i++) {
		c = __atomic_load_n(lock, __ATOMIC_RELAXED);
		if (c == 0 && __atomic_compare_exchange_n(lock, &c, 1, false, __ATOMIC_ACQUIRE,
							  __ATOMIC_RELAXED))
			return;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ __volatile__("yield");
#endif
	}
	c = __atomic_exchange_n(lock, 2, __ATOMIC_ACQUIRE);

	/* 2 from now on: we (or whoever wins) may leave sleepers behind, so
	 * the unlock must wake one */
	while (c != 0) {
		ul_futex(lock, FUTEX_WAIT_PRIVATE, 2, NULL, 0);
		c = __atomic_exchange_n(lock, 2, __ATOMIC_ACQUIRE);
	}
}

void ul_lock_wake(uint32_t *lock)
{
	ul_futex(lock, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
}

int ul_cond_wait(uint32_t *cond, uint32_t *lock, const struct timespec *abs_mono)
{
	uint32_t seq = __atomic_load_n(cond, __ATOMIC_RELAXED);
	long rc;

	ul_unlock(lock);
	if (abs_mono)
		/* absolute, CLOCK_MONOTONIC (no FUTEX_CLOCK_REALTIME) */
		rc = ul_futex(cond, FUTEX_WAIT_BITSET_PRIVATE, seq, abs_mono,
			      FUTEX_BITSET_MATCH_ANY);
	else
		rc = ul_futex(cond, FUTEX_WAIT_PRIVATE, seq, NULL, 0);
	rc = rc < 0 && errno == ETIMEDOUT ? -ETIMEDOUT : 0;
	ul_lock(lock);
	return (int)rc;
}

void ul_cond_broadcast(uint32_t *cond)
{
	__atomic_fetch_add(cond, 1, __ATOMIC_RELEASE);
	ul_futex(cond, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, 0);
}
