/* SPDX-License-Identifier: MIT */
/*
 * instance.c - ulnet_create/destroy/progress, the per-instance LND registry,
 * logging helpers and the blocking-wait helper.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fault.h"
#include "core/core.h"
#include "core/ni_thread.h"
#include "core/route.h"
#include "core/router.h"
#include "core/udsp.h"

/* Built-in LNDs registered in every instance. */
static const struct ulnet_lnd *const lnet_builtin_lnds[] = {
	&lnet_lolnd,
	&ksocklnd,
#ifdef ULNET_HAVE_O2IB
	&ko2iblnd,
#endif
};

_Noreturn void lnet_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "ulnet: assertion failed: %s (%s:%d)\n", expr, file, line);
	abort();
}

void lnet_log(const ulnet_t *ln, enum ulnet_log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ul_vlog(&ln->ln_log, lvl, fmt, ap);
	va_end(ap);
}

static const char *lnet_net_name(unsigned type)
{
	switch (type) {
	case ULNET_LND_TCP: return "tcp";
	case ULNET_LND_O2IB: return "o2ib";
	case ULNET_LND_LO: return "lo";
	case ULNET_LND_GNI: return "gni";
	case ULNET_LND_GIP: return "gip";
	case ULNET_LND_PTLF: return "ptlf";
	case ULNET_LND_KFI: return "kfi";
	case ULNET_LND_EFA: return "efa";
	case ULNET_LND_BXI3F: return "bxi3f";
	default: return NULL;
	}
}

const char *lnet_nidstr(const ulnet_nid_t *nid, char buf[ULNET_NIDSTR_SIZE])
{
	const char *net = lnet_net_name(nid->type);
	char addr[INET6_ADDRSTRLEN];
	char num[12] = "";

	if (ulnet_nid_is_any(nid)) {
		snprintf(buf, ULNET_NIDSTR_SIZE, "<?>");
		return buf;
	}
	if (nid->num)
		snprintf(num, sizeof(num), "%u", nid->num);
	if (nid->size == 12) {
		if (!inet_ntop(AF_INET6, nid->addr, addr, sizeof(addr)))
			snprintf(addr, sizeof(addr), "?");
	} else if (nid->type == ULNET_LND_TCP || nid->type == ULNET_LND_O2IB ||
		   nid->type == ULNET_LND_GIP || nid->type == ULNET_LND_EFA) {
		snprintf(addr, sizeof(addr), "%u.%u.%u.%u", nid->addr[0], nid->addr[1],
			 nid->addr[2], nid->addr[3]);
	} else {
		snprintf(addr, sizeof(addr), "%u", ulnet_nid_ipv4(nid));
	}
	if (net)
		snprintf(buf, ULNET_NIDSTR_SIZE, "%s@%s%s", addr, net, num);
	else
		snprintf(buf, ULNET_NIDSTR_SIZE, "%s@<%u:%u>", addr, nid->type, nid->num);
	return buf;
}

const char *ulnet_strerror(int err)
{
	const char *s = strerrordesc_np(err < 0 ? -err : err);

	return s ? s : "Unknown error";
}

int ulnet_lnd_register(ulnet_t *ln, const struct ulnet_lnd *lnd)
{
	int rc = 0;

	if (!ln || !lnd || !lnd->startup || !lnd->shutdown || !lnd->send || !lnd->recv ||
	    lnd->type >= 256)
		return -EINVAL;
	lnet_lock(ln);
	if (ln->ln_lnds[lnd->type])
		rc = -EEXIST;
	else
		ln->ln_lnds[lnd->type] = lnd;
	lnet_unlock(ln);
	return rc;
}

#define LNET_PROGRESS_SPIN_NS 50000ULL

/*
 * The progress thread lives in the process's network namespace (its main
 * thread's), whichever thread created the instance: a thread that entered
 * another namespace to add an NI there (ulnetd serving a client in another
 * namespace) must not leave the node's thread there for good, pinning
 * that namespace and making every other NI's dial cross into its own
 * (each NI makes its sockets in its own namespace, sock_netns.c). Without
 * the right to move (no CAP_SYS_ADMIN: then the creator could not have
 * moved either) it stays.
 */
static void lnet_progress_home_netns(ulnet_t *ln)
{
	struct stat mine, home;
	int fd;

	if (stat("/proc/thread-self/ns/net", &mine) < 0 || stat("/proc/self/ns/net", &home) < 0 ||
	    (mine.st_dev == home.st_dev && mine.st_ino == home.st_ino))
		return;
	fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
		lnet_log(ln, ULNET_LOG_WARN,
			 "progress thread: can't move to the process's network namespace: %s",
			 strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* Turn `loop` until *stop: the progress thread's body, and each NI
 * thread's (ni_thread.c). */
void lnet_loop_serve(ulnet_t *ln, struct ul_loop *loop, const int *stop)
{
	/* ULNET_OPT_BUSY_POLL: never sleep in epoll_wait; spin on the loop
	 * (timers still run: run_ready checks them every turn) */
	bool busy = ln->ln_flags & ULNET_OPT_BUSY_POLL;
	uint64_t spin_until = 0;

	lnet_progress_home_netns(ln);
	while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
		/* Adaptive spin: for LNET_PROGRESS_SPIN_NS after the loop last
		 * did something, poll instead of sleeping. A sleeping thread
		 * must be woken by whoever sends to it (an IPI and a context
		 * switch, very slow on a VM whose idle vCPUs halt), which costs
		 * the sender more than the spin costs us. */
		if (busy) {
			ul_loop_spin_once(loop);
			continue;
		}
		uint64_t now = ul_clock_monotonic(NULL);
		int n = ul_loop_run_once(loop, now < spin_until ? 0 : -1);

		if (n > 0)
			spin_until = ul_clock_monotonic(NULL) + LNET_PROGRESS_SPIN_NS;
		else if (n == 0 && now < spin_until)
			/* an idle spin turn: give the CPU to whatever else is
			 * runnable on it (on a loaded machine, the very thread
			 * whose message this spin waits for) */
			sched_yield();
	}
}

static void *lnet_progress_main(void *arg)
{
	ulnet_t *ln = arg;

	lnet_loop_serve(ln, ln->ln_loop, &ln->ln_stop);
	return NULL;
}

/* Wire handles name MDs of this instance only; a random part keeps two
 * instances (or two runs) from accepting each other's handles. */
static uint64_t lnet_make_interface_cookie(ulnet_t *ln)
{
	uint64_t r = 0, c;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint64_t)(uintptr_t)ln * 0x9e3779b97f4a7c15ULL;
	c = lnet_now(ln) ^ (r & 0xffffffff00000000ULL);
	if (c == 0 || c == ~0ULL)
		c = 0x1234567887654321ULL;
	return c;
}

void ulnet_globals_defaults(struct ulnet_globals *g)
{
	memset(g, 0, sizeof(*g));
	g->numa_range = 0;
	g->max_interfaces = 4096;
	g->discovery = 1;
	g->drop_asym_route = 0;
	g->retry_count = 2;
	g->transaction_timeout = 150;
	g->health_sensitivity = 100;
	g->recovery_interval = 1;
	g->router_sensitivity = 100;
	g->response_tracking = 3;
	g->recovery_limit = 0;
	g->max_recovery_ping_interval = 900;
}

int ulnet_create(const struct ulnet_opts *opts, ulnet_t **out)
{
	ulnet_pid_t pid = ULNET_PID_LUSTRE;
	ulnet_t *ln;
	size_t i;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (opts && opts->pid)
		pid = opts->pid;
	if (pid == ULNET_PID_ANY || (pid & ULNET_PID_RESERVED))
		return -EINVAL;

	ln = calloc(1, sizeof(*ln));
	if (!ln)
		return -ENOMEM;
	/* ln_lock and ln_cond_seq: zero (calloc) is free and initial */
	pthread_mutex_init(&ln->ln_api_lock, NULL);
	ln->ln_state = LNET_STATE_RUNNING;
	ln->ln_pid = pid;
	ln->ln_flags = opts ? opts->flags : 0;
	ln->ln_clock = opts && opts->clock ? opts->clock : ul_clock_monotonic;
	ln->ln_clock_arg = opts ? opts->clock_arg : NULL;
	ln->ln_log.fn = opts ? opts->log : NULL;
	ln->ln_log.arg = opts ? opts->log_arg : NULL;
	ln->ln_log.level = opts ? opts->log_level : ULNET_LOG_WARN;
	ln->ln_log.prefix = NULL;
	ul_list_init(&ln->ln_nis);
	ln->ln_ni_gen = 1;   /* the net cache (gen 0) starts stale */
	ul_list_init(&ln->ln_md_active);
	lnet_memreg_init(&ln->ln_memreg);
	ul_list_init(&ln->ln_msg_free);
	ul_list_init(&ln->ln_rspt_list);
	ul_timer_init(&ln->ln_rspt_timer, lnet_rspt_timer_cb);
	lnet_handle_table_init(&ln->ln_handles);
	ulnet_globals_defaults(&ln->ln_g);
	lnet_portals_init(ln);
	lnet_routes_init(ln);
	lnet_udsp_init(ln);
	ln->ln_interface_cookie = lnet_make_interface_cookie(ln);

	ln->ln_loop = ul_loop_create(ln->ln_clock, ln->ln_clock_arg);
	if (!ln->ln_loop) {
		rc = errno ? -errno : -ENOMEM;
		goto out_free;
	}
	rc = lnet_msg_pool_init(ln);
	if (rc)
		goto out_free;
	rc = lnet_peer_tables_init(ln);
	if (rc)
		goto out_free;
	rc = lnet_router_init(ln);
	if (rc)
		goto out_free;
	lnet_fault_init(ln);
	lnet_ni_link_init(ln);
	for (i = 0; i < sizeof(lnet_builtin_lnds) / sizeof(lnet_builtin_lnds[0]); i++) {
		rc = ulnet_lnd_register(ln, lnet_builtin_lnds[i]);
		if (rc)
			goto out_free;
	}
	if (!(ln->ln_flags & ULNET_OPT_NO_LOOPBACK)) {
		rc = lnet_ni_add_locked_lo(ln);
		if (rc)
			goto out_free;
	}
	/* portal 0 is lazy: pushes wait for the re-posted push target */
	ln->ln_portals[ULNET_RESERVED_PORTAL].ptl_options |= LNET_PTL_LAZY;
	rc = lnet_ping_target_setup(ln);
	if (rc)
		goto out_free;
	rc = lnet_push_target_post(ln);
	if (rc)
		goto out_free;

	if (!(ln->ln_flags & ULNET_OPT_MANUAL_PROGRESS)) {
		rc = -pthread_create(&ln->ln_thread, NULL, lnet_progress_main, ln);
		if (rc)
			goto out_free;
		ln->ln_has_thread = true;
	}
	*out = ln;
	return 0;

out_free:
	ulnet_destroy(ln);
	return rc;
}

static void lnet_unlink_all_mds(ulnet_t *ln)
{
	struct ul_list *pos;
	int p;

	lnet_lock(ln);
	for (;;) {
		struct lnet_libmd *md = NULL;

		/* the lock is dropped to run handlers: restart each time */
		ul_list_for_each(pos, &ln->ln_md_active) {
			struct lnet_libmd *m = ul_container_of(pos, struct lnet_libmd, md_list);

			if (!(m->md_flags & LNET_MD_FLAG_ZOMBIE)) {
				md = m;
				break;
			}
		}
		if (!md)
			break;
		lnet_md_unlink_event_locked(ln, md, md->md_rspt_active ? -ESHUTDOWN : 0);
	}
	/* MEs left without an MD */
	for (p = 0; p < ULNET_MAX_PORTALS; p++) {
		struct lnet_portal *ptl = &ln->ln_portals[p];
		struct lnet_me *me;

		while ((me = ul_list_first(&ptl->ptl_me_all, struct lnet_me, me_ptl_link)))
			lnet_me_unlink_locked(ln, me);
	}
	/* MDs still referenced cannot exist once every NI is down; free any
	 * leftover rather than leak it */
	while (!ul_list_empty(&ln->ln_md_active)) {
		struct lnet_libmd *md = ul_list_first(&ln->ln_md_active, struct lnet_libmd, md_list);

		lnet_log(ln, ULNET_LOG_WARN, "MD %#llx still busy (%d) at shutdown",
			 (unsigned long long)md->md_cookie, md->md_refcount);
		md->md_refcount = 0;
		md->md_flags &= ~LNET_MD_FLAG_HANDLING;
		lnet_md_free_locked(ln, md);
	}
	lnet_unlock(ln);
}

void ulnet_destroy(ulnet_t *ln)
{
	struct lnet_sendq q;
	struct ul_list delayed;

	if (!ln)
		return;
	lnet_lock(ln);
	ln->ln_state = LNET_STATE_STOPPING;
	lnet_unlock(ln);

	if (ln->ln_has_thread) {
		__atomic_store_n(&ln->ln_stop, 1, __ATOMIC_RELEASE);
		ul_loop_wakeup(ln->ln_loop);
		pthread_join(ln->ln_thread, NULL);
		ln->ln_has_thread = false;
	}
	/* and the NIs' own: nothing but this thread runs from here on */
	lnet_ni_threads_stop_all(ln);

	if (ln->ln_loop) {
		lnet_ping_target_fini(ln);
		lnet_push_target_fini(ln);

		/* PUTs parked on lazy portals are dropped */
		ul_list_init(&delayed);
		lnet_lock(ln);
		lnet_ptl_take_delayed_locked(ln, NULL, &delayed);
		lnet_unlock(ln);
		lnet_drop_delayed_msg_list(ln, &delayed, "shutting down");

		/* messages held by delay rules end now */
		lnet_fault_shutdown(ln);
		/* no link comes back up by its --duration now */
		lnet_ni_link_shutdown(ln);
		/* forwarded messages waiting for router buffers end now */
		lnet_router_shutdown(ln);
		lnet_routes_shutdown(ln);

		/* messages waiting for discovery or for credits end now */
		lnet_sendq_init(&q);
		lnet_lock(ln);
		lnet_peer_fail_pending_locked(ln, &q.sq_fail);
		lnet_fail_queued_locked(ln, NULL, &q, -ESHUTDOWN);
		lnet_unlock(ln);
		lnet_sendq_flush(ln, &q);

		/* LNDs finalize what they hold with -ESHUTDOWN */
		lnet_ni_shutdown_all(ln);

		lnet_unlink_all_mds(ln);
		ul_timer_stop(ln->ln_loop, &ln->ln_rspt_timer);
	}

	/* routes hold references on their gateways' peer NIs */
	lnet_lock(ln);
	lnet_routes_fini(ln);
	lnet_unlock(ln);
	lnet_peer_tables_fini(ln);
	lnet_udsp_fini(ln);
	/* what the LNDs' NIs shared lives as long as the instance: an NI
	 * starting never races its last sibling's shutdown freeing it */
	for (unsigned t = 0; t < 256; t++)
		if (ln->ln_lnd_shared[t] && ln->ln_lnds[t] && ln->ln_lnds[t]->shared_fini)
			ln->ln_lnds[t]->shared_fini(ln->ln_lnd_shared[t]);
	lnet_router_fini(ln);
	lnet_fault_fini(ln);
	lnet_portals_fini(ln);
	lnet_msg_pool_fini(ln);
	lnet_handle_table_fini(&ln->ln_handles);
	if (ln->ln_loop)
		ul_loop_destroy(ln->ln_loop);
	free(ln->ln_ping_buf);
	free(ln->ln_push_buf);
	lnet_memreg_fini(&ln->ln_memreg);
	pthread_mutex_destroy(&ln->ln_api_lock);
	free(ln);
}

int ulnet_progress(ulnet_t *ln, int timeout_ms)
{
	if (!ln)
		return -EINVAL;
	if (ln->ln_has_thread)
		return -EBUSY;
	/* a zero timeout is how a spinning caller polls: see ulnet.h */
	if (timeout_ms == 0)
		return ul_loop_spin_once(ln->ln_loop);
	return ul_loop_run_once(ln->ln_loop, timeout_ms);
}

ulnet_pid_t ulnet_pid(const ulnet_t *ln)
{
	return ln->ln_pid;
}

int lnet_wait_locked(ulnet_t *ln, bool (*done)(void *arg), void *arg, int timeout_ms)
{
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX
					   : ul_clock_monotonic(NULL) + (uint64_t)timeout_ms * 1000000ULL;

	while (!done(arg)) {
		uint64_t now = ul_clock_monotonic(NULL);

		if (now >= deadline)
			return -ETIMEDOUT;
		if (ln->ln_has_thread) {
			uint64_t until = deadline - now > 100000000ULL ? now + 100000000ULL : deadline;
			struct timespec ts = { .tv_sec = (time_t)(until / LNET_NSEC_PER_SEC),
					       .tv_nsec = (long)(until % LNET_NSEC_PER_SEC) };

			lnet_cond_wait_locked(ln, &ts);
		} else {
			/* manual progress: the waiting caller drives the loop */
			uint64_t left = (deadline - now) / 1000000ULL;

			lnet_unlock(ln);
			ul_loop_run_once(ln->ln_loop, left > 10 ? 10 : (int)left);
			lnet_lock(ln);
		}
	}
	return 0;
}
