/* SPDX-License-Identifier: MIT */
/*
 * ul_sys.h - recv(), send() and epoll_wait() as bare system calls.
 *
 * In a threaded process glibc wraps each of them in two calls that
 * make it a cancellation point; a loop spinning on recv() pays them on
 * every turn, and a small round trip on each message (1-3% of one over
 * loopback). ulnet's threads are never cancelled, so the data path calls
 * the kernel directly. Same results as the libc calls: -1 and errno.
 */
#ifndef ULNET_UTIL_UL_SYS_H
#define ULNET_UTIL_UL_SYS_H

#include <stddef.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "util/ul_lock.h"   /* UL_LOCK_TSAN */

#ifdef UL_LOCK_TSAN
/* ThreadSanitizer models the happens-before of data passed through a
 * socket only in the libc calls it intercepts. */
#include <sys/socket.h>
#define ul_sys_recv recv
#define ul_sys_send send
#define ul_sys_epoll_wait epoll_wait
#else
static inline ssize_t ul_sys_recv(int fd, void *buf, size_t len, int flags)
{
	return (ssize_t)syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

static inline ssize_t ul_sys_send(int fd, const void *buf, size_t len, int flags)
{
	return (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

static inline int ul_sys_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
#ifdef SYS_epoll_wait
	return (int)syscall(SYS_epoll_wait, epfd, evs, max, timeout_ms);
#else   /* arm64 and newer ports have only the pwait form */
	return (int)syscall(SYS_epoll_pwait, epfd, evs, max, timeout_ms, NULL, 0);
#endif
}
#endif

#endif
