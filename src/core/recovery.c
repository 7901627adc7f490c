/* SPDX-License-Identifier: MIT */
/*
 * recovery.c - bringing unhealthy NIs back (the kernel's monitor thread:
 * lnet_recover_peer_nis() and lnet_recover_local_nis()). One timer, armed
 * when a health value drops and every recovery_interval while one is below
 * full, pings what is unhealthy: each peer NI (a GET of its ping target, to
 * that NID only) and each of our own NIs (a GET of our ping target sent to
 * that NI's NID through its LND, from whichever of our NIs selection
 * prefers, so that a ping can succeed through another path). Also the
 * local NI health changes themselves (the kernel's
 * lnet_handle_local_failure(), lnet_inc_ni_healthv()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static void lnet_recovery_timer_cb(struct ul_timer *t);

void lnet_recovery_init(ulnet_t *ln)
{
	ul_timer_init(&ln->ln_recovery_timer, lnet_recovery_timer_cb);
}

/* --- local NI health ---------------------------------------------------------- */

/* An NI's status follows its health at the extremes, as the kernel's
 * lnet_dec_ni_healthv_locked()/lnet_inc_ni_healthv(): DOWN on reaching 0,
 * UP on reaching full health. The ping target is rebuilt (and peers told)
 * by the recovery timer, outside the lock this runs under. */
static void lnet_ni_status_follow_locked(ulnet_t *ln, struct lnet_ni *ni)
{
	uint32_t st = ni->ni_status;

	if (ni->ni_health.health_value == 0)
		st = LNET_NI_STATUS_DOWN;
	else if (ni->ni_health.health_value >= ULNET_MAX_HEALTH && !lnet_ni_fatal(ni))
		st = LNET_NI_STATUS_UP;
	if (st == ni->ni_status)
		return;
	ni->ni_status = st;
	ln->ln_ping_stale = true;
}

void lnet_ni_health_fail_locked(ulnet_t *ln, struct lnet_ni *ni, const char *what, const char *why)
{
	char nid[ULNET_NIDSTR_SIZE];

	lnet_healthv_dec_locked(ln, &ni->ni_health);
	lnet_ni_status_follow_locked(ln, ni);
	lnet_recovery_arm_locked(ln);
	lnet_log(ln, ULNET_LOG_INFO, "local NI %s: %s failed (%s), health %d",
		 lnet_nidstr(&ni->ni_nid, nid), what, why, ni->ni_health.health_value);
}

void lnet_ni_health_ok_locked(ulnet_t *ln, struct lnet_ni *ni)
{
	lnet_healthv_inc_locked(ln, &ni->ni_health);
	lnet_ni_status_follow_locked(ln, ni);
}

/* --- the recovery timer ---------------------------------------------------------- */

/*
 * Recovery (the kernel's monitor thread, lnet_recover_peer_nis()): every
 * recovery_interval, each peer NI below full health that has no ping out
 * and whose back-off has passed gets a ping (a GET of its ping target, to
 * that NID only, never resent). What comes back from it raises its health
 * (as any receive does); a failed send lowers it (as any failed send); a
 * ping that gets no reply within transaction_timeout lowers it too. The
 * back-off after the n-th ping of one NI is 2^n s, up to
 * max_recovery_ping_interval; the count starts again once something
 * arrives from it.
 */
/* The next recovery ping no sooner than 2^n s after the n-th (capped at
 * max_recovery_ping_interval), as the kernel's lnet_get_next_recovery_ping(). */
static uint64_t lnet_recovery_next(ulnet_t *ln, struct ulnet_health_stats *hs, uint64_t now)
{
	uint64_t interval = ln->ln_g.max_recovery_ping_interval;
	unsigned count = (unsigned)++hs->ping_count;
	uint64_t next;

	if (count < 32 && (1ULL << count) < interval)
		interval = 1ULL << count;
	next = now + interval * LNET_NSEC_PER_SEC;
	hs->next_ping = (int64_t)(next / LNET_NSEC_PER_SEC);
	return next;
}

struct lnet_recovery_op {
	ulnet_t *ln;
	struct lnet_peer_ni *lpni;     /* a reference while the ping is out; NULL: local */
	ulnet_nid_t ni_nid;            /* local: our NI's NID (the NI may go meanwhile) */
	uint8_t buf[LNET_PING_INFO_MIN_SIZE];
};

void lnet_recovery_arm_locked(ulnet_t *ln)
{
	if (!ln->ln_loop || ln->ln_state != LNET_STATE_RUNNING ||
	    ul_timer_armed(&ln->ln_recovery_timer))
		return;
	ul_timer_start(ln->ln_loop, &ln->ln_recovery_timer,
		       lnet_now(ln) + (uint64_t)ln->ln_g.recovery_interval * LNET_NSEC_PER_SEC);
}

/* A local NI's recovery ping ended (the kernel's
 * lnet_handle_recovery_reply() for MT_TYPE_LOCAL_NI): a REPLY means the NI
 * works, and raises its health (the REPLY itself arrived on whichever NI
 * sent the GET, whose receive raised that one's); an unanswered or failed
 * ping changes nothing here (a failed send lowered the health of the NI
 * it failed on). */
static void lnet_local_recovery_done_locked(ulnet_t *ln, struct lnet_recovery_op *op,
					    const struct ulnet_event *ev)
{
	struct lnet_ni *ni = lnet_nid2ni_locked(ln, &op->ni_nid);
	char nid[ULNET_NIDSTR_SIZE];

	if (!ni)
		return;   /* deleted meanwhile */
	ni->ni_recovering = false;
	if (ev->type == ULNET_EVENT_REPLY && ev->status == 0 && ln->ln_state == LNET_STATE_RUNNING) {
		ni->ni_health.ping_count = 0;
		lnet_ni_health_ok_locked(ln, ni);
		lnet_log(ln, ULNET_LOG_INFO, "local NI %s: recovery ping answered, health %d",
			 lnet_nidstr(&ni->ni_nid, nid), ni->ni_health.health_value);
	} else {
		lnet_log(ln, ULNET_LOG_INFO, "local NI %s: recovery ping failed (%s), health %d",
			 lnet_nidstr(&ni->ni_nid, nid), ulnet_strerror(ev->status ? ev->status : -ETIMEDOUT),
			 ni->ni_health.health_value);
	}
}

static void lnet_recovery_handler(const struct ulnet_event *ev)
{
	struct lnet_recovery_op *op = ev->md_user_ptr;
	ulnet_t *ln = op->ln;
	struct lnet_peer_ni *lpni = op->lpni;
	char nid[ULNET_NIDSTR_SIZE];

	if (!ev->unlinked) {
		/* the send failed (its health counted it), or the REPLY came
		 * and the MD stays for nothing: done with it */
		if (ev->status || ev->type == ULNET_EVENT_REPLY)
			ulnet_md_unlink(ln, ev->md_handle);
		return;
	}
	lnet_lock(ln);
	if (!lpni) {
		lnet_local_recovery_done_locked(ln, op, ev);
		lnet_unlock(ln);
		free(op);
		return;
	}
	lpni->lpni_recovering = false;
	if (ev->type == ULNET_EVENT_REPLY && ev->status == 0) {
		lpni->lpni_health.ping_count = 0;
	} else if (ev->type == ULNET_EVENT_UNLINK && ev->status == -ETIMEDOUT &&
		   ln->ln_state == LNET_STATE_RUNNING) {
		/* no answer: the response tracker lowered its health */
		lnet_log(ln, ULNET_LOG_INFO, "peer NI %s: recovery ping unanswered, health %d",
			 lnet_nidstr(&lpni->lpni_nid, nid), lpni->lpni_health.health_value);
	}
	lnet_peer_ni_decref_locked(ln, lpni);
	lnet_unlock(ln);
	free(op);
}

/* Send one recovery ping (a GET of the ping target at `nid`, tracked:
 * no answer within transaction_timeout lowers the peer NI it went to) for
 * `op`; the reply lands in op->buf. 0, or -errno with op freed and
 * nothing sent (the MD never saw a message: no event). */
static int lnet_recovery_send_locked(ulnet_t *ln, struct lnet_recovery_op *op,
				     const ulnet_nid_t *nid, struct lnet_sendq *q)
{
	struct ulnet_md umd = { .start = op->buf, .length = LNET_PING_INFO_MIN_SIZE,
				.threshold = 2,
				.options = ULNET_MD_TRUNCATE | ULNET_MD_TRACK_RESPONSE,
				.user_ptr = op, .handler = lnet_recovery_handler };
	struct lnet_libmd *md;
	int rc;

	op->ln = ln;
	rc = lnet_md_bind_locked(ln, &umd, ULNET_UNLINK, &md);
	if (!rc) {
		rc = lnet_get_recovery_locked(ln, md, nid, q);
		if (rc)
			lnet_md_unlink_locked(ln, md);
	}
	if (rc)
		free(op);
	return rc;
}

static void lnet_recovery_ping_locked(ulnet_t *ln, struct lnet_peer_ni *lpni, uint64_t now,
				      struct lnet_sendq *q)
{
	struct lnet_recovery_op *op = calloc(1, sizeof(*op));
	char nid[ULNET_NIDSTR_SIZE];

	if (!op)
		return;
	lpni->lpni_next_ping = lnet_recovery_next(ln, &lpni->lpni_health, now);
	op->lpni = lpni;
	lnet_peer_ni_addref_locked(lpni);
	lpni->lpni_recovering = true;
	if (lnet_recovery_send_locked(ln, op, &lpni->lpni_nid, q)) {
		lpni->lpni_recovering = false;
		lnet_peer_ni_decref_locked(ln, lpni);
		return;
	}
	lnet_log(ln, ULNET_LOG_DEBUG, "peer NI %s: recovery ping %llu, health %d",
		 lnet_nidstr(&lpni->lpni_nid, nid),
		 (unsigned long long)lpni->lpni_health.ping_count, lpni->lpni_health.health_value);
}

static void lnet_local_recovery_ping_locked(ulnet_t *ln, struct lnet_ni *ni, uint64_t now,
					    struct lnet_sendq *q)
{
	struct lnet_recovery_op *op = calloc(1, sizeof(*op));
	char nid[ULNET_NIDSTR_SIZE];
	int rc;

	if (!op)
		return;
	ni->ni_next_ping = lnet_recovery_next(ln, &ni->ni_health, now);
	op->ni_nid = ni->ni_nid;
	ni->ni_recovering = true;
	rc = lnet_recovery_send_locked(ln, op, &ni->ni_nid, q);
	if (rc) {
		ni->ni_recovering = false;
		lnet_log(ln, ULNET_LOG_INFO, "local NI %s: can't send a recovery ping: %s",
			 lnet_nidstr(&ni->ni_nid, nid), ulnet_strerror(rc));
		return;
	}
	lnet_log(ln, ULNET_LOG_DEBUG, "local NI %s: recovery ping %llu, health %d",
		 lnet_nidstr(&ni->ni_nid, nid), (unsigned long long)ni->ni_health.ping_count,
		 ni->ni_health.health_value);
}

bool lnet_ni_in_recovery_locked(const ulnet_t *ln, const struct lnet_ni *ni)
{
	return ni != ln->ln_loni && ni->ni_up && ni->ni_health.health_value < ULNET_MAX_HEALTH;
}

/* As the kernel's lnet_peer_ni_add_to_recoveryq_locked(): only a peer NI
 * we have heard from (a gateway's NI on another net never speaks to us,
 * and a ping to it would be dropped by that gateway), and, with
 * recovery_limit set, not once that many seconds have passed since. */
bool lnet_peer_ni_in_recovery_locked(const ulnet_t *ln, const struct lnet_peer_ni *lpni,
				     uint64_t now)
{
	if (lpni->lpni_health.health_value >= ULNET_MAX_HEALTH || !lpni->lpni_last_alive)
		return false;
	return !ln->ln_g.recovery_limit ||
	       now <= lpni->lpni_last_alive + (uint64_t)ln->ln_g.recovery_limit * LNET_NSEC_PER_SEC;
}

/* Our unhealthy NIs (the kernel's lnet_recover_local_nis()): each up NI
 * below full health with no ping out and past its back-off. True if any is
 * unhealthy (the timer runs again). */
static bool lnet_recover_local_nis_locked(ulnet_t *ln, uint64_t now, struct lnet_sendq *q)
{
	bool unhealthy = false;
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (!lnet_ni_in_recovery_locked(ln, ni))
			continue;
		unhealthy = true;
		if (ni->ni_recovering || now < ni->ni_next_ping)
			continue;
		lnet_local_recovery_ping_locked(ln, ni, now, q);
	}
	return unhealthy;
}

static void lnet_recovery_timer_cb(struct ul_timer *t)
{
	ulnet_t *ln = ul_container_of(t, ulnet_t, ln_recovery_timer);
	struct ul_list *pos, *p2;
	struct lnet_sendq q;
	bool unhealthy, stale;
	uint64_t now;

	if (!lnet_timer_enter(ln, &q, &now))
		return;
	unhealthy = lnet_recover_local_nis_locked(ln, now, &q);
	ul_list_for_each(pos, &ln->ln_peers) {
		struct lnet_peer *lp = ul_container_of(pos, struct lnet_peer, lp_list);

		ul_list_for_each(p2, &lp->lp_nis) {
			struct lnet_peer_ni *lpni =
				ul_container_of(p2, struct lnet_peer_ni, lpni_peer_list);

			if (!lnet_peer_ni_in_recovery_locked(ln, lpni, now)) {
				/* aged out (or healthy): counted from 0 again
				 * if it comes back, as the kernel */
				if (lpni->lpni_health.health_value < ULNET_MAX_HEALTH &&
				    lpni->lpni_last_alive)
					lpni->lpni_health.ping_count = 0;
				continue;
			}
			unhealthy = true;
			if (lpni->lpni_recovering || now < lpni->lpni_next_ping)
				continue;
			lnet_recovery_ping_locked(ln, lpni, now, &q);
		}
	}
	if (unhealthy)
		ul_timer_start(ln->ln_loop, t,
			       now + (uint64_t)ln->ln_g.recovery_interval * LNET_NSEC_PER_SEC);
	stale = ln->ln_ping_stale;
	ln->ln_ping_stale = false;
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	/* an NI's status changed with its health: what pings of us (and
	 * pushes to peers) say follows */
	if (stale)
		(void)lnet_ping_target_update(ln);
}

