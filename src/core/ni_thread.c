/* SPDX-License-Identifier: MIT */
/*
 * ni_thread.c - NIs that run on a thread of their own.
 *
 * By default every NI's LND runs on the instance's one progress thread. A
 * socklnd NI with nscheds 1 gets a loop and a thread of its own instead
 * (lnet_ni_loop() hands its LND that loop), as the kernel's ksocklnd has
 * scheduler threads: a router then receives on one NI's thread while its
 * other NI's thread sends, instead of one thread doing both copies of
 * every forwarded byte. The core is already safe to enter from any thread
 * (API callers do), and an LND's send() may run on any thread; what runs
 * on the NI's thread is what ran on the progress thread before: its
 * sockets' callbacks and its timers.
 *
 * The thread starts before the LND's startup() and stops before its
 * shutdown(), which then runs on the caller's thread with no loop turning
 * (as at instance teardown, after the progress thread stopped); the loop
 * goes after shutdown().
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "core/ni_thread.h"

static void *lnet_ni_thread_main(void *arg)
{
	struct lnet_ni *ni = arg;

	lnet_loop_serve(ni->ni_ln, ni->ni_loop, &ni->ni_thread_stop);
	return NULL;
}

bool lnet_ni_wants_thread(const struct lnet_ni *ni)
{
	return ni->ni_conf.sock.nscheds == 1;   /* tcp NIs only: ulnet_ni_add() */
}

int lnet_ni_thread_start(struct lnet_ni *ni)
{
	ulnet_t *ln = ni->ni_ln;
	char nid[ULNET_NIDSTR_SIZE], net[ULNET_NETSTR_SIZE], name[16];
	int rc;

	if (!ln->ln_has_thread) {
		lnet_log(ln, ULNET_LOG_ERROR,
			 "NI %s: nscheds 1 (a thread of its own) needs the progress thread, "
			 "which ULNET_OPT_MANUAL_PROGRESS turns off", lnet_nidstr(&ni->ni_nid, nid));
		return -EINVAL;
	}
	ni->ni_loop = ul_loop_create(ln->ln_clock, ln->ln_clock_arg);
	if (!ni->ni_loop)
		return errno ? -errno : -ENOMEM;
	ni->ni_thread_stop = 0;
	rc = -pthread_create(&ni->ni_thread, NULL, lnet_ni_thread_main, ni);
	if (rc) {
		ul_loop_destroy(ni->ni_loop);
		ni->ni_loop = NULL;
		return rc;
	}
	ni->ni_has_thread = true;
	/* seen in top -H and /proc/PID/task/TID/comm: "ulnet-tcp1" */
	if (ulnet_net_format(ulnet_nid_net(&ni->ni_nid), net, sizeof(net)) < 0)
		snprintf(net, sizeof(net), "?");
	snprintf(name, sizeof(name), "ulnet-%.9s", net);   /* 15 chars at most */
	(void)pthread_setname_np(ni->ni_thread, name);
	lnet_log(ln, ULNET_LOG_DEBUG, "NI %s: runs on a thread of its own (%s)",
		 lnet_nidstr(&ni->ni_nid, nid), name);
	return 0;
}

void lnet_ni_thread_stop(struct lnet_ni *ni)
{
	if (!ni->ni_has_thread)
		return;
	__atomic_store_n(&ni->ni_thread_stop, 1, __ATOMIC_RELEASE);
	ul_loop_wakeup(ni->ni_loop);
	pthread_join(ni->ni_thread, NULL);
	ni->ni_has_thread = false;
}

void lnet_ni_loop_release(struct lnet_ni *ni)
{
	lnet_ni_thread_stop(ni);
	if (ni->ni_loop)
		ul_loop_destroy(ni->ni_loop);
	ni->ni_loop = NULL;
}

void lnet_ni_threads_stop_all(ulnet_t *ln)
{
	struct ul_list *pos;

	/* the list changes only on API threads, which teardown excludes */
	ul_list_for_each(pos, &ln->ln_nis)
		lnet_ni_thread_stop(ul_container_of(pos, struct lnet_ni, ni_list));
}
