/* SPDX-License-Identifier: MIT */
/*
 * ul_lock.h - a futex lock and its condition, for the hot locks (the core
 * instance, socklnd's net, the event loop). Each is taken several times per
 * message; glibc's pthread mutex lock + unlock cost ~50 instructions where
 * this fast path is a compare-exchange and an exchange.
 *
 * The lock is a uint32_t, zero-initialised (free); no destroy. 0 free, 1
 * held, 2 held and maybe slept on (ul_lock.c). Not recursive, as the
 * default pthread mutex it replaces. The condition is another uint32_t,
 * zero-initialised, used with one lock.
 */
#ifndef ULNET_UL_LOCK_H
#define ULNET_UL_LOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Under ThreadSanitizer the lock is annotated as a mutex, so TSan checks
 * lock order and reports races in its terms (it sees the atomics anyway). */
#if defined(__SANITIZE_THREAD__)
#define UL_LOCK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UL_LOCK_TSAN 1
#endif
#endif
#ifdef UL_LOCK_TSAN
#include <sanitizer/tsan_interface.h>
#else
#define __tsan_mutex_pre_lock(m, f) ((void)0)
#define __tsan_mutex_post_lock(m, f, r) ((void)0)
#define __tsan_mutex_pre_unlock(m, f) ((void)0)
#define __tsan_mutex_post_unlock(m, f) ((void)0)
#endif

void ul_lock_slow(uint32_t *lock);
void ul_lock_wake(uint32_t *lock);

static inline void ul_lock(uint32_t *lock)
{
	uint32_t c = 0;

	__tsan_mutex_pre_lock(lock, 0);
	if (__builtin_expect(!__atomic_compare_exchange_n(lock, &c, 1, false, __ATOMIC_ACQUIRE,
							  __ATOMIC_RELAXED), 0))
		ul_lock_slow(lock);
	__tsan_mutex_post_lock(lock, 0, 0);
}

static inline void ul_unlock(uint32_t *lock)
{
	__tsan_mutex_pre_unlock(lock, 0);
	if (__builtin_expect(__atomic_exchange_n(lock, 0, __ATOMIC_RELEASE) == 2, 0))
		ul_lock_wake(lock);
	__tsan_mutex_post_unlock(lock, 0);
}

/* pthread_cond_wait()/timedwait() of `cond` with `lock` held: sleep until a
 * broadcast or, with `abs_mono` (CLOCK_MONOTONIC, absolute), a timeout
 * (-ETIMEDOUT, else 0). Spurious wakeups happen: callers loop on their
 * predicate. */
int ul_cond_wait(uint32_t *cond, uint32_t *lock, const struct timespec *abs_mono);
void ul_cond_broadcast(uint32_t *cond);

#endif
