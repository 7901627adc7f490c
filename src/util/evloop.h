/* SPDX-License-Identifier: MIT */
/*
 * evloop.h - a small epoll event loop: fd watchers, one-shot timers, and
 * cross-thread work posting. One loop per instance (or per LND thread).
 *
 * Thread rules: ul_loop_run() runs on one thread at a time. ul_io_*,
 * ul_timer_* and ul_loop_post() may be called from any thread; callbacks run
 * on the loop's thread with no loop lock held. Watchers and timers are
 * embedded in their owners' structs (no allocation).
 */
#ifndef ULNET_UTIL_EVLOOP_H
#define ULNET_UTIL_EVLOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

struct ul_loop;

struct ul_io {
	int fd;
	uint32_t events;                         /* EPOLLIN | EPOLLOUT ... */
	void (*cb)(struct ul_io *io, uint32_t revents);
	/* optional, busy-poll loops only: read what the fd has without
	 * waiting; true if it got anything (see ul_loop_spin_once) */
	bool (*poll)(struct ul_io *io);
	uint32_t hot_idle;                       /* polls in a row that got nothing */
	uint32_t hot_gets;                       /* polls that got something since it became hot */
	/* set by the owner, on the loop thread: leave this io to epoll for
	 * now (a direct poll would mostly find nothing and, on a socket,
	 * contend for its lock: it waits for EPOLLOUT or a large payload) */
	bool cold;
	bool hot;                                /* in the loop's hot set */
	/* hot and out of epoll (see ul_loop_spin_once): the loop's direct
	 * polls are all that read it until it leaves the hot set */
	bool parked;
	bool active;
};

struct ul_timer {
	uint64_t deadline_ns;                    /* absolute, loop clock */
	void (*cb)(struct ul_timer *t);
	int heap_idx;                            /* -1 when not armed */
	uint64_t armed_seq;                      /* when armed, in the loop's arming order */
};

struct ul_work {
	void (*fn)(struct ul_work *w);
	struct ul_work *next;
	bool queued;
};

typedef uint64_t (*ul_clock_fn)(void *arg);

/* Create a loop reading time from `clock` (NULL: CLOCK_MONOTONIC).
 * Returns NULL with errno set on failure. */
struct ul_loop *ul_loop_create(ul_clock_fn clock, void *clock_arg);
void ul_loop_destroy(struct ul_loop *loop);
uint64_t ul_loop_now(const struct ul_loop *loop);
/* Inside a turn of `loop` (ul_loop_in_turn()): the loop clock as read when
 * the turn began, one read for all its callbacks; elsewhere ul_loop_now().
 * Up to a turn old: for progress and liveness stamps, not deadlines. */
uint64_t ul_loop_turn_now(const struct ul_loop *loop);

/* Wait at most timeout_ms (-1: no limit; bounded by the next timer) and run
 * what is ready. Returns the number of callbacks run, or -errno. */
int ul_loop_run_once(struct ul_loop *loop, int timeout_ms);

/* A never-blocking turn for a caller that spins on it (a busy-polling
 * progress thread, or manual progress with a zero timeout): ios with a
 * `poll` op that had input lately ("hot") are polled directly, one recv()
 * each instead of epoll_wait() + recv(); due timers and posted work run on
 * every turn; a full epoll turn comes every 16th turn, whenever nothing is
 * hot, and whenever the last one is 20 us old or more, so a caller that
 * comes only now and then always gets one. Once the caller has spun 64
 * turns in a row, a hot io that has had input on 8 polls is taken out of epoll
 * ("parked"): each segment that reaches its socket then wakes nobody
 * (with it in epoll, every segment runs epoll's callback on the sender's
 * CPU, some 3% of a loopback round trip on each side, for no reader). It
 * goes back into epoll when it leaves the hot set (idle, marked cold,
 * evicted) and before any turn that may block. Returns how many callbacks
 * and polls did something. */
int ul_loop_spin_once(struct ul_loop *loop);

/* The calling thread is inside a turn of `loop` (one of its callbacks, or
 * code they call): true on the progress thread and, with manual progress,
 * inside ulnet_progress(); false for an application's own calls. */
bool ul_loop_in_turn(const struct ul_loop *loop);
/* Inside a turn of a loop other than `loop` (another loop's thread). */
bool ul_loop_in_other_turn(const struct ul_loop *loop);
/* Make a concurrent ul_loop_run_once() return soon. */
void ul_loop_wakeup(struct ul_loop *loop);

/* Queue `w` to run on the loop thread (once, even if posted twice before it
 * runs). */
void ul_loop_post(struct ul_loop *loop, struct ul_work *w);

void ul_io_init(struct ul_io *io, int fd, void (*cb)(struct ul_io *, uint32_t));
/* Start or change watching. Returns 0 or -errno. */
int ul_io_start(struct ul_loop *loop, struct ul_io *io, uint32_t events);
void ul_io_stop(struct ul_loop *loop, struct ul_io *io);

void ul_timer_init(struct ul_timer *t, void (*cb)(struct ul_timer *));
/* Arm (or re-arm) at an absolute time. Returns 0 or -ENOMEM. */
int ul_timer_start(struct ul_loop *loop, struct ul_timer *t, uint64_t deadline_ns);
void ul_timer_stop(struct ul_loop *loop, struct ul_timer *t);
bool ul_timer_armed(const struct ul_timer *t);

/* Monotonic clock in ns (the default clock). */
uint64_t ul_clock_monotonic(void *unused);

#endif
