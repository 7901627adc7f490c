/* SPDX-License-Identifier: MIT */
/*
 * ni_link.c - an NI's link state: the kernel's ni_fatal_error_on.
 *
 * Two causes can hold an NI's link down, each a bit of ni_link_down: a
 * link fault (ulnet_fault_link_set(), "ulnetctl fault link down") and the
 * interface's own link, which the LND watches (socklnd: rtnetlink) and
 * reports with lnet_ni_link_event(). Either makes the NI fatal; it stops
 * being fatal once neither holds. One function, lnet_ni_link_set(), makes
 * every change, so both causes act alike:
 *
 *  - fatal_error 1 (net show -v), status DOWN in our ping info (the
 *    kernel's router checker sets a fatal NI down; ulnet does it at once,
 *    on every node, so that net show and the peers agree with the link);
 *  - path selection puts the NI last among our NIs on its net (the
 *    kernel's lnet_get_best_ni(): a non-fatal NI always wins) and prefers
 *    peer NIs on nets where we have a live NI (send.c);
 *  - the LND's link_state op is told (connections closed, sends failed);
 *  - our peers get a push of the new ping info (the kernel marks the ping
 *    buffer for update when a link's fatal state changes).
 *
 * Back up: fatal_error 0, and status UP if the NI's health is full (else
 * its recovery raises it later: recovery.c), as the kernel's
 * lnet_set_link_fatal_state(); then a push again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "ulnet/fault.h"

static void lnet_link_timer_cb(struct ul_timer *t);

void lnet_ni_link_init(ulnet_t *ln)
{
	ul_timer_init(&ln->ln_link_timer, lnet_link_timer_cb);
}

void lnet_ni_link_shutdown(ulnet_t *ln)
{
	if (ln->ln_loop)
		ul_timer_stop(ln->ln_loop, &ln->ln_link_timer);
}

bool lnet_net_has_live_ni_locked(ulnet_t *ln, ulnet_net_t net)
{
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ni->ni_up && !lnet_ni_fatal(ni) && ulnet_nid_net(&ni->ni_nid) == net)
			return true;
	}
	return false;
}

static const char *lnet_link_cause_name(unsigned cause)
{
	return cause == LNET_NI_LINK_FAULT ? "link fault" : "interface link";
}

int lnet_ni_link_set(ulnet_t *ln, struct lnet_ni *ni, unsigned cause, bool down,
		     const char *why)
{
	char nb[ULNET_NIDSTR_SIZE];
	unsigned old, now;
	bool was, fatal;

	lnet_lock(ln);
	if (!ni->ni_up || ln->ln_state != LNET_STATE_RUNNING) {
		lnet_unlock(ln);
		return -EAGAIN;
	}
	old = ni->ni_link_down;
	now = down ? old | cause : old & ~cause;
	ni->ni_link_down = now;
	was = old != 0;
	fatal = now != 0;
	if (was == fatal) {
		lnet_unlock(ln);
		if (old != now)
			lnet_log(ln, ULNET_LOG_INFO, "%s: %s %s (%s); the link stays down",
				 lnet_nidstr(&ni->ni_nid, nb), lnet_link_cause_name(cause),
				 down ? "down" : "up", why);
		return 0;
	}
	ni->ni_health.fatal_error = fatal;
	ln->ln_nfatal += fatal ? 1 : -1;
	if (fatal)
		ni->ni_status = LNET_NI_STATUS_DOWN;
	else if (ni->ni_health.health_value >= ULNET_MAX_HEALTH)
		ni->ni_status = LNET_NI_STATUS_UP;   /* else when its health is back */
	lnet_ni_addref_locked(ni);
	/* the op uses the LND's NI state: its shutdown waits for us */
	ni->ni_link_busy++;
	lnet_unlock(ln);

	lnet_log(ln, fatal ? ULNET_LOG_WARN : ULNET_LOG_INFO, "%s: link %s (%s: %s)",
		 lnet_nidstr(&ni->ni_nid, nb), fatal ? "down: NI fatal, reported down" : "up",
		 lnet_link_cause_name(cause), why);
	/* no lock across LND ops; a change on another thread meanwhile (a
	 * fault on an API thread, the carrier on the loop) may have told the
	 * LND out of order: tell it again until it has the state that holds */
	lnet_lock(ln);
	while (ni->ni_lnd->link_state && ni->ni_up) {
		lnet_unlock(ln);
		ni->ni_lnd->link_state(ni, fatal);
		lnet_lock(ln);
		if ((ni->ni_link_down != 0) == fatal)
			break;
		fatal = !fatal;
	}
	ni->ni_link_busy--;
	lnet_unlock(ln);
	(void)lnet_ping_target_update(ln);

	lnet_lock(ln);
	lnet_ni_decref_locked(ni);
	lnet_unlock(ln);
	return 1;
}

int lnet_ni_link_event(struct lnet_ni *ni, bool down, const char *why)
{
	return lnet_ni_link_set(ni->ni_ln, ni, LNET_NI_LINK_CARRIER, down, why);
}

/* --- fault link --duration ------------------------------------------------------- */

static void lnet_link_timer_arm_locked(ulnet_t *ln)
{
	uint64_t first = UINT64_MAX;
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ni->ni_link_fault_until && ni->ni_link_fault_until < first)
			first = ni->ni_link_fault_until;
	}
	if (!ln->ln_loop)
		return;
	if (ul_timer_armed(&ln->ln_link_timer))
		ul_timer_stop(ln->ln_loop, &ln->ln_link_timer);
	if (first != UINT64_MAX)
		ul_timer_start(ln->ln_loop, &ln->ln_link_timer, first);
}

static void lnet_link_timer_cb(struct ul_timer *t)
{
	ulnet_t *ln = ul_container_of(t, ulnet_t, ln_link_timer);
	struct lnet_sendq q;
	uint64_t now;

	/* one expired NI at a time: bringing it up calls its LND and pushes,
	 * with no lock held, and the NI list may change meanwhile */
	for (int guard = 0; guard < 4096; guard++) {
		struct lnet_ni *due = NULL;
		struct ul_list *pos;

		if (!lnet_timer_enter(ln, &q, &now))
			return;
		ul_list_for_each(pos, &ln->ln_nis) {
			struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

			if (ni->ni_link_fault_until && ni->ni_link_fault_until <= now) {
				due = ni;
				break;
			}
		}
		if (!due) {
			lnet_link_timer_arm_locked(ln);
			lnet_unlock(ln);
			return;
		}
		due->ni_link_fault_until = 0;
		lnet_ni_addref_locked(due);
		lnet_unlock(ln);
		lnet_ni_link_set(ln, due, LNET_NI_LINK_FAULT, false, "its duration ended");
		lnet_lock(ln);
		lnet_ni_decref_locked(due);
		lnet_unlock(ln);
	}
}

int ulnet_fault_link_set(ulnet_t *ln, const ulnet_nid_t *nid, bool down, uint32_t duration_s)
{
	char why[64];
	struct lnet_ni *ni;

	if (!ln || !nid || (!down && duration_s))
		return -EINVAL;
	if (nid->type == ULNET_LND_LO)
		return -EINVAL;
	lnet_lock(ln);
	if (ln->ln_state != LNET_STATE_RUNNING) {
		lnet_unlock(ln);
		return -ESHUTDOWN;
	}
	ni = lnet_nid2ni_locked(ln, nid);
	if (!ni || !ni->ni_up) {
		lnet_unlock(ln);
		return -ENOENT;
	}
	if (!ni->ni_lnd->link_state) {
		lnet_unlock(ln);
		return -EOPNOTSUPP;
	}
	/* a new command replaces the old one's duration */
	ni->ni_link_fault_until = down && duration_s
		? lnet_now(ln) + (uint64_t)duration_s * LNET_NSEC_PER_SEC : 0;
	lnet_link_timer_arm_locked(ln);
	lnet_ni_addref_locked(ni);
	lnet_unlock(ln);

	if (down && duration_s)
		snprintf(why, sizeof(why), "fault link down for %us", duration_s);
	else
		snprintf(why, sizeof(why), "fault link %s", down ? "down" : "up");
	lnet_ni_link_set(ln, ni, LNET_NI_LINK_FAULT, down, why);

	lnet_lock(ln);
	lnet_ni_decref_locked(ni);
	lnet_unlock(ln);
	return 0;
}

int ulnet_fault_link_list(ulnet_t *ln, int pos, struct ulnet_fault_link *l)
{
	struct ul_list *p;
	uint64_t now;
	int i = 0;

	if (!ln || !l || pos < 0)
		return -EINVAL;
	lnet_lock(ln);
	now = lnet_now(ln);
	ul_list_for_each(p, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(p, struct lnet_ni, ni_list);

		if (!lnet_ni_fatal(ni) || i++ != pos)
			continue;
		memset(l, 0, sizeof(*l));
		l->nid = ni->ni_nid;
		l->fault = ni->ni_link_down & LNET_NI_LINK_FAULT;
		l->carrier_down = ni->ni_link_down & LNET_NI_LINK_CARRIER;
		if (ni->ni_link_fault_until) {
			uint64_t left = ni->ni_link_fault_until > now ? ni->ni_link_fault_until - now : 0;

			/* rounded up: 1 ms left shows, not 0 (no duration) */
			l->left_ms = (left + 999999) / 1000000;
			if (!l->left_ms)
				l->left_ms = 1;
		}
		lnet_unlock(ln);
		return 0;
	}
	lnet_unlock(ln);
	return -ENOENT;
}
