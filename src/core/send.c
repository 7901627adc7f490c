/* SPDX-License-Identifier: MIT */
/*
 * send.c - the send path: ulnet_put/ulnet_get, path selection (local NI,
 * peer NI, Multi-Rail), credits and their queues, response tracking, and
 * batching of sends.
 */
#include <errno.h>
#include <string.h>

#include "core/fault.h"
#include "core/move.h"
#include "core/route.h"
#include "core/udsp.h"

#define LNET_CREDIT_OK   0
#define LNET_CREDIT_WAIT 1
#define LNET_DC_WAIT     2

/* --- credits ------------------------------------------------------------------------ */

/* ln_tx_waiting changes only under the lock, so no locked RMW is needed
 * (one per message queued and dequeued while credits are short); the
 * atomic store keeps the lock-free readers (lnet_ni_tx_waiting()) exact. */
static inline void lnet_tx_waiting_add_locked(ulnet_t *ln, int delta)
{
	__atomic_store_n(&ln->ln_tx_waiting,
			 __atomic_load_n(&ln->ln_tx_waiting, __ATOMIC_RELAXED) + (unsigned)delta,
			 __ATOMIC_RELAXED);
}

/* A message about to wait for a credit: one that was committed without a
 * deadline (not a PUT, lnet_msg_commit_locked()) gets it now. */
static void lnet_msg_set_deadline_locked(ulnet_t *ln, struct lnet_msg *msg)
{
	if (!msg->msg_deadline)
		msg->msg_deadline =
			lnet_now(ln) + (uint64_t)ln->ln_g.transaction_timeout * LNET_NSEC_PER_SEC;
}

/* OK: ready to hand to the LND; WAIT: queued for a credit; <0: fail it.
 * `now`: the clock if the caller read it, else 0. Inlined in both callers:
 * every send, and every release from a credit queue. */
static inline __attribute__((always_inline)) int
lnet_post_send_locked(ulnet_t *ln, struct lnet_msg *msg, uint64_t now)
{
	struct lnet_peer_ni *lp = msg->msg_txpeer;
	struct lnet_ni *ni = msg->msg_txni;
	char nid[ULNET_NIDSTR_SIZE], nid2[ULNET_NIDSTR_SIZE];

	if (!ni->ni_up)
		return -ESHUTDOWN;
	/* the deadline was set at commit: only a message that waited for
	 * credits can have passed it (one clock read less per send) */
	if (msg->msg_tx_delayed && (now ? now : lnet_now(ln)) > msg->msg_deadline) {
		ln->ln_ctr.drop_count++;
		ln->ln_ctr.drop_length += msg->msg_len;
		lnet_count_type(&ni->ni_dropped, &ni->ni_dropped_bytes,
		                msg->msg_type, msg->msg_len);
		if (lp) {
			lnet_count_type(&lp->lpni_dropped, &lp->lpni_dropped_bytes,
			                msg->msg_type, msg->msg_len);
		}
		lnet_log(ln, ULNET_LOG_WARN, "dropping %s for %s: exceeded message deadline",
			 lnet_msgtyp2str(msg->msg_type), lnet_nidstr(&msg->msg_target.nid, nid));
		return -ETIMEDOUT;
	}
	/* a router passes a message on only to a next hop it deems alive;
	 * its own messages go regardless (the kernel's peer aliveness) */
	if (__builtin_expect(msg->msg_forward, 0) && lp && lp->lpni_ns_status != LNET_NI_STATUS_UP &&
	    !(msg->msg_target.pid & ULNET_PID_USERFLAG) && lnet_peer_aliveness_enabled_locked(ln, lp)) {
		/* (drop_count: when the failed forward completes, msg.c) */
		lnet_count_type(&ni->ni_dropped, &ni->ni_dropped_bytes,
		                msg->msg_type, msg->msg_len);
		lnet_count_type(&lp->lpni_dropped, &lp->lpni_dropped_bytes,
		                msg->msg_type, msg->msg_len);
		lnet_log(ln, ULNET_LOG_WARN, "dropping %s for %s: peer %s not alive",
			 lnet_msgtyp2str(msg->msg_type), lnet_nidstr(&msg->msg_target.nid, nid),
			 lnet_nidstr(&lp->lpni_nid, nid2));
		return -EHOSTUNREACH;
	}
	if (msg->msg_md && (msg->msg_md->md_flags & LNET_MD_FLAG_ABORTED)) {
		lnet_log(ln, ULNET_LOG_INFO, "aborting %s for %s: its MD was unlinked",
			 lnet_msgtyp2str(msg->msg_type), lnet_nidstr(&msg->msg_target.nid, nid));
		return -ECANCELED;
	}
	if (lp && !msg->msg_peertxcredit) {
		msg->msg_peertxcredit = 1;
		lp->lpni_txqnob += msg->msg_len + LNET_HDR_NID4_SIZE;
		lp->lpni_txcredits--;
		if (lp->lpni_txcredits < lp->lpni_mintxcredits)
			lp->lpni_mintxcredits = lp->lpni_txcredits;
		if (lp->lpni_txcredits < 0) {
			lnet_msg_set_deadline_locked(ln, msg);
			msg->msg_tx_delayed = 1;
			ul_list_add_tail(&msg->msg_list, &lp->lpni_txq);
			lnet_tx_waiting_add_locked(ln, 1);
			return LNET_CREDIT_WAIT;
		}
	}
	if (ni != ln->ln_loni && !msg->msg_txcredit) {
		msg->msg_txcredit = 1;
		ni->ni_tx_credits--;
		if (ni->ni_tx_credits < ni->ni_tx_credits_min)
			ni->ni_tx_credits_min = ni->ni_tx_credits;
		if (ni->ni_tx_credits < 0) {
			lnet_msg_set_deadline_locked(ln, msg);
			msg->msg_tx_delayed = 1;
			ul_list_add_tail(&msg->msg_list, &ni->ni_tx_delayed);
			lnet_tx_waiting_add_locked(ln, 1);
			return LNET_CREDIT_WAIT;
		}
	}
	/* a delay rule holds it, credits taken: the fault timer hands it to
	 * its LND (fault.c) */
	if (__builtin_expect(lnet_fault_any(ln, ULNET_FAULT_DELAY), 0) &&
	    lnet_fault_delay_locked(ln, msg)) {
		msg->msg_tx_delayed = 1;
		return LNET_CREDIT_WAIT;
	}
	msg->msg_tx_delayed = 0;
	return LNET_CREDIT_OK;
}

static void lnet_post_delayed_locked(ulnet_t *ln, struct lnet_msg *msg, struct lnet_sendq *q,
				     uint64_t now)
{
	int rc = lnet_post_send_locked(ln, msg, now);

	if (rc == LNET_CREDIT_OK) {
		ul_list_add_tail(&msg->msg_list, &q->sq_send);
	} else if (rc < 0) {
		msg->msg_fin_status = rc;
		ul_list_add_tail(&msg->msg_list, &q->sq_fail);
	}
}

void lnet_release_delayed_locked(ulnet_t *ln, struct ul_list *queue, struct lnet_sendq *q,
				 uint64_t now)
{
	struct lnet_msg *m2 = ul_list_first(queue, struct lnet_msg, msg_list);

	ul_list_del(&m2->msg_list);
	lnet_tx_waiting_add_locked(ln, -1);
	lnet_post_delayed_locked(ln, m2, q, now);
}

static void lnet_fail_list_locked(ulnet_t *ln, struct ul_list *list, struct lnet_ni *ni,
				  struct lnet_sendq *q, int status)
{
	struct ul_list *pos, *n;

	ul_list_for_each_safe(pos, n, list) {
		struct lnet_msg *msg = ul_container_of(pos, struct lnet_msg, msg_list);

		if (ni && msg->msg_txni != ni)
			continue;
		ul_list_del(&msg->msg_list);
		lnet_tx_waiting_add_locked(ln, -1);
		msg->msg_fin_status = status;
		ul_list_add_tail(&msg->msg_list, &q->sq_fail);
	}
}

void lnet_fail_queued_locked(ulnet_t *ln, struct lnet_ni *ni, struct lnet_sendq *q, int status)
{
	struct ul_list *pos;
	unsigned b;

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *n = ul_container_of(pos, struct lnet_ni, ni_list);

		lnet_fail_list_locked(ln, &n->ni_tx_delayed, ni, q, status);
	}
	if (ni)
		lnet_fail_list_locked(ln, &ni->ni_tx_delayed, ni, q, status);
	for (b = 0; b < ln->ln_pni_hash_size; b++) {
		ul_list_for_each(pos, &ln->ln_pni_hash[b]) {
			struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_hash);

			lnet_fail_list_locked(ln, &lpni->lpni_txq, ni, q, status);
		}
	}
}

/* --- path selection ------------------------------------------------------------------ */

/* Our best NI on `net` (lnet_best_ni_on_net_locked() without counting
 * the choice in its round robin). */
static struct lnet_ni *lnet_best_ni_peek_locked(ulnet_t *ln, ulnet_net_t net)
{
	struct lnet_ni *best = NULL;
	struct ul_list *pos;
	int n = lnet_net_nis_locked(ln, net, &best);

	if (n <= 1)
		return best;   /* no choice to make (the usual one NI per net) */

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (!ni->ni_up || ulnet_nid_net(&ni->ni_nid) != net)
			continue;
		/* one whose link is up before one whose link is down (the
		 * kernel's first criterion), then the healthiest, then the
		 * highest UDSP priority ("nid priority"), then more credits,
		 * then round robin (lnet_get_best_ni()) */
		if (best && lnet_ni_fatal(ni) != lnet_ni_fatal(best)) {
			if (!lnet_ni_fatal(ni))
				best = ni;
			continue;
		}
		if (best && ni->ni_health.health_value != best->ni_health.health_value) {
			if (ni->ni_health.health_value > best->ni_health.health_value)
				best = ni;
			continue;
		}
		if (best && ni->ni_sel_prio != best->ni_sel_prio) {
			if (ni->ni_sel_prio < best->ni_sel_prio)
				best = ni;
			continue;
		}
		if (!best || ni->ni_tx_credits > best->ni_tx_credits ||
		    (ni->ni_tx_credits == best->ni_tx_credits && ni->ni_seq < best->ni_seq))
			best = ni;
	}
	return best;
}

struct lnet_ni *lnet_best_ni_on_net_locked(ulnet_t *ln, ulnet_net_t net)
{
	struct lnet_ni *best = lnet_best_ni_peek_locked(ln, net);

	if (best)
		best->ni_seq++;
	return best;
}

/* Our NI on `net` that `lpni` prefers (a UDSP NID-pair rule), the first
 * in NI order, one whose link is up first (the kernel's
 * lnet_find_existing_preferred_best_ni()); NULL: none. */
static struct lnet_ni *lnet_udsp_pref_ni_locked(ulnet_t *ln, const struct lnet_peer_ni *lpni,
						 ulnet_net_t net)
{
	struct lnet_ni *found = NULL;
	struct ul_list *pos;

	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (!ni->ni_up || ulnet_nid_net(&ni->ni_nid) != net ||
		    !lnet_udsp_src_preferred(lpni, &ni->ni_nid))
			continue;
		if (!lnet_ni_fatal(ni))
			return ni;
		if (!found)
			found = ni;
	}
	return found;
}

/* Traffic on the reserved portal (ping, push): LNet's own, free to leave
 * from any NI (the kernel's lnet_reserved_msg()). */
static bool lnet_msg_is_reserved(const struct lnet_msg *msg)
{
	return (msg->msg_type == ULNET_MSG_PUT &&
		msg->msg_hdr.msg.put.ptl_index == ULNET_RESERVED_PORTAL) ||
	       (msg->msg_type == ULNET_MSG_GET &&
		msg->msg_hdr.msg.get.ptl_index == ULNET_RESERVED_PORTAL);
}

/*
 * Our NI for a message to a non-Multi-Rail peer NI. Such a peer knows us by
 * the NID we first spoke from and cannot tell our other NIDs are us: a
 * kernel would take them for another peer, and an ME of its naming our
 * first NID would refuse them ("NID mismatch"). So, as the kernel's
 * preferred NI of a non-MR peer: the first message's NI is kept for the
 * messages after it (LNet's own reserved-portal traffic aside), while it
 * is up.
 */
static struct lnet_ni *lnet_nmr_src_ni_locked(ulnet_t *ln, const struct lnet_msg *msg,
					      struct lnet_peer_ni *lpni, ulnet_net_t net)
{
	struct lnet_ni *only = NULL, *ni;

	/* a UDSP rule's preferred NI first (the kernel keeps both in one
	 * list, the rule's taking the place of the first message's); LNet's
	 * own reserved-portal traffic (pings, pushes) is exempt from both,
	 * as the kernel's lnet_select_preferred_best_ni() */
	if (__builtin_expect(lnet_udsp_has_src_pref(lpni), 0) && !lnet_msg_is_reserved(msg) &&
	    (ni = lnet_udsp_pref_ni_locked(ln, lpni, net)) != NULL) {
		ni->ni_seq++;
		return ni;
	}
	if (lpni->lpni_pref_set && lnet_net_nis_locked(ln, net, &only) > 1 &&
	    !lnet_msg_is_reserved(msg)) {
		ni = lnet_nid2ni_locked(ln, &lpni->lpni_pref_nid);
		/* kept while its link is up, or no other NI's is */
		if (ni && ni->ni_up &&
		    (!lnet_ni_fatal(ni) || !lnet_net_has_live_ni_locked(ln, net))) {
			ni->ni_seq++;
			return ni;
		}
		lpni->lpni_pref_set = false;   /* gone: the next choice is kept */
	}
	return lnet_best_ni_on_net_locked(ln, net);
}

#define LNET_REACH_LOCAL  0   /* 0@lo or one of our NIDs: full selection */
#define LNET_REACH_REMOTE 1   /* on a net we have an NI on (from `self`) */
#define LNET_REACH_ROUTED 2   /* on a net we have a route to */

/* A net we have no NI on: reached through a gateway if a route leads
 * there (whether one is alive is for the send to find). */
static inline int lnet_reach_routed_locked(ulnet_t *ln, ulnet_net_t net)
{
	return ln->ln_nroutes && lnet_route_exists_locked(ln, net) ? LNET_REACH_ROUTED
								   : -EHOSTUNREACH;
}

/* lnet_check_reachable_locked(), saying which way: LNET_REACH_* or -errno.
 * Without `self`, one walk of the NI list answers both "is it ours" and
 * "do we have its net". */
static inline __attribute__((always_inline)) int
lnet_reach_locked(ulnet_t *ln, const ulnet_nid_t *self, const ulnet_nid_t *target)
{
	if (lnet_nid_is_any(target))
		return -EINVAL;
	if (lnet_nid_is_lo0(target))
		return ln->ln_loni ? LNET_REACH_LOCAL : -EHOSTUNREACH;
	if (self && !lnet_nid_is_any(self)) {
		if (lnet_nid_is_local_locked(ln, target))
			return ln->ln_loni ? LNET_REACH_LOCAL : -EHOSTUNREACH;
		if (!lnet_nid_is_local_locked(ln, self))
			return -EINVAL;
		if (ulnet_nid_net(self) != ulnet_nid_net(target))
			return lnet_reach_routed_locked(ln, ulnet_nid_net(target));
		return LNET_REACH_REMOTE;
	} else {
		ulnet_net_t net = ulnet_nid_net(target);
		bool on_net = false;
		struct ul_list *pos;
		struct lnet_ni *only;
		int n = lnet_net_nis_locked(ln, net, &only);

		/* an NI with the target's NID is on the target's net */
		if (n == 0)
			return lnet_reach_routed_locked(ln, net);
		if (n == 1) {
			if (lnet_nid_eq(&only->ni_nid, target))
				return ln->ln_loni ? LNET_REACH_LOCAL : -EHOSTUNREACH;
			return LNET_REACH_REMOTE;
		}
		ul_list_for_each(pos, &ln->ln_nis) {
			struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

			if (ulnet_nid_net(&ni->ni_nid) != net)
				continue;
			if (lnet_nid_eq(&ni->ni_nid, target))
				return ln->ln_loni ? LNET_REACH_LOCAL : -EHOSTUNREACH;
			on_net = true;
		}
		return on_net ? LNET_REACH_REMOTE : -EHOSTUNREACH;
	}
}

int lnet_check_reachable_locked(ulnet_t *ln, const ulnet_nid_t *self, const ulnet_nid_t *target)
{
	int rc = lnet_reach_locked(ln, self, target);

	return rc < 0 ? rc : 0;
}

/* What the selection policies rank a peer NI by, in the kernel's order
 * (lnet_find_best_ni_on_local_net(), lnet_select_peer_ni()): its peer
 * net's priority, our net's, its own, then whether it prefers the NI we
 * would send from. */
struct lnet_udsp_key {
	uint32_t lpn, net, lpni;
	bool pref;
};

static void lnet_udsp_key_locked(ulnet_t *ln, const struct lnet_peer_ni *lpni, ulnet_net_t net,
				 struct lnet_ni *src_ni, struct lnet_udsp_key *k)
{
	k->lpn = lpni->lpni_net_sel_prio;
	k->net = src_ni ? src_ni->ni_net_sel_prio : lnet_udsp_net_prio_locked(ln, net);
	k->lpni = lpni->lpni_sel_prio;
	k->pref = false;
	if (lnet_udsp_has_src_pref(lpni)) {
		struct lnet_ni *ni = src_ni ? src_ni : lnet_best_ni_peek_locked(ln, net);

		k->pref = ni && lnet_udsp_src_preferred(lpni, &ni->ni_nid);
	}
}

/* < 0: a is the better, > 0: b, 0: equal. */
static int lnet_udsp_key_cmp(const struct lnet_udsp_key *a, const struct lnet_udsp_key *b)
{
	if (a->lpn != b->lpn)
		return a->lpn < b->lpn ? -1 : 1;
	if (a->net != b->net)
		return a->net < b->net ? -1 : 1;
	if (a->lpni != b->lpni)
		return a->lpni < b->lpni ? -1 : 1;
	if (a->pref != b->pref)
		return a->pref ? -1 : 1;
	return 0;
}

/* Multi-Rail: among the peer's NIs on nets we have, the healthiest, then
 * (with UDSP rules) the best by lnet_udsp_key_cmp(), then the one with the
 * most credits, round robin among equals (the kernel's
 * lnet_select_peer_ni() order); the local NI as lnet_best_ni_on_net_locked()
 * picks it on the chosen NI's net. */
static inline __attribute__((always_inline)) int
lnet_select_mr_locked(ulnet_t *ln, struct lnet_peer *lp, struct lnet_ni *src_ni,
		      struct lnet_ni **best_ni, struct lnet_peer_ni **best_lpni)
{
	struct lnet_peer_ni *best = NULL;
	struct lnet_udsp_key key = { 0 }, best_key = { 0 };
	bool udsp = lnet_udsp_active(ln);
	bool best_live = false;
	struct ul_list *pos;
	int c;

	if (!src_ni && lp->lp_nnis == 1) {
		/* one peer NI (the common case): the NI walk that picks our
		 * NI also says whether we have its net, no separate test */
		best = ul_container_of(lp->lp_nis.next, struct lnet_peer_ni, lpni_peer_list);
		*best_ni = lnet_best_ni_on_net_locked(ln, ulnet_nid_net(&best->lpni_nid));
		if (!*best_ni)
			return -EHOSTUNREACH;
		best->lpni_seq++;
		*best_lpni = best;
		return 0;
	}
	ul_list_for_each(pos, &lp->lp_nis) {
		struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);
		ulnet_net_t net = ulnet_nid_net(&lpni->lpni_nid);
		bool live;

		if (src_ni ? ulnet_nid_net(&src_ni->ni_nid) != net : !lnet_net_is_local_locked(ln, net))
			continue;
		/* a net where one of our NIs has its link up first (the
		 * kernel picks our NI first, a fatal one last, then the peer
		 * NI on its net); asked only while some link is down */
		live = src_ni || !ln->ln_nfatal || lnet_net_has_live_ni_locked(ln, net);
		if (__builtin_expect(udsp, 0))
			lnet_udsp_key_locked(ln, lpni, net, src_ni, &key);
		if (best && live != best_live) {
			if (!live)
				continue;
		} else if (best && lpni->lpni_health.health_value != best->lpni_health.health_value) {
			if (lpni->lpni_health.health_value < best->lpni_health.health_value)
				continue;
		} else if (best && udsp && (c = lnet_udsp_key_cmp(&key, &best_key)) != 0) {
			if (c > 0)
				continue;
		} else if (best && (lpni->lpni_txcredits < best->lpni_txcredits ||
				    (lpni->lpni_txcredits == best->lpni_txcredits &&
				     lpni->lpni_seq >= best->lpni_seq))) {
			continue;
		}
		best = lpni;
		best_live = live;
		best_key = key;
	}
	if (!best)
		return -EHOSTUNREACH;
	best->lpni_seq++;
	*best_lpni = best;
	*best_ni = src_ni ? src_ni : lnet_best_ni_on_net_locked(ln, ulnet_nid_net(&best->lpni_nid));
	return *best_ni ? 0 : -EHOSTUNREACH;
}

/* The best health of `lp`'s NIs on `net` (the kernel's lpn_healthv). */
static int lnet_peer_net_health_locked(const struct lnet_peer *lp, ulnet_net_t net)
{
	const struct ul_list *pos;
	int best = 0;

	ul_list_for_each(pos, &lp->lp_nis) {
		const struct lnet_peer_ni *p = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);

		if (ulnet_nid_net(&p->lpni_nid) == net && p->lpni_health.health_value > best)
			best = p->lpni_health.health_value;
	}
	return best;
}

/* Multi-Rail across routers (the kernel's lnet_handle_find_routed_path()
 * for a message of our own, no source NID given): among the peer's NIs on
 * nets a route leads to, those on the healthiest net, then on the net of
 * highest UDSP priority, then the healthiest NI, then the NI of highest
 * priority, then the most credits, round robin among equals. NULL: none. */
static struct lnet_peer_ni *lnet_select_remote_dst_locked(ulnet_t *ln, struct lnet_peer *lp)
{
	struct lnet_peer_ni *best = NULL;
	int best_nh = -1;
	struct ul_list *pos;

	ul_list_for_each(pos, &lp->lp_nis) {
		struct lnet_peer_ni *p = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);
		ulnet_net_t net = ulnet_nid_net(&p->lpni_nid);
		int nh;

		if (lnet_net_is_local_locked(ln, net) || !lnet_route_exists_locked(ln, net))
			continue;
		nh = lnet_peer_net_health_locked(lp, net);
		if (best && nh != best_nh) {
			if (nh < best_nh)
				continue;
		} else if (best && p->lpni_net_sel_prio != best->lpni_net_sel_prio) {
			if (p->lpni_net_sel_prio > best->lpni_net_sel_prio)
				continue;
		} else if (best && p->lpni_health.health_value != best->lpni_health.health_value) {
			if (p->lpni_health.health_value < best->lpni_health.health_value)
				continue;
		} else if (best && p->lpni_sel_prio != best->lpni_sel_prio) {
			if (p->lpni_sel_prio > best->lpni_sel_prio)
				continue;
		} else if (best && (p->lpni_txcredits < best->lpni_txcredits ||
				    (p->lpni_txcredits == best->lpni_txcredits &&
				     p->lpni_seq >= best->lpni_seq))) {
			continue;
		}
		best = p;
		best_nh = nh;
	}
	if (best)
		best->lpni_seq++;
	return best;
}

/*
 * A message for `lpni`, a NID on a net we have no NI on (or not from
 * `src_ni`'s net): the gateway peer NI to hand it to and our NI. A
 * Multi-Rail destination that also has an NI on one of our nets is
 * reached there directly (*routed false); otherwise the message goes to
 * the destination NI *final (lpni, or for a Multi-Rail peer of our own
 * message its best NI on a routed net). A response goes back through the
 * gateway its request came from, as the kernel sends it to the last hop,
 * without a route lookup; anything else takes the best live route.
 */
static int lnet_select_routed_locked(ulnet_t *ln, struct lnet_msg *msg, struct lnet_peer_ni *lpni,
				     struct lnet_ni *src_ni, struct lnet_ni **best_ni,
				     struct lnet_peer_ni **best_lpni, struct lnet_peer_ni **final,
				     bool *routed)
{
	struct lnet_peer *lp = lpni->lpni_peer;
	bool response = lnet_msg_is_response(msg);
	bool mr = !src_ni && lp && (lp->lp_state & LNET_PEER_MULTI_RAIL) && !response &&
		  !msg->msg_recovery && !msg->msg_forward;
	char nid[ULNET_NIDSTR_SIZE], nid2[ULNET_NIDSTR_SIZE];
	int rc;

	*routed = false;
	*final = lpni;
	if (mr && lnet_select_mr_locked(ln, lp, NULL, best_ni, best_lpni) == 0)
		return 0;
	*routed = true;
	if (mr && lp->lp_nnis > 1) {
		struct lnet_peer_ni *d = lnet_select_remote_dst_locked(ln, lp);

		if (d)
			*final = lpni = d;
	}
	if (response && !lnet_nid_is_any(&msg->msg_from)) {
		struct lnet_peer_ni *hop = lnet_peer_ni_find_locked(ln, &msg->msg_from);
		ulnet_net_t hn = hop ? ulnet_nid_net(&hop->lpni_nid) : ULNET_NET_ANY;

		if (hop && hop->lpni_peer && lnet_peer_is_gateway_locked(ln, hop->lpni_peer) &&
		    (src_ni ? ulnet_nid_net(&src_ni->ni_nid) == hn : lnet_net_is_local_locked(ln, hn))) {
			*best_ni = src_ni ? src_ni : lnet_best_ni_on_net_locked(ln, hn);
			if (*best_ni) {
				*best_lpni = hop;
				return 0;
			}
		}
	}
	rc = lnet_route_select_locked(ln, ulnet_nid_net(&lpni->lpni_nid), lpni, src_ni, best_ni,
				      best_lpni);
	if (rc)
		lnet_log(ln, ULNET_LOG_ERROR, "no route to %s from %s",
			 lnet_nidstr(&lpni->lpni_nid, nid),
			 src_ni ? lnet_nidstr(&src_ni->ni_nid, nid2) : "<?>");
	return rc;
}

/* `remote`: the caller found, in this critical section, that the target
 * is not ours and that its net is reachable from `src` (lnet_reach_locked()
 * said LNET_REACH_REMOTE): those tests are skipped. */
static inline __attribute__((always_inline)) int
lnet_select_pathway_locked(ulnet_t *ln, const ulnet_nid_t *src, struct lnet_msg *msg,
			   struct lnet_sendq *q, bool remote)
{
	const ulnet_nid_t *dst = &msg->msg_target.nid;
	bool src_any = !src || lnet_nid_is_any(src);
	struct lnet_ni *src_ni = NULL, *best_ni = NULL;
	struct lnet_peer_ni *lpni, *best_lpni = NULL;
	char nid[ULNET_NIDSTR_SIZE], nid2[ULNET_NIDSTR_SIZE];
	bool offnet = false, routed = false;
	int rc;

	msg->msg_routed = 0;
	if (remote)
		goto remote;
	if (lnet_nid_is_any(dst))
		return -EINVAL;

	/* 0@lo goes through the loopback NI: no credits, no peer. Our other
	 * NIDs are peers like any other and go through their LND (as the
	 * kernel's lnet_select_pathway(): a ping of our own NID tests the
	 * NI, and local recovery pings rely on that) */
	if (lnet_nid_is_lo0(dst)) {
		if (!ln->ln_loni)
			return -EHOSTUNREACH;
		msg->msg_hdr.dest_nid = ULNET_NID_LO0;
		msg->msg_hdr.src_nid = ULNET_NID_LO0;
		msg->msg_target.nid = ULNET_NID_LO0;
		lnet_msg_commit_locked(ln, msg, false);
		msg->msg_txni = ln->ln_loni;
		lnet_ni_addref_locked(ln->ln_loni);
		return LNET_CREDIT_OK;
	}

remote:
	msg->msg_src_nid_param = src_any ? ULNET_NID_ANY : *src;
	if (!src_any) {
		src_ni = lnet_nid2ni_locked(ln, src);
		if (!src_ni) {
			lnet_log(ln, ULNET_LOG_ERROR, "can't send to %s: %s is not a local NID",
				 lnet_nidstr(dst, nid), lnet_nidstr(src, nid2));
			return -EINVAL;
		}
		offnet = ulnet_nid_net(src) != ulnet_nid_net(dst);
	} else if (!remote) {
		offnet = !lnet_net_is_local_locked(ln, ulnet_nid_net(dst));
	}
	if (offnet && !ln->ln_nroutes) {
		if (src_any)
			lnet_log(ln, ULNET_LOG_ERROR, "no route to %s: no local NI on its net",
				 lnet_nidstr(dst, nid));
		else
			lnet_log(ln, ULNET_LOG_ERROR, "can't send to %s from %s: no route",
				 lnet_nidstr(dst, nid), lnet_nidstr(src, nid2));
		return -EHOSTUNREACH;
	}

	lpni = lnet_peer_ni_get_locked(ln, dst);
	if (!lpni)
		return -ENOMEM;

	/* the first ordinary message to an undiscovered peer waits (not
	 * one we forward: its sender discovered the destination) */
	rc = msg->msg_forward ? 0 : lnet_peer_discovery_hold_locked(ln, lpni, msg, q);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		msg->msg_t_start = 0;   /* committed when discovery ends: read then */
		return LNET_DC_WAIT;
	}

	if (__builtin_expect(offnet, 0)) {
		rc = lnet_select_routed_locked(ln, msg, lpni, src_ni, &best_ni, &best_lpni, &lpni,
					       &routed);
		if (rc)
			return rc;
	} else if (lpni->lpni_peer && (lpni->lpni_peer->lp_state & LNET_PEER_MULTI_RAIL) &&
	    !lnet_msg_is_response(msg) && !msg->msg_recovery && !msg->msg_forward) {
		rc = lnet_select_mr_locked(ln, lpni->lpni_peer, src_ni, &best_ni, &best_lpni);
		if (rc)
			return rc;
	} else {
		/* non-MR peers, responses and recovery pings go to the NID given */
		best_lpni = lpni;
		best_ni = src_ni ? src_ni : lnet_nmr_src_ni_locked(ln, msg, lpni, ulnet_nid_net(dst));
		if (!best_ni)
			return -EHOSTUNREACH;
		if (__builtin_expect(!lpni->lpni_pref_set, 0) && !lnet_msg_is_response(msg) &&
		    !msg->msg_forward &&
		    !(lpni->lpni_peer && (lpni->lpni_peer->lp_state & LNET_PEER_MULTI_RAIL))) {
			lpni->lpni_pref_nid = best_ni->ni_nid;
			lpni->lpni_pref_set = true;
		}
	}

	if (__builtin_expect(msg->msg_forward, 0)) {
		/* forwarded: the header goes on exactly as it came; it is
		 * never dropped for its age (the kernel's routed messages) */
		msg->msg_routed = routed;
		lnet_msg_commit_locked(ln, msg, true);
		msg->msg_deadline = UINT64_MAX;
		goto committed;
	}
	if (__builtin_expect(routed, 0)) {
		/* the header names the end points; the LND sends to the
		 * gateway (lnet_msg_target()) */
		msg->msg_routed = 1;
		msg->msg_hdr.dest_nid = lpni->lpni_nid;
		msg->msg_target.nid = lpni->lpni_nid;
	} else {
		msg->msg_hdr.dest_nid = best_lpni->lpni_nid;
		msg->msg_target.nid = best_lpni->lpni_nid;
	}
	msg->msg_hdr.src_nid = best_ni->ni_nid;
	lnet_msg_commit_locked(ln, msg, true);
committed:
	msg->msg_txni = best_ni;
	lnet_ni_addref_locked(best_ni);
	msg->msg_txpeer = best_lpni;
	lnet_peer_ni_addref_locked(best_lpni);
	if (msg->msg_tracked && msg->msg_md) {
		/* a response that never comes counts against this hop (the
		 * kernel's rspt_next_hop_nid) */
		msg->msg_md->md_rspt_hop = best_lpni->lpni_nid;
		msg->msg_md->md_rspt_hop_set = true;
	}
	return lnet_post_send_locked(ln, msg, 0);
}

/* Inlined in its two callers, each with a constant `remote`. */
static inline __attribute__((always_inline)) int
lnet_send_how_locked(ulnet_t *ln, const ulnet_nid_t *src, struct lnet_msg *msg,
		     struct lnet_sendq *q, bool remote)
{
	int rc;

	LASSERT(!msg->msg_sending && !msg->msg_receiving && !msg->msg_txni);
	msg->msg_sending = 1;
	if (ln->ln_state != LNET_STATE_RUNNING)
		return -ESHUTDOWN;
	rc = lnet_select_pathway_locked(ln, src, msg, q, remote);
	if (rc < 0)
		return rc;
	if (rc == LNET_CREDIT_OK)
		ul_list_add_tail(&msg->msg_list, &q->sq_send);
	return 0;
}

int lnet_send_locked(ulnet_t *ln, const ulnet_nid_t *src, struct lnet_msg *msg,
		     struct lnet_sendq *q)
{
	return lnet_send_how_locked(ln, src, msg, q, false);
}

int lnet_send(ulnet_t *ln, const ulnet_nid_t *src, struct lnet_msg *msg)
{
	struct lnet_sendq q;
	int rc;

	lnet_sendq_init(&q);
	lnet_lock(ln);
	rc = lnet_send_locked(ln, src, msg, &q);
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	return rc;
}

/* --- response tracking ------------------------------------------------------------------ */

static inline bool lnet_response_tracking_enabled(const ulnet_t *ln, uint32_t type,
						  unsigned md_options)
{
	if (md_options & ULNET_MD_NO_TRACK_RESPONSE)
		return false;
	if (md_options & ULNET_MD_TRACK_RESPONSE)
		return true;
	if (ln->ln_g.response_tracking == 3)
		return true;
	if (type == ULNET_MSG_PUT)
		return ln->ln_g.response_tracking == 2;
	if (type == ULNET_MSG_GET)
		return ln->ln_g.response_tracking == 1;
	return false;
}

/* Returns the clock it read. Inlined in its two callers (every tracked PUT/GET). */
static inline __attribute__((always_inline)) uint64_t
lnet_rspt_attach_locked(ulnet_t *ln, struct lnet_libmd *md)
{
	uint64_t now = lnet_now(ln);
	struct lnet_libmd *head;

	if (!md->md_rspt_active) {
		md->md_rspt_active = true;
		md->md_rspt_start = now;
		md->md_rspt_pending = 0;
		ln->ln_ctr.rst_alloc++;
	}
	md->md_rspt_pending++;
	/* one tracker per MD: a new request pushes its deadline out */
	md->md_rspt_deadline = now + (uint64_t)ln->ln_g.transaction_timeout * LNET_NSEC_PER_SEC;
	ul_list_del(&md->md_rspt_list);
	ul_list_add_tail(&md->md_rspt_list, &ln->ln_rspt_list);
	head = ul_list_first(&ln->ln_rspt_list, struct lnet_libmd, md_rspt_list);
	if (!ul_timer_armed(&ln->ln_rspt_timer) ||
	    ln->ln_rspt_timer.deadline_ns > head->md_rspt_deadline)
		ul_timer_start(ln->ln_loop, &ln->ln_rspt_timer, head->md_rspt_deadline);
	return now;
}


/* No response in time: the peer NI the request went to (a gateway for a
 * routed one) is less healthy, whatever its peer's NI count, and goes into
 * recovery, as the kernel's lnet_finalize_expired_responses() does with
 * lnet_handle_remote_failure_locked(). */
static void lnet_rspt_hop_failed_locked(ulnet_t *ln, struct lnet_libmd *md)
{
	struct lnet_peer_ni *lpni = md->md_rspt_hop_set
		? lnet_peer_ni_find_locked(ln, &md->md_rspt_hop) : NULL;
	char nid[ULNET_NIDSTR_SIZE];

	if (!lpni || !lpni->lpni_peer) {
		lnet_log(ln, ULNET_LOG_INFO, "response timeout on MD %#llx",
			 (unsigned long long)md->md_cookie);
		return;
	}
	lnet_peer_ni_health_dec_locked(ln, lpni);
	lnet_recovery_arm_locked(ln);
	lnet_log(ln, ULNET_LOG_INFO, "response timeout on MD %#llx: peer NI %s health %d",
		 (unsigned long long)md->md_cookie, lnet_nidstr(&lpni->lpni_nid, nid),
		 lpni->lpni_health.health_value);
}

void lnet_rspt_timer_cb(struct ul_timer *t)
{
	ulnet_t *ln = ul_container_of(t, ulnet_t, ln_rspt_timer);
	struct lnet_libmd *md;

	lnet_lock(ln);
	while ((md = ul_list_first(&ln->ln_rspt_list, struct lnet_libmd, md_rspt_list))) {
		if (md->md_rspt_deadline > lnet_now(ln))
			break;
		/* no ACK/REPLY in time: unlink the MD (as the kernel); its
		 * last event says -ETIMEDOUT, and a late response finds no
		 * MD and is dropped */
		lnet_rspt_detach_locked(ln, md);
		ln->ln_ctr.response_timeout_count++;
		lnet_rspt_hop_failed_locked(ln, md);
		lnet_md_unlink_event_locked(ln, md, -ETIMEDOUT);
	}
	md = ul_list_first(&ln->ln_rspt_list, struct lnet_libmd, md_rspt_list);
	if (md)
		ul_timer_start(ln->ln_loop, t, md->md_rspt_deadline);
	lnet_unlock(ln);
}

/* --- initiating ------------------------------------------------------------------------ */

/* The three helpers below are inlined in ulnet_put()/ulnet_get()'s paths. */
static inline __attribute__((always_inline)) int
lnet_md_for_send_locked(ulnet_t *ln, ulnet_handle_t mdh, struct lnet_libmd **mdp)
{
	struct lnet_libmd *md = lnet_handle_lookup(&ln->ln_handles, mdh.cookie, LNET_OBJ_MD);

	if (!md)
		return -ENOENT;
	/* inactive, or an MD that belongs to a portal */
	if (md->md_threshold == 0 || md->md_me)
		return -EINVAL;
	if (md->md_length > ULNET_MTU)
		return -EINVAL;
	*mdp = md;
	return 0;
}

/* Queue the send; a failure after this point is an event, via q. */
static inline __attribute__((always_inline)) void
lnet_send_or_fail_locked(ulnet_t *ln, const ulnet_nid_t *self, struct lnet_msg *msg,
			 struct lnet_sendq *q, int reach)
{
	int rc = lnet_send_how_locked(ln, self, msg, q, reach == LNET_REACH_REMOTE);

	if (rc < 0) {
		char nid[ULNET_NIDSTR_SIZE];

		lnet_log(ln, ULNET_LOG_WARN, "error sending %s to %s: %s",
			 lnet_msgtyp2str(msg->msg_type), lnet_nidstr(&msg->msg_target.nid, nid),
			 ulnet_strerror(rc));
		msg->msg_fin_status = rc;
		ul_list_add_tail(&msg->msg_list, &q->sq_fail);
	}
}

/* What an initiated PUT and GET share: the node is running, the target is
 * reachable, and a message carries the MD and the header's common part. */
static inline __attribute__((always_inline)) int
lnet_initiate_locked(ulnet_t *ln, const ulnet_nid_t *self, struct lnet_libmd *md, unsigned type,
		     const ulnet_process_id_t *target, uint32_t len, struct lnet_msg **out,
		     int *reach)
{
	struct lnet_msg *msg;
	int rc;

	if (ln->ln_state != LNET_STATE_RUNNING)
		return -ESHUTDOWN;
	/* the lock is held until the send: what this finds holds there */
	rc = lnet_reach_locked(ln, self, &target->nid);
	if (rc < 0)
		return rc;
	*reach = rc;
	msg = lnet_msg_alloc_locked(ln);
	if (!msg)
		return -ENOMEM;
	lnet_msg_attach_md(msg, md, 0, 0);
	lnet_prep_send(ln, msg, type, target, 0, len);
	*out = msg;
	return 0;
}

/* lnet_put_locked(), inlined in ulnet_put() (discovery calls the
 * out-of-line one). */
static inline __attribute__((always_inline)) int
lnet_put_one_locked(ulnet_t *ln, const ulnet_nid_t *self, struct lnet_libmd *md,
		    enum ulnet_ack_req ack, const ulnet_process_id_t *target, unsigned portal,
		    uint64_t match_bits, unsigned remote_offset, uint64_t hdr_data,
		    struct lnet_sendq *q)
{
	struct lnet_msg *msg;
	int reach;
	int rc = lnet_initiate_locked(ln, self, md, ULNET_MSG_PUT, target,
				      (uint32_t)md->md_length, &msg, &reach);

	if (rc)
		return rc;
	msg->msg_hdr.msg.put.match_bits = match_bits;
	msg->msg_hdr.msg.put.ptl_index = portal;
	msg->msg_hdr.msg.put.offset = remote_offset;
	msg->msg_hdr.msg.put.hdr_data = hdr_data;
	if (ack == ULNET_ACK_REQ) {
		msg->msg_hdr.msg.put.ack_wmd.wh_interface_cookie = ln->ln_interface_cookie;
		msg->msg_hdr.msg.put.ack_wmd.wh_object_cookie = md->md_cookie;
	} else {
		msg->msg_hdr.msg.put.ack_wmd = LNET_WIRE_HANDLE_NONE;
	}
	lnet_build_msg_event(msg, ULNET_EVENT_SEND);
	if (ack == ULNET_ACK_REQ &&
	    lnet_response_tracking_enabled(ln, ULNET_MSG_PUT, md->md_options)) {
		/* the commit takes this clock read as the PUT's start */
		msg->msg_t_start = lnet_rspt_attach_locked(ln, md);
		msg->msg_tracked = 1;
	}
	lnet_send_or_fail_locked(ln, self, msg, q, reach);
	return 0;
}

int lnet_put_locked(ulnet_t *ln, const ulnet_nid_t *self, struct lnet_libmd *md,
		    enum ulnet_ack_req ack, const ulnet_process_id_t *target, unsigned portal,
		    uint64_t match_bits, unsigned remote_offset, uint64_t hdr_data,
		    struct lnet_sendq *q)
{
	return lnet_put_one_locked(ln, self, md, ack, target, portal, match_bits, remote_offset,
				   hdr_data, q);
}

int lnet_get_locked(ulnet_t *ln, const ulnet_nid_t *self, struct lnet_libmd *md,
		    const ulnet_process_id_t *target, unsigned portal, uint64_t match_bits,
		    unsigned remote_offset, struct lnet_sendq *q)
{
	struct lnet_msg *msg;
	int reach;
	int rc = lnet_initiate_locked(ln, self, md, ULNET_MSG_GET, target, 0, &msg, &reach);

	if (rc)
		return rc;
	msg->msg_hdr.msg.get.match_bits = match_bits;
	msg->msg_hdr.msg.get.ptl_index = portal;
	msg->msg_hdr.msg.get.src_offset = remote_offset;
	msg->msg_hdr.msg.get.sink_length = (uint32_t)md->md_length;
	msg->msg_hdr.msg.get.return_wmd.wh_interface_cookie = ln->ln_interface_cookie;
	msg->msg_hdr.msg.get.return_wmd.wh_object_cookie = md->md_cookie;
	lnet_build_msg_event(msg, ULNET_EVENT_SEND);
	if (lnet_response_tracking_enabled(ln, ULNET_MSG_GET, md->md_options)) {
		lnet_rspt_attach_locked(ln, md);
		msg->msg_tracked = 1;
	}
	lnet_send_or_fail_locked(ln, self, msg, q, reach);
	return 0;
}

int lnet_get_recovery_locked(ulnet_t *ln, struct lnet_libmd *md, const ulnet_nid_t *nid,
			     struct lnet_sendq *q)
{
	ulnet_process_id_t target = { .nid = *nid, .pid = ULNET_PID_LUSTRE };
	struct lnet_msg *msg;
	int reach;
	int rc = lnet_initiate_locked(ln, NULL, md, ULNET_MSG_GET, &target, 0, &msg, &reach);

	if (rc)
		return rc;
	msg->msg_recovery = 1;
	msg->msg_hdr.msg.get.match_bits = ULNET_PROTO_PING_MATCHBITS;
	msg->msg_hdr.msg.get.ptl_index = ULNET_RESERVED_PORTAL;
	msg->msg_hdr.msg.get.src_offset = 0;
	msg->msg_hdr.msg.get.sink_length = (uint32_t)md->md_length;
	msg->msg_hdr.msg.get.return_wmd.wh_interface_cookie = ln->ln_interface_cookie;
	msg->msg_hdr.msg.get.return_wmd.wh_object_cookie = md->md_cookie;
	lnet_build_msg_event(msg, ULNET_EVENT_SEND);
	lnet_rspt_attach_locked(ln, md);
	msg->msg_tracked = 1;
	lnet_send_or_fail_locked(ln, NULL, msg, q, reach);
	return 0;
}

int ulnet_put(ulnet_t *ln, const ulnet_nid_t *self, ulnet_handle_t mdh, enum ulnet_ack_req ack,
	      ulnet_process_id_t target, unsigned portal, uint64_t match_bits,
	      unsigned remote_offset, uint64_t hdr_data)
{
	struct lnet_libmd *md;
	struct lnet_sendq q;
	int rc;

	if (!ln || portal >= ULNET_MAX_PORTALS || (ack != ULNET_ACK_REQ && ack != ULNET_NOACK_REQ))
		return -EINVAL;
	lnet_sendq_init(&q);
	lnet_lock(ln);
	rc = lnet_md_for_send_locked(ln, mdh, &md);
	if (!rc)
		rc = lnet_put_one_locked(ln, self, md, ack, &target, portal, match_bits,
					 remote_offset, hdr_data, &q);
	lnet_unlock(ln);
	/* from here on, completion is signalled by events */
	lnet_sendq_flush(ln, &q);
	return rc;
}

int ulnet_get(ulnet_t *ln, const ulnet_nid_t *self, ulnet_handle_t mdh,
	      ulnet_process_id_t target, unsigned portal, uint64_t match_bits,
	      unsigned remote_offset)
{
	struct lnet_libmd *md;
	struct lnet_sendq q;
	int rc;

	if (!ln || portal >= ULNET_MAX_PORTALS)
		return -EINVAL;
	lnet_sendq_init(&q);
	lnet_lock(ln);
	rc = lnet_md_for_send_locked(ln, mdh, &md);
	if (!rc)
		rc = lnet_get_locked(ln, self, md, &target, portal, match_bits, remote_offset, &q);
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	return rc;
}

/* --- batches ---------------------------------------------------------------------------- */

/* The batch open on this thread (ulnet_batch_begin): which instance, how
 * deep, whether an LND held a message since the last flush, and whether a
 * flush let the LND keep bytes back (more = true) that must be pushed. */
static _Thread_local ulnet_t *lnet_batch_ln;
static _Thread_local unsigned lnet_batch_depth;
static _Thread_local bool lnet_batch_held, lnet_batch_more;

bool lnet_ni_tx_waiting(const struct lnet_ni *ni)
{
	/* a hint for MSG_MORE: no lock (LNDs call it holding their own) */
	return __atomic_load_n(&ni->ni_ln->ln_tx_waiting, __ATOMIC_RELAXED) > 0;
}

bool lnet_ni_batch_hold(const struct lnet_ni *ni)
{
	if (!lnet_batch_depth || lnet_batch_ln != ni->ni_ln)
		return false;
	lnet_batch_held = true;
	return true;
}

int ulnet_batch_begin(ulnet_t *ln)
{
	if (!ln)
		return -EINVAL;
	if (lnet_batch_depth && lnet_batch_ln != ln)
		return -EBUSY;
	lnet_batch_ln = ln;
	lnet_batch_depth++;
	return 0;
}

#define LNET_BATCH_MAX_NIS 16

/* Have every NI's LND write what it holds (no lock held across the calls).
 * `more` unless final: messages wait for credits, so the completions of
 * this flush will send (and hold) more in this batch. */
static void lnet_batch_flush(ulnet_t *ln, bool final)
{
	struct lnet_ni *nis[LNET_BATCH_MAX_NIS];
	struct ul_list *pos;
	unsigned n = 0, i;
	bool more;

	lnet_lock(ln);
	more = !final && __atomic_load_n(&ln->ln_tx_waiting, __ATOMIC_RELAXED) > 0;
	ul_list_for_each(pos, &ln->ln_nis) {
		struct lnet_ni *ni = ul_container_of(pos, struct lnet_ni, ni_list);

		if (ni->ni_lnd->flush && n < LNET_BATCH_MAX_NIS) {
			lnet_ni_addref_locked(ni);
			nis[n++] = ni;
		}
	}
	lnet_unlock(ln);
	lnet_batch_more = more;
	for (i = 0; i < n; i++)
		nis[i]->ni_lnd->flush(nis[i], more);
	lnet_lock(ln);
	for (i = 0; i < n; i++)
		lnet_ni_decref_locked(nis[i]);
	lnet_unlock(ln);
}

int ulnet_batch_end(ulnet_t *ln)
{
	if (!ln || !lnet_batch_depth || lnet_batch_ln != ln)
		return -EINVAL;
	if (lnet_batch_depth > 1) {
		lnet_batch_depth--;
		return 0;
	}
	/* still open while the flush runs: messages its completions release
	 * (credits) are held too and go in the next round */
	while (lnet_batch_held) {
		lnet_batch_held = false;
		lnet_batch_flush(ln, false);
	}
	/* the last round had `more` (the waiting messages went elsewhere, or
	 * failed): push what the LNDs kept back */
	if (lnet_batch_more)
		lnet_batch_flush(ln, true);
	lnet_batch_more = false;
	lnet_batch_depth = 0;
	lnet_batch_ln = NULL;
	return 0;
}
