/* SPDX-License-Identifier: MIT */
/*
 * discovery.c - peer discovery, as kernel LNet does it on the wire.
 *
 * The first ordinary message (not portal 0, not ACK/REPLY) to a peer that
 * is not up to date waits on the peer while we ping it (GET portal 0, match
 * bits 0x8000000000000000, sink max(272, last size)). The REPLY's ping info
 * is merged: NIDs, Multi-Rail, discovery feature, sequence number. If the
 * peer is Multi-Rail and both sides discover, we then PUSH our own ping info
 * (PUT portal 0, same bits, ACK requested) and wait for the ACK. Then the
 * waiting messages go (or fail with the error). A push received from a known
 * peer is merged the same way, and answered with our own push if that peer
 * has not seen our current sequence number.
 *
 * Each ping or push is one bound MD whose handler advances the peer's state
 * (the kernel runs a discovery thread; here the completion handlers are the
 * thread). A peer's discovery holds a reference on it, as does each MD.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/route.h"

#define LNET_DC_MAX_NIS 256

struct lnet_dc_op {
	ulnet_t *ln;
	struct lnet_peer *lp;
	unsigned gen;        /* lp_dc_gen when sent: later events of an old op are ignored */
	bool push;
	bool finished;       /* its outcome has been acted upon */
	uint32_t seqno;      /* push: the sequence number it carries */
	size_t len;
	uint8_t buf[];       /* ping: the sink; push: our ping info */
};

static void lnet_peer_discovery_step_locked(ulnet_t *ln, struct lnet_peer *lp,
					    struct lnet_sendq *q);

/* --- ending a discovery -------------------------------------------------------- */

static void lnet_peer_release_pending_locked(ulnet_t *ln, struct lnet_peer *lp, int status,
					     struct lnet_sendq *q)
{
	struct ul_list pending;
	struct lnet_msg *msg;

	ul_list_init(&pending);
	ul_list_splice_tail(&lp->lp_pending, &pending);
	while ((msg = ul_list_first(&pending, struct lnet_msg, msg_list))) {
		int rc = status;

		ul_list_del(&msg->msg_list);
		lnet_msg_dc_wait_end(ln, msg);
		if (!rc) {
			ulnet_nid_t src = msg->msg_src_nid_param;

			/* the path is chosen again, now with the peer known */
			msg->msg_sending = 0;
			rc = lnet_send_locked(ln, ulnet_nid_is_any(&src) ? NULL : &src, msg, q);
			if (!rc)
				continue;
		}
		msg->msg_fin_status = rc;
		ul_list_add_tail(&msg->msg_list, &q->sq_fail);
	}
}

static void lnet_peer_discovery_done_locked(ulnet_t *ln, struct lnet_peer *lp, int status,
					    struct lnet_sendq *q)
{
	char nid[ULNET_NIDSTR_SIZE];

	lp->lp_state &= ~(LNET_PEER_DISCOVERING | LNET_PEER_PING_SENT | LNET_PEER_PUSH_SENT |
			  LNET_PEER_FORCE_PING | LNET_PEER_FORCE_PUSH | LNET_PEER_REDISCOVER);
	if (!status) {
		lp->lp_state |= LNET_PEER_DISCOVERED;
		lp->lp_state &= ~(LNET_PEER_PING_FAILED | LNET_PEER_PUSH_FAILED);
	} else {
		lp->lp_state &= ~LNET_PEER_DISCOVERED;
		lnet_log(ln, ULNET_LOG_WARN, "discovery of peer %s failed: %s",
			 lnet_nidstr(&lp->lp_primary, nid), ulnet_strerror(status));
	}
	lp->lp_dc_error = status;
	lp->lp_dc_gen++;
	if (ln->ln_nroutes)
		lnet_route_gw_discovered_locked(ln, lp, status);
	lnet_cond_broadcast(ln);
	lnet_peer_release_pending_locked(ln, lp, status, q);
	lnet_peer_decref_locked(ln, lp); /* the discovery's reference */
}

void lnet_peer_cancel_discovery_locked(ulnet_t *ln, struct lnet_peer *lp)
{
	if (!(lp->lp_state & LNET_PEER_DISCOVERING))
		return;
	lp->lp_state &= ~(LNET_PEER_DISCOVERING | LNET_PEER_PING_SENT | LNET_PEER_PUSH_SENT);
	lp->lp_dc_error = -ENOENT;
	lp->lp_dc_gen++;
	lnet_cond_broadcast(ln);
	lnet_peer_decref_locked(ln, lp);
}

/* --- merging a ping info (REPLY or push) ---------------------------------------- */

/* A peer that becomes Multi-Rail may hear from any of our NIs. */
static void lnet_peer_set_mr_locked(struct lnet_peer *lp)
{
	struct ul_list *pos;

	lp->lp_state |= LNET_PEER_MULTI_RAIL;
	ul_list_for_each(pos, &lp->lp_nis)
		ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list)->lpni_pref_set = false;
}

/* A peer that stops being Multi-Rail goes back to its primary NID. */
static void lnet_peer_drop_mr_locked(ulnet_t *ln, struct lnet_peer *lp, bool remote)
{
	char nid[ULNET_NIDSTR_SIZE];
	struct ul_list *pos, *n;

	lnet_log(ln, ULNET_LOG_INFO, "peer %s: discovery is off%s: not Multi-Rail any more",
		 lnet_nidstr(&lp->lp_primary, nid), remote ? " at its end" : " here");
	lp->lp_state &= ~LNET_PEER_MULTI_RAIL;
	/* (a primary NID that moved to another peer: nothing to go back to) */
	ul_list_for_each(pos, &lp->lp_nis)
		if (lnet_nid_eq(&ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list)->lpni_nid,
				&lp->lp_primary))
			break;
	if (pos == &lp->lp_nis)
		return;
	ul_list_for_each_safe(pos, n, &lp->lp_nis) {
		struct lnet_peer_ni *lpni = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);

		if (!lnet_nid_eq(&lpni->lpni_nid, &lp->lp_primary))
			lnet_peer_ni_remove_locked(ln, lpni);
	}
}

/* 0, -EAGAIN (a bigger buffer is needed), or -EPROTO. */
static int lnet_peer_merge_locked(ulnet_t *ln, struct lnet_peer *lp, const struct lnet_ping_info *pi,
				  uint32_t mlength, uint32_t rlength, bool push)
{
	char nid[ULNET_NIDSTR_SIZE], nid2[ULNET_NIDSTR_SIZE];
	const struct lnet_ping_ni *prim;
	unsigned i;

	/* (NIDs listed in a form we cannot parse are skipped, as the kernel
	 * does: they are no reason to ping again) */
	if (rlength > mlength || pi->truncated || pi->nnis + pi->nnis_skipped < pi->nnis_wire) {
		unsigned want = rlength > mlength ? rlength : mlength * 2;

		if (pi->nnis + pi->nnis_skipped < pi->nnis_wire && pi->nnis >= LNET_DC_MAX_NIS)
			goto merge; /* more NIs than we keep: take what we have */
		if (want > lp->lp_data_nbytes)
			lp->lp_data_nbytes = want > ULNET_MTU ? ULNET_MTU : want;
		return -EAGAIN;
	}
merge:
	lp->lp_data_nbytes = mlength;
	lp->lp_features = pi->features;
	/* the peer forwards (its ping info lacks RTE_DISABLED): `peer show`
	 * shows it in the peer's state, as the kernel */
	if (pi->features & LNET_PING_FEAT_RTE_DISABLED)
		lp->lp_state &= ~LNET_PEER_ROUTER_ENABLED;
	else
		lp->lp_state |= LNET_PEER_ROUTER_ENABLED;
	lp->lp_peer_seqno = pi->nis[0].status;

	/* The kernel's two handlers differ: a ping REPLY marks the peer
	 * NO_DISCOVERY when discovery is off at either end, a push only when
	 * the peer's is (ours being off then only keeps the merge below to
	 * NID status). Discovery going off for a peer we had discovered, or
	 * had as Multi-Rail, makes the kernel delete the peer and start again
	 * from the NID in use; we keep it, but as it would come back: not
	 * Multi-Rail, its primary NID alone (configured peers stay as they
	 * are). */
	if (!(pi->features & LNET_PING_FEAT_DISCOVERY) || (!push && !ln->ln_g.discovery)) {
		unsigned had = push ? LNET_PEER_DISCOVERED : LNET_PEER_DISCOVERED | LNET_PEER_MULTI_RAIL;

		if (!(lp->lp_state & (LNET_PEER_CONFIGURED | LNET_PEER_NO_DISCOVERY)) &&
		    (lp->lp_state & had))
			lnet_peer_drop_mr_locked(ln, lp,
						  !(pi->features & LNET_PING_FEAT_DISCOVERY));
		lp->lp_state |= LNET_PEER_NO_DISCOVERY;
	} else {
		lp->lp_state &= ~LNET_PEER_NO_DISCOVERY;
	}

	/* Every kernel sets the MULTI_RAIL bit; a peer is used as Multi-Rail
	 * only when discovery is on at both ends (the kernel's "not MR: DD
	 * disabled locally/remotely"). */
	if (pi->features & LNET_PING_FEAT_MULTI_RAIL) {
		if (lp->lp_state & LNET_PEER_MULTI_RAIL)
			;   /* stays so, as the kernel's */
		else if (lp->lp_state & LNET_PEER_CONFIGURED)
			lnet_log(ln, ULNET_LOG_WARN, "peer %s is Multi-Rail but configured not to be",
				 lnet_nidstr(&lp->lp_primary, nid));
		else if (!(lp->lp_state & LNET_PEER_NO_DISCOVERY) && ln->ln_g.discovery)
			lnet_peer_set_mr_locked(lp);
	} else if (lp->lp_state & LNET_PEER_MULTI_RAIL) {
		if (lp->lp_state & LNET_PEER_CONFIGURED)
			lnet_log(ln, ULNET_LOG_WARN, "peer %s is configured Multi-Rail but is not",
				 lnet_nidstr(&lp->lp_primary, nid));
		else
			lp->lp_state &= ~LNET_PEER_MULTI_RAIL;
	}

	if ((lp->lp_state & LNET_PEER_MULTI_RAIL) && !(lp->lp_state & LNET_PEER_NO_DISCOVERY) &&
	    ln->ln_g.discovery) {
		struct ul_list *pos, *n;
		/* the node itself (a discovery of one of our NIDs): its NIDs
		 * are ours, and gather in one peer (sanity-lnet 219) */
		bool self = lnet_nid_is_local_locked(ln, &lp->lp_primary);

		for (i = 1; i < pi->nnis; i++) {
			struct lnet_peer_ni *lpni;

			if (!self && lnet_nid_is_local_locked(ln, &pi->nis[i].nid))
				continue; /* a misconfigured peer claiming our NID */
			if (lnet_peer_add_nid_locked(ln, lp, &pi->nis[i].nid))
				continue;
			lpni = lnet_peer_ni_find_locked(ln, &pi->nis[i].nid);
			if (lpni)
				lnet_peer_ni_set_ns_status_locked(ln, lpni, pi->nis[i].status);
		}
		/* The primary NID is the one its info names (the kernel's
		 * lnet_peer_data_present(): a peer we met through another of
		 * its NIDs takes it), unless configured, its primary NID
		 * locked (peer add --lock_prim, or taken over with a locked
		 * peer's NID above), or that NID is another peer's. */
		prim = lnet_ping_info_primary(pi);
		if (prim && !(lp->lp_state & (LNET_PEER_CONFIGURED | LNET_PEER_LOCK_PRIMARY)) &&
		    !lnet_nid_eq(&prim->nid, &lp->lp_primary)) {
			struct lnet_peer_ni *lpni = lnet_peer_ni_find_locked(ln, &prim->nid);

			if (lpni && lpni->lpni_peer == lp) {
				lnet_log(ln, ULNET_LOG_INFO, "peer %s: primary NID %s, as its ping info says",
					 lnet_nidstr(&lp->lp_primary, nid),
					 lnet_nidstr(&prim->nid, nid2));
				lp->lp_primary = prim->nid;
				ul_list_del(&lpni->lpni_peer_list);
				ul_list_add(&lpni->lpni_peer_list, &lp->lp_nis);   /* primary first */
			}
		}
		/* NIDs it no longer lists go, except the primary and
		 * configured peers' */
		if (!(lp->lp_state & LNET_PEER_CONFIGURED)) {
			ul_list_for_each_safe(pos, n, &lp->lp_nis) {
				struct lnet_peer_ni *lpni =
					ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);
				bool listed = false;

				for (i = 1; i < pi->nnis && !listed; i++)
					listed = lnet_nid_eq(&pi->nis[i].nid, &lpni->lpni_nid);
				if (listed)
					continue;
				if (!lnet_nid_eq(&lpni->lpni_nid, &lp->lp_primary))
					lnet_peer_ni_remove_locked(ln, lpni);
				else   /* kept, but gone from the node: down */
					lnet_peer_ni_set_ns_status_locked(ln, lpni,
									  LNET_NI_STATUS_DOWN);
			}
		}
	} else {
		/* a non-MR peer (or one with discovery off: the kernel's
		 * lnet_is_discovery_disabled()) is only ever spoken to on the
		 * NIDs we know; their status is all that is taken */
		for (i = 1; i < pi->nnis; i++) {
			struct lnet_peer_ni *lpni = lnet_peer_ni_find_locked(ln, &pi->nis[i].nid);

			if (lpni && lpni->lpni_peer == lp)
				lnet_peer_ni_set_ns_status_locked(ln, lpni, pi->nis[i].status);
		}
	}
	lp->lp_state |= LNET_PEER_NIDS_UPTODATE;
	/* a gateway's routes follow its ping info (a push, such as a router
	 * announcing that it forwards now, included) */
	if (ln->ln_nroutes)
		lnet_route_gw_discovered_locked(ln, lp, 0);
	return 0;
}

/* --- ping and push --------------------------------------------------------------- */

static void lnet_dc_handler(const struct ulnet_event *ev);

static struct lnet_dc_op *lnet_dc_op_alloc(ulnet_t *ln, struct lnet_peer *lp, bool push, size_t len)
{
	struct lnet_dc_op *op = calloc(1, sizeof(*op) + len);

	if (!op)
		return NULL;
	op->ln = ln;
	op->lp = lp;
	op->gen = lp->lp_dc_gen;
	op->push = push;
	op->len = len;
	lp->lp_refcount++;
	return op;
}

static void lnet_dc_op_free_locked(ulnet_t *ln, struct lnet_dc_op *op)
{
	lnet_peer_decref_locked(ln, op->lp);
	free(op);
}

static int lnet_dc_send_locked(ulnet_t *ln, struct lnet_peer *lp, struct lnet_dc_op *op,
			       struct lnet_sendq *q)
{
	/* pings and pushes are always tracked */
	struct ulnet_md umd = { .start = op->buf, .length = op->len, .threshold = 2,
				.options = ULNET_MD_TRACK_RESPONSE | (op->push ? 0 : ULNET_MD_TRUNCATE),
				.user_ptr = op, .handler = lnet_dc_handler };
	ulnet_process_id_t target = { .nid = lp->lp_primary, .pid = ULNET_PID_LUSTRE };
	struct lnet_libmd *md;
	int rc;

	rc = lnet_md_bind_locked(ln, &umd, ULNET_UNLINK, &md);
	if (rc)
		goto out_free;
	if (op->push) {
		lp->lp_push_mdh.cookie = md->md_cookie;
		rc = lnet_put_locked(ln, NULL, md, ULNET_ACK_REQ, &target, ULNET_RESERVED_PORTAL,
				     ULNET_PROTO_PING_MATCHBITS, 0, 0, q);
	} else {
		lp->lp_ping_mdh.cookie = md->md_cookie;
		rc = lnet_get_locked(ln, NULL, md, &target, ULNET_RESERVED_PORTAL,
				     ULNET_PROTO_PING_MATCHBITS, 0, q);
	}
	if (rc) {
		/* nothing left: the MD never saw a message, no event */
		lnet_md_unlink_locked(ln, md);
		goto out_free;
	}
	lp->lp_state |= op->push ? LNET_PEER_PUSH_SENT : LNET_PEER_PING_SENT;
	return 0;
out_free:
	lnet_dc_op_free_locked(ln, op);
	return rc;
}

static int lnet_peer_send_ping_locked(ulnet_t *ln, struct lnet_peer *lp, struct lnet_sendq *q)
{
	size_t len = lp->lp_data_nbytes > LNET_PING_INFO_MIN_SIZE ? lp->lp_data_nbytes
								  : LNET_PING_INFO_MIN_SIZE;
	struct lnet_dc_op *op = lnet_dc_op_alloc(ln, lp, false, len);

	if (!op)
		return -ENOMEM;
	lp->lp_state &= ~LNET_PEER_FORCE_PING;
	return lnet_dc_send_locked(ln, lp, op, q);
}

static int lnet_peer_send_push_locked(ulnet_t *ln, struct lnet_peer *lp, struct lnet_sendq *q)
{
	struct lnet_dc_op *op;
	uint8_t *info;
	size_t len;
	int rc;

	rc = lnet_ping_info_build_locked(ln, &info, &len);
	if (rc)
		return rc;
	op = lnet_dc_op_alloc(ln, lp, true, len);
	if (!op) {
		free(info);
		return -ENOMEM;
	}
	memcpy(op->buf, info, len);
	free(info);
	op->seqno = ln->ln_ping_seqno;
	lp->lp_state &= ~LNET_PEER_FORCE_PUSH;
	return lnet_dc_send_locked(ln, lp, op, q);
}

/* What does the peer need next: ping, push, or nothing (done). */
static void lnet_peer_discovery_step_locked(ulnet_t *ln, struct lnet_peer *lp,
					    struct lnet_sendq *q)
{
	int rc = 0;

	if (ln->ln_state != LNET_STATE_RUNNING)
		rc = -ESHUTDOWN;
	else if ((lp->lp_state & LNET_PEER_FORCE_PING) || !(lp->lp_state & LNET_PEER_NIDS_UPTODATE))
		rc = lnet_peer_send_ping_locked(ln, lp, q);
	else if (lnet_peer_needs_push_locked(ln, lp))
		rc = lnet_peer_send_push_locked(ln, lp, q);
	else {
		lnet_peer_discovery_done_locked(ln, lp, 0, q);
		return;
	}
	if (rc)
		lnet_peer_discovery_done_locked(ln, lp, rc, q);
}

int lnet_peer_start_discovery_locked(ulnet_t *ln, struct lnet_peer *lp, bool force,
				     struct lnet_sendq *q)
{
	if (force) {
		lp->lp_state |= LNET_PEER_FORCE_PING;
		if (lp->lp_state & LNET_PEER_MULTI_RAIL)
			lp->lp_state |= LNET_PEER_FORCE_PUSH;
	}
	/* a running discovery looks at the FORCE bits at its next step */
	if (lp->lp_state & LNET_PEER_DISCOVERING)
		return 0;
	lp->lp_state |= LNET_PEER_DISCOVERING;
	lp->lp_state &= ~(LNET_PEER_PING_FAILED | LNET_PEER_PUSH_FAILED);
	lp->lp_refcount++; /* dropped when it ends */
	lnet_peer_discovery_step_locked(ln, lp, q);
	return 0;
}

static void lnet_dc_handler(const struct ulnet_event *ev)
{
	struct lnet_dc_op *op = ev->md_user_ptr;
	ulnet_t *ln = op->ln;
	struct lnet_peer *lp = op->lp;
	char nid[ULNET_NIDSTR_SIZE];
	bool unlink_md = false;
	struct lnet_sendq q;

	lnet_sendq_init(&q);
	lnet_lock(ln);
	if (!op->finished && !lp->lp_removed && op->gen == lp->lp_dc_gen &&
	    (lp->lp_state & LNET_PEER_DISCOVERING)) {
		bool outcome = false;
		int status = ev->status;

		switch (ev->type) {
		case ULNET_EVENT_SEND:
			outcome = status != 0;
			break;
		case ULNET_EVENT_REPLY:
		case ULNET_EVENT_ACK:
			outcome = true;
			break;
		default: /* UNLINK: no response in time, or shutdown */
			outcome = true;
			if (!status)
				status = -ETIMEDOUT;
			break;
		}
		if (outcome) {
			op->finished = true;
			lp->lp_state &= ~(op->push ? LNET_PEER_PUSH_SENT : LNET_PEER_PING_SENT);
			if (status) {
				lnet_log(ln, ULNET_LOG_INFO, "discovery %s to %s failed: %s",
					 op->push ? "push" : "ping", lnet_nidstr(&lp->lp_primary, nid),
					 ulnet_strerror(status));
				lp->lp_state |= op->push ? LNET_PEER_PUSH_FAILED : LNET_PEER_PING_FAILED;
				lnet_peer_discovery_done_locked(ln, lp, status, &q);
				unlink_md = !ev->unlinked;
			} else if (!op->push) {
				struct lnet_ping_ni *nis = calloc(LNET_DC_MAX_NIS, sizeof(*nis));
				struct lnet_ping_info pi = { .nis = nis, .max_nis = LNET_DC_MAX_NIS };
				ssize_t dr = nis ? lnet_ping_info_decode(op->buf, ev->mlength, &pi) : -ENOMEM;
				int rc;

				if (dr < 0) {
					lnet_log(ln, ULNET_LOG_WARN, "invalid ping info from %s: %s",
						 lnet_nidstr(&lp->lp_primary, nid),
						 ulnet_strerror((int)dr));
					rc = dr == -ENOMEM ? -ENOMEM : -EPROTO;
				} else {
					rc = lnet_peer_merge_locked(ln, lp, &pi, ev->mlength, ev->rlength,
								    false);
				}
				free(nis);
				if (rc == -EAGAIN)
					lp->lp_state |= LNET_PEER_FORCE_PING; /* again, bigger */
				if (rc && rc != -EAGAIN)
					lnet_peer_discovery_done_locked(ln, lp, rc, &q);
				else
					lnet_peer_discovery_step_locked(ln, lp, &q);
			} else {
				/* our info is in: it knows our sequence number */
				lp->lp_node_seqno = op->seqno;
				lnet_peer_discovery_step_locked(ln, lp, &q);
			}
		}
	}
	if (ev->unlinked)
		lnet_dc_op_free_locked(ln, op);
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	/* a failed send leaves the MD waiting for a response that won't come */
	if (unlink_md)
		ulnet_md_unlink(ln, ev->md_handle);
}

/* --- entry points ----------------------------------------------------------------- */

int lnet_peer_discovery_queue_locked(ulnet_t *ln, struct lnet_peer *lp, struct lnet_msg *msg,
				     struct lnet_sendq *q)
{
	/* a failed start ends the discovery, which fails this message too */
	msg->msg_discovery_wait = 1;
	ln->ln_dc_waiting++;
	ul_list_add_tail(&msg->msg_list, &lp->lp_pending);
	lnet_peer_start_discovery_locked(ln, lp, false, q);
	return 1;
}

void lnet_push_update_to_peers_locked(ulnet_t *ln, struct lnet_sendq *q)
{
	struct ul_list *pos, *n;

	if (!ln->ln_g.discovery || ln->ln_state != LNET_STATE_RUNNING)
		return;
	ul_list_for_each_safe(pos, n, &ln->ln_peers) {
		struct lnet_peer *lp = ul_container_of(pos, struct lnet_peer, lp_list);

		/* every Multi-Rail peer behind our sequence, as the kernel: one
		 * whose last discovery failed too (a running discovery checks
		 * for itself at its next step) */
		if (!(lp->lp_state & LNET_PEER_DISCOVERING) && lnet_peer_needs_push_locked(ln, lp))
			lnet_peer_start_discovery_locked(ln, lp, false, q);
	}
}

void lnet_peer_push_event(ulnet_t *ln, const struct ulnet_event *ev, const uint8_t *data,
			  size_t len)
{
	struct lnet_ping_ni *nis = calloc(LNET_DC_MAX_NIS, sizeof(*nis));
	struct lnet_ping_info pi = { .nis = nis, .max_nis = LNET_DC_MAX_NIS };
	const struct lnet_ping_ni *primary;
	char nid[ULNET_NIDSTR_SIZE];
	struct lnet_peer_ni *lpni;
	struct lnet_peer *lp;
	struct lnet_sendq q;
	ssize_t dr;
	int rc;

	if (!nis)
		return;
	dr = lnet_ping_info_decode(data, len, &pi);
	lnet_sendq_init(&q);
	lnet_lock(ln);
	lpni = lnet_peer_ni_find_locked(ln, &ev->source.nid);
	if (!lpni || !lpni->lpni_peer) {
		lnet_log(ln, ULNET_LOG_INFO, "push from unknown peer %s ignored",
			 lnet_nidstr(&ev->source.nid, nid));
		goto out;
	}
	lp = lpni->lpni_peer;
	/* Sent from a NID we had not seen: the info's primary NID (its first
	 * NI, or first large NI with PRIMARY_LARGE) may name a peer we know.
	 * That peer is the one this describes, and it takes the new NID over
	 * (the temporary peer goes). */
	primary = dr >= 0 ? lnet_ping_info_primary(&pi) : NULL;
	if (primary) {
		struct lnet_peer_ni *prim = lnet_peer_ni_find_locked(ln, &primary->nid);

		if (prim && prim->lpni_peer && prim->lpni_peer != lp)
			lp = prim->lpni_peer;
	}
	if (dr >= 0 && !(pi.features & LNET_PING_FEAT_MULTI_RAIL)) {
		lnet_log(ln, ULNET_LOG_ERROR, "push from %s without the Multi-Rail feature dropped",
			 lnet_nidstr(&ev->source.nid, nid));
		goto out;
	}
	if (dr < 0) {
		lnet_log(ln, ULNET_LOG_WARN, "invalid push from %s (%s): pinging it instead",
			 lnet_nidstr(&ev->source.nid, nid), ulnet_strerror((int)dr));
		rc = -EAGAIN;
	} else {
		rc = lnet_peer_merge_locked(ln, lp, &pi, ev->mlength, ev->rlength, true);
	}
	if (rc) {
		/* truncated or invalid: learn it by pinging */
		lp->lp_state |= LNET_PEER_FORCE_PING;
		lp->lp_state &= ~LNET_PEER_NIDS_UPTODATE;
		lnet_peer_start_discovery_locked(ln, lp, false, &q);
	} else if (ln->ln_g.discovery && !lnet_peer_is_uptodate_locked(ln, lp)) {
		/* typically: it has not seen our info yet, push it */
		lnet_peer_start_discovery_locked(ln, lp, false, &q);
	}
out:
	lnet_unlock(ln);
	lnet_sendq_flush(ln, &q);
	free(nis);
}

static bool lnet_dc_over(void *arg)
{
	void **a = arg;
	struct lnet_peer *lp = a[0];
	unsigned gen = *(unsigned *)a[1];

	return lp->lp_removed || lp->lp_dc_gen != gen;
}

int ulnet_discover(ulnet_t *ln, const ulnet_nid_t *nid, bool force, int timeout_ms,
		   struct ulnet_ping_peer *out)
{
	struct lnet_peer_ni *lpni;
	struct lnet_peer *lp;
	struct lnet_sendq q;
	struct ul_list *pos;
	int rc = 0;

	if (!ln || !nid || ulnet_nid_is_any(nid))
		return -EINVAL;
	if (timeout_ms <= 0)
		timeout_ms = 1000 * (ln->ln_g.transaction_timeout + 1);
	if (lnet_nid_is_lo0(nid)) {
		/* the node itself, through 0@lo (sanity-lnet 217): what a
		 * ping of it says; no peer entry, as 0@lo never is one */
		ulnet_process_id_t self = { .nid = *nid, .pid = ULNET_PID_ANY };
		struct ulnet_ping_peer pp;

		return ulnet_ping(ln, self, NULL, 0, timeout_ms, out ? out : &pp);
	}
	lnet_sendq_init(&q);
	lnet_lock(ln);
	rc = lnet_check_reachable_locked(ln, NULL, nid);
	if (rc) {
		lnet_unlock(ln);
		return rc;
	}
	lpni = lnet_peer_ni_get_locked(ln, nid);
	if (!lpni || !lpni->lpni_peer) {
		lnet_unlock(ln);
		return -ENOMEM;
	}
	lp = lpni->lpni_peer;
	lp->lp_refcount++;
	if (force || !lnet_peer_is_uptodate_locked(ln, lp)) {
		unsigned gen = lp->lp_dc_gen;
		void *arg[2] = { lp, &gen };

		lnet_peer_start_discovery_locked(ln, lp, force, &q);
		lnet_unlock(ln);
		lnet_sendq_flush(ln, &q);
		lnet_lock(ln);
		rc = lnet_wait_locked(ln, lnet_dc_over, arg, timeout_ms);
		if (!rc)
			rc = lp->lp_removed ? -ENOENT : lp->lp_dc_error;
	}
	if (!rc && out) {
		memset(out, 0, sizeof(*out));
		out->primary = lp->lp_primary;
		out->multi_rail = (lp->lp_state & LNET_PEER_MULTI_RAIL) != 0;
		out->features = lp->lp_features;
		ul_list_for_each(pos, &lp->lp_nis) {
			struct lnet_peer_ni *p = ul_container_of(pos, struct lnet_peer_ni, lpni_peer_list);

			if (out->nnids >= (int)(sizeof(out->nids) / sizeof(out->nids[0])))
				break;
			out->nids[out->nnids] = p->lpni_nid;
			out->status[out->nnids] = p->lpni_ns_status;
			out->nnids++;
		}
	}
	lnet_peer_decref_locked(ln, lp);
	lnet_unlock(ln);
	return rc;
}
