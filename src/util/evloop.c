/* SPDX-License-Identifier: MIT */
/* evloop.c - epoll loop with a timer heap and a posted-work queue. */
#include "util/evloop.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util/ul_lock.h"
#include "util/ul_sys.h"

#define UL_LOOP_MAX_EVENTS 64
#define UL_LOOP_MAX_HOT 8
/* a hot io that got nothing for this many polls in a row leaves the set */
#define UL_LOOP_HOT_IDLE 4096
/* busy turns between two full epoll turns (a power of two) */
#define UL_LOOP_EPOLL_EVERY 16
/* ul_loop_spin_once(): a caller back within this long of the last full
 * turn is spinning, and may poll the hot ios alone */
#define UL_LOOP_SPIN_FULL_NS 20000ULL
/* ul_loop_spin_once(): turns in a row without a blocking turn before hot
 * ios are parked (a caller that mixes spins with blocking waits would
 * otherwise pay two epoll_ctl() calls per message) */
#define UL_LOOP_PARK_STREAK 64
/* polls with input since an io became hot before it is parked: with more
 * busy ios than hot slots, an io evicted soon after it came in is never
 * parked, so the churn costs no epoll_ctl() pair per eviction */
#define UL_LOOP_PARK_GETS 8

struct ul_loop {
	int epfd;
	int wakefd;
	ul_clock_fn clock;
	void *clock_arg;
	uint32_t lock;              /* timers and the work queue: ul_lock() */
	struct ul_timer **heap;
	int nheap, capheap;
	struct ul_work *work_head, *work_tail;
	/* 1 while ul_loop_run_once() may block in epoll_wait (set before the
	 * timeout is computed under `lock`): only then does queuing work or
	 * arming a timer need to write the eventfd. */
	atomic_int sleeping;
	/* earliest timer deadline (UINT64_MAX: none), written under `lock`,
	 * read without it by run_ready() to skip the locks on a quiet turn */
	uint64_t next_due;
	uint64_t timer_seq;         /* timers armed so far (under `lock`) */
	bool has_work;              /* work_head != NULL, same rules */
	/* busy-poll (loop thread only): ios polled directly, see ul_loop_spin_once */
	bool busy;
	unsigned busy_turn;
	uint64_t last_full;         /* loop clock at ul_loop_spin_once()'s last full turn */
	uint64_t turn_now;          /* loop clock read as the current turn began (loop thread) */
	unsigned spin_streak;       /* ul_loop_spin_once() calls since a blocking turn */
	int nhot;
	int nparked;                /* hot ios out of epoll */
	struct ul_io *hot[UL_LOOP_MAX_HOT];
	/* the events of the turn being dispatched (loop thread only): a
	 * callback that stops an io, and may then free it, has that io's
	 * events still to come in this batch dropped by ul_io_stop() */
	struct epoll_event *turn_evs;
	int turn_next, turn_n;
};

/* data.ptr of a dispatched batch's event whose io was stopped by an
 * earlier callback of the same batch (NULL is the wakeup eventfd) */
static char ul_io_gone;

/* The loop this thread is running (callbacks included), if any: work
 * queued from inside the loop needs no wakeup. */
static _Thread_local struct ul_loop *ul_cur_loop;

uint64_t ul_clock_monotonic(void *unused)
{
	struct timespec ts;
	(void)unused;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct ul_loop *ul_loop_create(ul_clock_fn clock, void *clock_arg)
{
	struct ul_loop *loop = calloc(1, sizeof(*loop));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!loop)
		return NULL;
	loop->clock = clock ? clock : ul_clock_monotonic;
	loop->clock_arg = clock_arg;
	loop->next_due = UINT64_MAX;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	loop->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop->epfd < 0 || loop->wakefd < 0)
		goto fail;
	ev.data.ptr = NULL; /* NULL marks the wakeup fd */
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wakefd, &ev) < 0)
		goto fail;
	return loop;
fail:
	{
		int e = errno;
		ul_loop_destroy(loop);
		errno = e;
	}
	return NULL;
}

void ul_loop_destroy(struct ul_loop *loop)
{
	if (!loop)
		return;
	if (loop->epfd >= 0)
		close(loop->epfd);
	if (loop->wakefd >= 0)
		close(loop->wakefd);
	free(loop->heap);
	free(loop);
}

uint64_t ul_loop_now(const struct ul_loop *loop)
{
	return loop->clock(loop->clock_arg);
}

uint64_t ul_loop_turn_now(const struct ul_loop *loop)
{
	return ul_cur_loop == loop ? loop->turn_now : loop->clock(loop->clock_arg);
}

bool ul_loop_in_other_turn(const struct ul_loop *loop)
{
	return ul_cur_loop && ul_cur_loop != loop;
}

bool ul_loop_in_turn(const struct ul_loop *loop)
{
	return ul_cur_loop == loop;
}

void ul_loop_wakeup(struct ul_loop *loop)
{
	uint64_t one = 1;
	ssize_t rc;

	if (ul_cur_loop == loop)
		return; /* we are the loop: it looks again before it blocks */
	rc = write(loop->wakefd, &one, sizeof(one));
	(void)rc; /* EAGAIN means a wakeup is already pending */
}

/* After queuing under loop->lock: wake the loop only if it may be blocked.
 * The loop sets `sleeping` before it takes the lock to compute its
 * timeout, so either it sees what we queued or we see `sleeping`. */
static void ul_loop_kick(struct ul_loop *loop)
{
	if (ul_cur_loop == loop || !atomic_load(&loop->sleeping))
		return;
	ul_loop_wakeup(loop);
}

void ul_loop_post(struct ul_loop *loop, struct ul_work *w)
{
	ul_lock(&loop->lock);
	if (!w->queued) {
		w->queued = true;
		w->next = NULL;
		if (loop->work_tail)
			loop->work_tail->next = w;
		else
			loop->work_head = w;
		loop->work_tail = w;
		__atomic_store_n(&loop->has_work, true, __ATOMIC_RELAXED);
	}
	ul_unlock(&loop->lock);
	ul_loop_kick(loop);
}

void ul_io_init(struct ul_io *io, int fd, void (*cb)(struct ul_io *, uint32_t))
{
	io->fd = fd;
	io->cb = cb;
	io->events = 0;
	io->active = false;
	io->poll = NULL;
	io->hot = false;
	io->parked = false;
	io->cold = false;
	io->hot_idle = 0;
	io->hot_gets = 0;
}

/* A hot io out of epoll: see ul_loop_spin_once() in evloop.h. */
static void io_park(struct ul_loop *loop, struct ul_io *io)
{
	if (io->parked || !io->active)
		return;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_DEL, io->fd, NULL) == 0) {
		io->parked = true;
		loop->nparked++;
	}
}

/* Back into epoll (edge-triggered ios report what is ready now); false if
 * epoll refused it, which leaves it parked and polled. */
static bool io_unpark(struct ul_loop *loop, struct ul_io *io)
{
	struct epoll_event ev = { .events = io->events, .data.ptr = io };

	if (!io->parked)
		return true;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, io->fd, &ev) < 0)
		return false;
	io->parked = false;
	loop->nparked--;
	return true;
}

static void hot_unlink(struct ul_loop *loop, struct ul_io *io)
{
	for (int i = 0; i < loop->nhot; i++) {
		if (loop->hot[i] == io) {
			loop->hot[i] = loop->hot[--loop->nhot];
			break;
		}
	}
	io->hot = false;
}

/* Out of the hot set and back to epoll; false (still hot) if epoll
 * refused it back: the loop keeps polling it rather than lose it. */
static bool hot_remove(struct ul_loop *loop, struct ul_io *io)
{
	if (!io_unpark(loop, io))
		return false;
	hot_unlink(loop, io);
	return true;
}

/* EPOLLIN on an io that can be polled: poll it directly on the next turns */
static void hot_add(struct ul_loop *loop, struct ul_io *io)
{
	io->hot_idle = 0;
	if (io->hot || io->cold)
		return;
	io->hot_gets = 0;
	if (loop->nhot == UL_LOOP_MAX_HOT) {
		int worst = 0;

		for (int i = 1; i < loop->nhot; i++)
			if (loop->hot[i]->hot_idle > loop->hot[worst]->hot_idle)
				worst = i;
		if (!hot_remove(loop, loop->hot[worst]))
			return;   /* io stays with epoll */
	}
	loop->hot[loop->nhot++] = io;
	io->hot = true;
}

int ul_io_start(struct ul_loop *loop, struct ul_io *io, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };
	int op = io->active ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;

	if (io->active && io->events == events)
		return 0;
	if (io->parked) {   /* io_unpark() registers these */
		io->events = events;
		return 0;
	}
	/* set before the io is in epoll: another thread may start an io
	 * while the loop runs, and the loop drops events of an inactive io
	 * (an edge lost for good) */
	io->events = events;
	io->active = true;
	if (epoll_ctl(loop->epfd, op, io->fd, &ev) < 0) {
		int err = errno;

		io->active = op == EPOLL_CTL_MOD;
		return -err;
	}
	return 0;
}

void ul_io_stop(struct ul_loop *loop, struct ul_io *io)
{
	bool in_epoll = !io->parked;

	if (io->parked) {
		io->parked = false;
		loop->nparked--;
	}
	if (io->hot)
		hot_unlink(loop, io);
	/* its owner may free it once this returns: an event of this io
	 * later in the batch being dispatched must not reach it */
	if (ul_cur_loop == loop)
		for (int i = loop->turn_next; i < loop->turn_n; i++)
			if (loop->turn_evs[i].data.ptr == io)
				loop->turn_evs[i].data.ptr = &ul_io_gone;
	if (!io->active)
		return;
	if (in_epoll)
		epoll_ctl(loop->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->active = false;
	io->events = 0;
}

/* --- timer min-heap (under loop->lock) --- */

static void heap_note(struct ul_loop *loop)
{
	__atomic_store_n(&loop->next_due, loop->nheap ? loop->heap[0]->deadline_ns : UINT64_MAX,
			 __ATOMIC_RELAXED);
}

/* heap_idx is read without the loop's lock by ul_timer_armed() (a caller
 * that serializes its own starts, under its lock, peeks at its timer):
 * written with a relaxed atomic store. */
static inline void timer_set_idx(struct ul_timer *t, int idx)
{
	__atomic_store_n(&t->heap_idx, idx, __ATOMIC_RELAXED);
}

static void heap_swap(struct ul_loop *loop, int a, int b)
{
	struct ul_timer *t = loop->heap[a];
	loop->heap[a] = loop->heap[b];
	loop->heap[b] = t;
	timer_set_idx(loop->heap[a], a);
	timer_set_idx(loop->heap[b], b);
}

static void heap_up(struct ul_loop *loop, int i)
{
	while (i > 0) {
		int p = (i - 1) / 2;
		if (loop->heap[p]->deadline_ns <= loop->heap[i]->deadline_ns)
			break;
		heap_swap(loop, i, p);
		i = p;
	}
}

static void heap_down(struct ul_loop *loop, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < loop->nheap && loop->heap[l]->deadline_ns < loop->heap[m]->deadline_ns)
			m = l;
		if (r < loop->nheap && loop->heap[r]->deadline_ns < loop->heap[m]->deadline_ns)
			m = r;
		if (m == i)
			break;
		heap_swap(loop, i, m);
		i = m;
	}
}

static void heap_remove(struct ul_loop *loop, struct ul_timer *t)
{
	int i = t->heap_idx, last = loop->nheap - 1;

	if (i < 0)
		return;
	if (i != last) {
		heap_swap(loop, i, last);
		loop->nheap--;
		heap_down(loop, i);
		heap_up(loop, i);
	} else {
		loop->nheap--;
	}
	timer_set_idx(t, -1);
}

void ul_timer_init(struct ul_timer *t, void (*cb)(struct ul_timer *))
{
	t->cb = cb;
	t->deadline_ns = 0;
	timer_set_idx(t, -1);
}

bool ul_timer_armed(const struct ul_timer *t)
{
	return __atomic_load_n(&t->heap_idx, __ATOMIC_RELAXED) >= 0;
}

int ul_timer_start(struct ul_loop *loop, struct ul_timer *t, uint64_t deadline_ns)
{
	ul_lock(&loop->lock);
	heap_remove(loop, t);
	if (loop->nheap == loop->capheap) {
		int cap = loop->capheap ? loop->capheap * 2 : 64;
		struct ul_timer **h = realloc(loop->heap, (size_t)cap * sizeof(*h));
		if (!h) {
			ul_unlock(&loop->lock);
			return -ENOMEM;
		}
		loop->heap = h;
		loop->capheap = cap;
	}
	t->deadline_ns = deadline_ns;
	t->armed_seq = ++loop->timer_seq;
	timer_set_idx(t, loop->nheap);
	loop->heap[loop->nheap++] = t;
	heap_up(loop, t->heap_idx);
	heap_note(loop);
	ul_unlock(&loop->lock);
	ul_loop_kick(loop);
	return 0;
}

void ul_timer_stop(struct ul_loop *loop, struct ul_timer *t)
{
	ul_lock(&loop->lock);
	heap_remove(loop, t);
	heap_note(loop);
	ul_unlock(&loop->lock);
}

/* Run posted work and timers expired at `now`; returns how many ran. */
static int run_ready_at(struct ul_loop *loop, uint64_t now)
{
	uint64_t limit = UINT64_MAX;   /* timer_seq when the timer pass began */
	int n = 0;

	/* unlocked peek: anything queued by another thread after this is
	 * seen on the next turn (it sets or finds `sleeping`) */
	if (!__atomic_load_n(&loop->has_work, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&loop->next_due, __ATOMIC_RELAXED) > now)
		return 0;
	/* only work posted before this pass: work that posts itself again (a
	 * selftest unit whose RPCs fail at once, looping forever) runs again
	 * next turn, after the fds and timers, instead of holding the loop
	 * here for good; the next turn does not wait (work_head is set) */
	ul_lock(&loop->lock);
	struct ul_work *batch = loop->work_head;
	loop->work_head = loop->work_tail = NULL;
	__atomic_store_n(&loop->has_work, false, __ATOMIC_RELAXED);
	ul_unlock(&loop->lock);
	while (batch) {
		struct ul_work *w = batch;

		/* still queued: nobody else touches w->next meanwhile */
		batch = w->next;
		ul_lock(&loop->lock);
		w->queued = false;
		ul_unlock(&loop->lock);
		w->fn(w);
		n++;
	}
	/* only timers armed before this pass: one that re-arms itself due now
	 * (an LND's "after this batch" kick) runs again next turn, after the
	 * fds, instead of looping here for as long as it keeps re-arming */
	for (;;) {
		struct ul_timer *t = NULL;
		ul_lock(&loop->lock);
		if (limit == UINT64_MAX)
			limit = loop->timer_seq;
		if (loop->nheap > 0 && loop->heap[0]->deadline_ns <= now &&
		    loop->heap[0]->armed_seq <= limit) {
			t = loop->heap[0];
			heap_remove(loop, t);
			heap_note(loop);
		}
		ul_unlock(&loop->lock);
		if (!t)
			break;
		t->cb(t);
		n++;
	}
	return n;
}

static int poll_hot(struct ul_loop *loop);

/* Before a turn that may block: every parked io back into epoll, which
 * alone can wake the wait. */
static void unpark_all(struct ul_loop *loop)
{
	loop->spin_streak = 0;
	for (int i = 0; i < loop->nhot && loop->nparked; i++)
		(void)io_unpark(loop, loop->hot[i]);
}

/* One turn; `now` is the clock if the caller has just read it and will not
 * block (timeout_ms 0), else UINT64_MAX: read once after the wait. */
static int loop_turn(struct ul_loop *loop, int timeout_ms, uint64_t now)
{
	struct epoll_event evs[UL_LOOP_MAX_EVENTS];
	struct ul_loop *prev = ul_cur_loop;
	struct epoll_event *outer_evs;
	int n, i, ran, outer_next, outer_n;

	if (timeout_ms != 0) {
		unpark_all(loop);
		/* one that epoll refused back is polled, every 1 ms at worst */
		if (loop->nparked && (timeout_ms < 0 || timeout_ms > 1))
			timeout_ms = 1;
		now = ul_loop_now(loop);

		atomic_store(&loop->sleeping, 1);
		ul_lock(&loop->lock);
		if (loop->work_head) {
			timeout_ms = 0;
		} else if (loop->nheap > 0) {
			uint64_t d = loop->heap[0]->deadline_ns;
			int64_t ms = d > now ? (int64_t)((d - now + 999999) / 1000000) : 0;
			if (timeout_ms < 0 || ms < timeout_ms)
				timeout_ms = (int)(ms > 60000 ? 60000 : ms);
		}
		ul_unlock(&loop->lock);
	}

	if (timeout_ms == 0)   /* raw: no cancellation-point bookkeeping per spin */
		n = ul_sys_epoll_wait(loop->epfd, evs, UL_LOOP_MAX_EVENTS, 0);
	else
		n = epoll_wait(loop->epfd, evs, UL_LOOP_MAX_EVENTS, timeout_ms);
	atomic_store_explicit(&loop->sleeping, 0, memory_order_relaxed);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	/* one clock read serves the callbacks (ul_loop_turn_now()) and the
	 * timers; timers that fall due during the callbacks run next turn,
	 * whose timeout is then 0 */
	if (timeout_ms != 0 || now == UINT64_MAX)
		now = ul_loop_now(loop);
	loop->turn_now = now;
	ul_cur_loop = loop;
	ran = 0;
	/* a callback may turn the loop itself: its batch is its own */
	outer_evs = loop->turn_evs;
	outer_next = loop->turn_next;
	outer_n = loop->turn_n;
	loop->turn_evs = evs;
	loop->turn_n = n;
	for (i = 0; i < n; i++) {
		struct ul_io *io = evs[i].data.ptr;

		loop->turn_next = i + 1;
		if (io == (void *)&ul_io_gone)
			continue;
		if (!io) {
			uint64_t v;
			ssize_t rc = read(loop->wakefd, &v, sizeof(v));
			(void)rc;
			continue;
		}
		if (io->active) {
			if (loop->busy && io->poll && (evs[i].events & EPOLLIN))
				hot_add(loop, io);
			io->cb(io, evs[i].events);
			ran++;
		}
	}
	loop->turn_evs = outer_evs;
	loop->turn_next = outer_next;
	loop->turn_n = outer_n;
	if (loop->nparked)   /* epoll does not see them: a full turn polls them too */
		ran += poll_hot(loop);
	ran += run_ready_at(loop, now);
	ul_cur_loop = prev;
	return ran;
}

int ul_loop_run_once(struct ul_loop *loop, int timeout_ms)
{
	return loop_turn(loop, timeout_ms, UINT64_MAX);
}

/* Poll each hot io once; returns how many got something. */
static int poll_hot(struct ul_loop *loop)
{
	int ran = 0;

	for (int i = 0; i < loop->nhot;) {
		struct ul_io *io = loop->hot[i];
		bool got;

		if (io->cold && hot_remove(loop, io))   /* epoll serves it until it warms up */
			continue;
		got = io->poll(io);

		if (got)
			ran++;
		/* a poll that closed an io changed the set: look at slot i again */
		if (i >= loop->nhot || loop->hot[i] != io)
			continue;
		if (got) {
			io->hot_idle = 0;
			if (++io->hot_gets >= UL_LOOP_PARK_GETS &&
			    loop->spin_streak >= UL_LOOP_PARK_STREAK && !io->parked && !io->cold)
				io_park(loop, io);
		} else if (++io->hot_idle > UL_LOOP_HOT_IDLE && hot_remove(loop, io)) {
			continue;
		}
		i++;
	}
	return ran;
}

int ul_loop_spin_once(struct ul_loop *loop)
{
	struct ul_loop *prev;
	uint64_t now = ul_loop_now(loop);
	int ran;

	loop->busy = true;
	if (loop->spin_streak < UL_LOOP_PARK_STREAK)
		loop->spin_streak++;
	/* a full turn when nothing is hot, every 16th turn, and for a caller
	 * that was away: whoever polls now and then must not find the other
	 * fds waiting behind the hot set */
	if (loop->nhot == 0 || now - loop->last_full >= UL_LOOP_SPIN_FULL_NS ||
	    (++loop->busy_turn & (UL_LOOP_EPOLL_EVERY - 1)) == 0) {
		loop->last_full = now;
		return loop_turn(loop, 0, now);
	}
	prev = ul_cur_loop;
	loop->turn_now = now;
	ul_cur_loop = loop;
	ran = poll_hot(loop);
	/* we have the clock: work and due timers (the LND's "right after
	 * this batch" kicks among them) run now, not on the 16th turn */
	ran += run_ready_at(loop, now);
	ul_cur_loop = prev;
	return ran;
}
