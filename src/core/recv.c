/* SPDX-License-Identifier: MIT */
/*
 * recv.c - the receive path: lnet_parse() and the handling of each
 * message type (matching a PUT or GET, generating its ACK or REPLY,
 * completing a request with its ACK or REPLY), and the LND's reports.
 */
#include <errno.h>
#include <string.h>

#include "core/fault.h"
#include "core/move.h"
#include "core/route.h"
#include "core/router.h"

static bool lnet_wire_handle_is_none(const lnet_wire_handle_t *wh)
{
	return wh->wh_interface_cookie == ~0ULL && wh->wh_object_cookie == ~0ULL;
}

/* --- receiving --------------------------------------------------------------------------- */

void lnet_recv_put(struct lnet_ni *ni, struct lnet_msg *msg, bool delayed)
{
	const struct lnet_hdr *hdr = &msg->msg_hdr;

	if (msg->msg_wanted)
		lnet_setpayloadbuffer(msg);
	lnet_build_msg_event(msg, ULNET_EVENT_PUT);
	/* ACK once the PUT is in, if asked and the MD allows it */
	msg->msg_ack = !lnet_wire_handle_is_none(&hdr->msg.put.ack_wmd) &&
		       !(msg->msg_md->md_options & ULNET_MD_ACK_DISABLE);
	lnet_ni_recv(ni, msg->msg_rx_private, msg, delayed, msg->msg_offset, msg->msg_wanted,
		     hdr->payload_length);
}

/* Called locked; returns unlocked. 0: handled; -ENOENT: drop. */
static int lnet_parse_put(ulnet_t *ln, struct lnet_ni *ni, struct lnet_msg *msg, bool delayed)
{
	struct lnet_match_info info = lnet_put_match_info(msg);
	char nid[ULNET_NIDSTR_SIZE];
	int rc;

	rc = lnet_ptl_match_md_locked(ln, &info, msg);
	lnet_unlock(ln);
	switch (rc) {
	case LNET_MATCHMD_OK:
		lnet_recv_put(ni, msg, delayed);
		return 0;
	case LNET_MATCHMD_NONE:
		/* parked on a lazy portal: recv comes with the MD */
		return 0;
	default:
		lnet_log(ln, ULNET_LOG_INFO,
			 "dropping PUT from %s pid %u portal %u match %#llx offset %u length %u: no match",
			 lnet_nidstr(&info.mi_id.nid, nid), info.mi_id.pid, info.mi_portal,
			 (unsigned long long)info.mi_mbits, info.mi_roffset, info.mi_rlength);
		return -ENOENT;
	}
}

static int lnet_parse_get(ulnet_t *ln, struct lnet_ni *ni, struct lnet_msg *msg, bool delayed)
{
	struct lnet_hdr *hdr = &msg->msg_hdr;
	struct lnet_match_info info = {
		.mi_id = { .nid = msg->msg_initiator, .pid = hdr->src_pid },
		.mi_opc = ULNET_MD_OP_GET,
		.mi_portal = hdr->msg.get.ptl_index,
		.mi_rlength = hdr->msg.get.sink_length,
		.mi_roffset = hdr->msg.get.src_offset,
		.mi_mbits = hdr->msg.get.match_bits,
	};
	ulnet_process_id_t source = { .nid = hdr->src_nid, .pid = hdr->src_pid };
	ulnet_nid_t self = ni->ni_nid;
	lnet_wire_handle_t reply_wmd;
	char nid[ULNET_NIDSTR_SIZE];
	int rc;

	rc = lnet_ptl_match_md_locked(ln, &info, msg);
	if (rc != LNET_MATCHMD_OK) {
		lnet_unlock(ln);
		lnet_log(ln, ULNET_LOG_INFO,
			 "dropping GET from %s pid %u portal %u match %#llx offset %u length %u: no match",
			 lnet_nidstr(&info.mi_id.nid, nid), info.mi_id.pid, info.mi_portal,
			 (unsigned long long)info.mi_mbits, info.mi_roffset, info.mi_rlength);
		return -ENOENT;
	}
	lnet_build_msg_event(msg, ULNET_EVENT_GET);
	reply_wmd = hdr->msg.get.return_wmd;
	/* the GET becomes its REPLY, right after matching */
	lnet_prep_send(ln, msg, ULNET_MSG_REPLY, &source, msg->msg_offset, msg->msg_wanted);
	msg->msg_hdr.msg.reply.dst_wmd = reply_wmd;
	lnet_unlock(ln);

	if (msg->msg_rdma_get) {
		/* the LND writes the REPLY's bytes into the requester's
		 * buffer and finalizes it: no REPLY message (lnd.h) */
		lnet_ni_recv(ni, msg->msg_rx_private, msg, delayed, msg->msg_offset,
			     msg->msg_wanted, msg->msg_wanted);
		return 0;
	}

	/* the GET carries no payload: the LND is done with it */
	lnet_ni_recv(ni, msg->msg_rx_private, NULL, delayed, 0, 0, 0);
	msg->msg_receiving = 0;
	msg->msg_rx_private = NULL;

	rc = lnet_send(ln, &self, msg);
	if (rc < 0) {
		lnet_log(ln, ULNET_LOG_ERROR, "%s: can't send REPLY for GET from %s: %s",
			 lnet_nidstr(&self, nid), lnet_nidstr(&source.nid, nid),
			 ulnet_strerror(rc));
		lnet_finalize_core(msg, rc);
	}
	return 0;
}

static int lnet_parse_reply(ulnet_t *ln, struct lnet_ni *ni, struct lnet_msg *msg, bool delayed)
{
	const struct lnet_hdr *hdr = &msg->msg_hdr;
	struct lnet_libmd *md;
	char nid[ULNET_NIDSTR_SIZE], nid2[ULNET_NIDSTR_SIZE];
	uint32_t rlength, mlength;

	md = lnet_wire_handle2md_locked(ln, &hdr->msg.reply.dst_wmd);
	if (!md || md->md_threshold == 0 || md->md_me) {
		lnet_unlock(ln);
		lnet_log(ln, ULNET_LOG_INFO, "%s: dropping REPLY from %s for %s MD %#llx.%#llx",
			 lnet_nidstr(&ni->ni_nid, nid), lnet_nidstr(&hdr->src_nid, nid2),
			 md ? "inactive" : "invalid",
			 (unsigned long long)hdr->msg.reply.dst_wmd.wh_interface_cookie,
			 (unsigned long long)hdr->msg.reply.dst_wmd.wh_object_cookie);
		return -ENOENT;
	}
	rlength = hdr->payload_length;
	mlength = rlength < md->md_length ? rlength : (uint32_t)md->md_length;
	if (mlength < rlength && !(md->md_options & ULNET_MD_TRUNCATE)) {
		lnet_unlock(ln);
		lnet_log(ln, ULNET_LOG_WARN,
			 "%s: dropping REPLY from %s length %u for MD %#llx: would overflow (%u)",
			 lnet_nidstr(&ni->ni_nid, nid), lnet_nidstr(&hdr->src_nid, nid2), rlength,
			 (unsigned long long)hdr->msg.reply.dst_wmd.wh_object_cookie, mlength);
		return -ENOENT;
	}
	lnet_msg_attach_md(msg, md, 0, mlength);
	if (mlength)
		lnet_setpayloadbuffer(msg);
	lnet_build_msg_event(msg, ULNET_EVENT_REPLY);
	lnet_unlock(ln);
	lnet_ni_recv(ni, msg->msg_rx_private, msg, delayed, 0, mlength, rlength);
	return 0;
}

/* --- the REPLY an RDMA-capable LND elides (lnd.h) ---------------------------------------- */

struct lnet_msg *lnet_create_reply_msg(struct lnet_ni *ni, struct lnet_msg *getmsg)
{
	ulnet_t *ln = ni->ni_ln;
	struct lnet_libmd *md = getmsg->msg_md;
	const ulnet_process_id_t *peer = &getmsg->msg_target;
	char nid[ULNET_NIDSTR_SIZE], nid2[ULNET_NIDSTR_SIZE];
	struct lnet_msg *msg;

	LASSERT(getmsg->msg_type == ULNET_MSG_GET && md && !getmsg->msg_routed &&
		!getmsg->msg_forward);
	lnet_lock(ln);
	/* spent, unlinked or timed out: nothing may be written into it */
	if (md->md_threshold == 0 || (md->md_flags & (LNET_MD_FLAG_ZOMBIE | LNET_MD_FLAG_ABORTED))) {
		lnet_unlock(ln);
		lnet_log(ln, ULNET_LOG_ERROR, "%s: dropping REPLY from %s for inactive MD %#llx",
			 lnet_nidstr(&ni->ni_nid, nid), lnet_nidstr(&peer->nid, nid2),
			 (unsigned long long)md->md_cookie);
		goto drop;
	}
	msg = lnet_msg_alloc_locked(ln);
	if (!msg) {
		lnet_unlock(ln);
		lnet_log(ln, ULNET_LOG_ERROR, "%s: dropping REPLY from %s: out of memory",
			 lnet_nidstr(&ni->ni_nid, nid), lnet_nidstr(&peer->nid, nid2));
		goto drop;
	}
	/* what lnet_build_msg_event() reads of a received REPLY: it came
	 * from the GET's target, whose primary NID is the initiator */
	/* its REPLY is this message: the GET must not be resent (msg.c) */
	getmsg->msg_rdma_get = 1;
	msg->msg_type = ULNET_MSG_REPLY;
	msg->msg_receiving = 1;
	msg->msg_from = peer->nid;
	msg->msg_initiator = peer->nid;
	if (getmsg->msg_txpeer && getmsg->msg_txpeer->lpni_peer)
		msg->msg_initiator = getmsg->msg_txpeer->lpni_peer->lp_primary;
	memset(&msg->msg_hdr, 0, sizeof(msg->msg_hdr));
	msg->msg_hdr.type = ULNET_MSG_REPLY;
	msg->msg_hdr.src_nid = peer->nid;
	msg->msg_hdr.src_pid = peer->pid;
	msg->msg_hdr.dest_nid = ni->ni_nid;
	msg->msg_hdr.dest_pid = ln->ln_pid;
	msg->msg_hdr.payload_length = (uint32_t)md->md_length;
	msg->msg_hdr.msg.reply.dst_wmd = getmsg->msg_hdr.msg.get.return_wmd;
	msg->msg_len = (uint32_t)md->md_length;
	/* counted as a REPLY received on this NI from that peer NI, as one
	 * that arrived as a message is */
	msg->msg_rxni = ni;
	lnet_ni_addref_locked(ni);
	if (getmsg->msg_txpeer) {
		msg->msg_rxpeer = getmsg->msg_txpeer;
		lnet_peer_ni_addref_locked(msg->msg_rxpeer);
	}
	lnet_msg_attach_md(msg, md, 0, (uint32_t)md->md_length);
	lnet_msg_commit_locked(ln, msg, false);
	lnet_build_msg_event(msg, ULNET_EVENT_REPLY);
	lnet_unlock(ln);
	return msg;

drop:
	lnet_lock(ln);
	ln->ln_ctr.drop_count++;
	ln->ln_ctr.drop_length += md->md_length;
	lnet_count_type(&ni->ni_dropped, &ni->ni_dropped_bytes, ULNET_MSG_GET, md->md_length);
	lnet_unlock(ln);
	return NULL;
}

int lnet_set_reply_msg_len(struct lnet_ni *ni, struct lnet_msg *reply, size_t len)
{
	char nid[ULNET_NIDSTR_SIZE], nid2[ULNET_NIDSTR_SIZE];

	LASSERT(reply->msg_type == ULNET_MSG_REPLY && reply->msg_ev.type == ULNET_EVENT_REPLY);
	/* the peer was given our buffer: more than it holds is a lie (the
	 * kernel asserts; a peer's word must not stop the node) */
	if (len > reply->msg_ev.mlength) {
		lnet_log(ni->ni_ln, ULNET_LOG_ERROR,
			 "%s: REPLY from %s says %zu bytes, its buffer holds %u",
			 lnet_nidstr(&ni->ni_nid, nid), lnet_nidstr(&reply->msg_from, nid2), len,
			 reply->msg_ev.mlength);
		return -EPROTO;
	}
	reply->msg_wanted = (uint32_t)len;
	reply->msg_ev.mlength = (uint32_t)len;
	return 0;
}

static int lnet_parse_ack(ulnet_t *ln, struct lnet_ni *ni, struct lnet_msg *msg, bool delayed)
{
	const struct lnet_hdr *hdr = &msg->msg_hdr;
	struct lnet_libmd *md;
	char nid[ULNET_NIDSTR_SIZE], nid2[ULNET_NIDSTR_SIZE];

	md = lnet_wire_handle2md_locked(ln, &hdr->msg.ack.dst_wmd);
	if (!md || md->md_threshold == 0 || md->md_me) {
		lnet_unlock(ln);
		/* expected after a timeout or an unlink: no noise */
		lnet_log(ln, ULNET_LOG_DEBUG, "%s: dropping ACK from %s to %s MD %#llx.%#llx",
			 lnet_nidstr(&ni->ni_nid, nid), lnet_nidstr(&hdr->src_nid, nid2),
			 md ? "inactive" : "invalid",
			 (unsigned long long)hdr->msg.ack.dst_wmd.wh_interface_cookie,
			 (unsigned long long)hdr->msg.ack.dst_wmd.wh_object_cookie);
		return -ENOENT;
	}
	lnet_msg_attach_md(msg, md, 0, 0);
	lnet_build_msg_event(msg, ULNET_EVENT_ACK);
	lnet_unlock(ln);
	lnet_ni_recv(ni, msg->msg_rx_private, msg, delayed, 0, 0, msg->msg_len);
	return 0;
}

static void lnet_drop_message(ulnet_t *ln, struct lnet_ni *ni, void *priv, uint32_t nob,
			      uint32_t type, bool delayed)
{
	lnet_lock(ln);
	ln->ln_ctr.drop_count++;
	ln->ln_ctr.drop_length += nob;
	type = type <= ULNET_MSG_HELLO ? type : 0;
	lnet_count_type(&ni->ni_dropped, &ni->ni_dropped_bytes, type, nob);
	lnet_unlock(ln);
	/* the LND still reads and discards the payload */
	lnet_ni_recv(ni, priv, NULL, delayed, 0, 0, nob);
}

/* A committed message for us, by type (called locked, returns unlocked);
 * `delayed`: a delay rule held it, recv() comes late. A failure frees it
 * and has the LND discard its payload. */
static void lnet_parse_local(ulnet_t *ln, struct lnet_ni *ni, struct lnet_msg *msg, bool delayed)
{
	void *rx_private = msg->msg_rx_private;
	uint32_t plen = msg->msg_len, type = msg->msg_type;
	int rc;

	switch (type) {
	case ULNET_MSG_ACK:
		rc = lnet_parse_ack(ln, ni, msg, delayed);
		break;
	case ULNET_MSG_PUT:
		rc = lnet_parse_put(ln, ni, msg, delayed);
		break;
	case ULNET_MSG_GET:
		rc = lnet_parse_get(ln, ni, msg, delayed);
		break;
	default:
		rc = lnet_parse_reply(ln, ni, msg, delayed);
		break;
	}
	if (rc == 0)
		return;
	/* no match: free it (no MD, so no event), then have the LND
	 * discard the payload */
	LASSERT(!msg->msg_md);
	lnet_finalize_core(msg, rc);
	lnet_drop_message(ln, ni, rx_private, plen, type, delayed);
}

void lnet_parse_resume(struct lnet_msg *msg)
{
	ulnet_t *ln = msg->msg_ln;

	lnet_lock(ln);
	lnet_parse_local(ln, msg->msg_rxni, msg, true);
}

/* A drop rule drops what arrives (simulated silent loss): before anything
 * is allocated, as the kernel. */
static bool lnet_parse_fault_drop(ulnet_t *ln, struct lnet_ni *ni, const struct lnet_hdr *hdr,
				  const ulnet_nid_t *from_nid)
{
	char fnid[ULNET_NIDSTR_SIZE], snid[ULNET_NIDSTR_SIZE], dnid[ULNET_NIDSTR_SIZE];

	if (__builtin_expect(!lnet_fault_any(ln, ULNET_FAULT_DROP), 1) ||
	    !lnet_fault_drop_recv(ln, hdr, &ni->ni_nid))
		return false;
	lnet_log(ln, ULNET_LOG_DEBUG, "%s, src %s, dst %s: dropping %s to simulate silent message loss",
		 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
		 lnet_nidstr(&hdr->dest_nid, dnid), lnet_msgtyp2str(hdr->type));
	return true;
}

int lnet_parse(struct lnet_ni *ni, const struct lnet_hdr *hdr, const ulnet_nid_t *from_nid,
	       void *rx_private, bool rdma_req)
{
	ulnet_t *ln = ni->ni_ln;
	uint32_t type = hdr->type, plen = hdr->payload_length;
	bool for_me = lnet_nid_eq(&ni->ni_nid, &hdr->dest_nid);
	char fnid[ULNET_NIDSTR_SIZE], snid[ULNET_NIDSTR_SIZE], dnid[ULNET_NIDSTR_SIZE];
	struct lnet_msg *msg;
	int rc;

	switch (type) {
	case ULNET_MSG_ACK:
	case ULNET_MSG_GET:
		if (plen > 0) {
			lnet_log(ln, ULNET_LOG_ERROR, "%s, src %s: bad %s payload %u (0 expected)",
				 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
				 lnet_msgtyp2str(type), plen);
			return -EPROTO;
		}
		break;
	case ULNET_MSG_PUT:
	case ULNET_MSG_REPLY:
		if (plen > ULNET_MTU) {
			lnet_log(ln, ULNET_LOG_ERROR, "%s, src %s: bad %s payload %u (%u max expected)",
				 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
				 lnet_msgtyp2str(type), plen, ULNET_MTU);
			return -EPROTO;
		}
		break;
	default:
		lnet_log(ln, ULNET_LOG_ERROR, "%s, src %s: bad message type %#x",
			 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid), type);
		return -EPROTO;
	}

	if (!for_me) {
		bool local;

		if (ulnet_nid_net(&hdr->dest_nid) == ulnet_nid_net(&ni->ni_nid)) {
			lnet_log(ln, ULNET_LOG_ERROR,
				 "%s, src %s: bad dest nid %s (should have been sent direct)",
				 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
				 lnet_nidstr(&hdr->dest_nid, dnid));
			return -EPROTO;
		}
		lnet_lock(ln);
		local = lnet_nid_is_local_locked(ln, &hdr->dest_nid);
		lnet_unlock(ln);
		if (local) {
			lnet_log(ln, ULNET_LOG_ERROR,
				 "%s, src %s: bad dest nid %s (it's my nid but on a different network)",
				 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
				 lnet_nidstr(&hdr->dest_nid, dnid));
			return -EPROTO;
		}
		if (rdma_req && type == ULNET_MSG_GET) {
			/* its REPLY would be written by this hop, not by the
			 * node that has the data */
			lnet_log(ln, ULNET_LOG_ERROR,
				 "%s, src %s: bad optimized GET for %s (final destination must be me)",
				 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
				 lnet_nidstr(&hdr->dest_nid, dnid));
			return -EPROTO;
		}
		if (lnet_parse_fault_drop(ln, ni, hdr, from_nid))
			goto drop;
		if (lnet_parse_forward(ni, hdr, from_nid, rx_private) == 0)
			return 0;
		goto drop;
	}
	if (lnet_parse_fault_drop(ln, ni, hdr, from_nid))
		goto drop;

	/* from here on the LND's recv() is called, come what may */
	lnet_lock(ln);
	if (ln->ln_state != LNET_STATE_RUNNING || !ni->ni_up) {
		lnet_unlock(ln);
		goto drop;
	}
	msg = lnet_msg_alloc_locked(ln);
	if (!msg) {
		lnet_unlock(ln);
		lnet_log(ln, ULNET_LOG_ERROR, "%s, src %s: dropping %s (out of memory)",
			 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
			 lnet_msgtyp2str(type));
		goto drop;
	}
	msg->msg_type = type;
	msg->msg_rx_private = rx_private;
	msg->msg_receiving = 1;
	msg->msg_rdma_get = rdma_req && type == ULNET_MSG_GET;
	msg->msg_len = msg->msg_wanted = plen;
	msg->msg_offset = 0;
	msg->msg_hdr = *hdr;
	msg->msg_from = *from_nid;
	msg->msg_rxni = ni;
	lnet_ni_addref_locked(ni);
	/* Multi-Rail: match on the peer's primary NID */
	msg->msg_initiator = hdr->src_nid;
	if (ni != ln->ln_loni) {
		struct lnet_peer_ni *lpni = lnet_peer_ni_get_locked(ln, from_nid);

		if (lpni) {
			lpni->lpni_ns_status = LNET_NI_STATUS_UP;
			lpni->lpni_last_alive = lnet_now(ln);
			msg->msg_rxpeer = lpni;
			lnet_peer_ni_addref_locked(lpni);
		}
		/* The sender is the initiator unless routed: then the entry
		 * just found is the one to ask, no second lookup. */
		if (lpni && lnet_nid_eq(from_nid, &hdr->src_nid)) {
			if (lpni->lpni_peer)
				msg->msg_initiator = lpni->lpni_peer->lp_primary;
		} else {
			lnet_peer_primary_nid_locked(ln, &hdr->src_nid, &msg->msg_initiator);
			/* routed to us: with drop_asym_route, only through a
			 * gateway we would use to reach its source's net */
			if (__builtin_expect(ln->ln_g.drop_asym_route, 0) && lpni && lpni->lpni_peer &&
			    ulnet_nid_net(&hdr->src_nid) != ulnet_nid_net(from_nid) &&
			    !lnet_route_via_gw_locked(ln, ulnet_nid_net(&hdr->src_nid), lpni->lpni_peer)) {
				lnet_msg_commit_locked(ln, msg, false);
				lnet_unlock(ln);
				lnet_log(ln, ULNET_LOG_ERROR, "%s, src %s: dropping asymmetrical route %s",
					 lnet_nidstr(from_nid, fnid), lnet_nidstr(&hdr->src_nid, snid),
					 lnet_msgtyp2str(type));
				rc = -EACCES;   /* counted as a drop below */
				goto fail;
			}
		}
	}
	lnet_msg_commit_locked(ln, msg, false);
	/* a router hears a node on this net: the net is alive (a router that
	 * had reported it down says so again, before this ping is answered) */
	if (__builtin_expect(ln->ln_routing != ULNET_ROUTING_DISABLED, 0) &&
	    type == ULNET_MSG_GET && hdr->msg.get.ptl_index == ULNET_RESERVED_PORTAL &&
	    ni != ln->ln_loni && lnet_router_ping_heard_locked(ln, ni)) {
		lnet_unlock(ln);
		(void)lnet_ping_target_update(ln);
		lnet_lock(ln);
	}

	/* a delay rule holds it: lnet_parse_resume() goes on later */
	if (__builtin_expect(lnet_fault_any(ln, ULNET_FAULT_DELAY), 0) &&
	    lnet_fault_delay_locked(ln, msg)) {
		lnet_unlock(ln);
		return 0;
	}
	lnet_parse_local(ln, ni, msg, false);
	return 0;
fail:
	LASSERT(!msg->msg_md);
	lnet_finalize_core(msg, rc);
drop:
	lnet_drop_message(ln, ni, rx_private, plen, type, false);
	return 0;
}

void lnet_notify_peer_ni(struct lnet_ni *ni, const ulnet_nid_t *peer, int status)
{
	ulnet_t *ln = ni->ni_ln;
	char nid[ULNET_NIDSTR_SIZE];
	struct lnet_peer_ni *lpni;

	if (!status)
		return;
	/* Health is the messages' (lnet_health_check_locked(), msg.c): a
	 * connection failure with messages queued fails them, and each
	 * failed message counts, as in the kernel, whose lnet_notify()
	 * leaves peer NI health alone. What it does change is aliveness:
	 * the peer NI is down until we hear from it again. */
	lnet_lock(ln);
	lpni = lnet_peer_ni_find_locked(ln, peer);
	if (lpni)
		lpni->lpni_ns_status = LNET_NI_STATUS_DOWN;
	lnet_unlock(ln);
	lnet_log(ln, ULNET_LOG_INFO, "peer NI %s reported failed: %s",
		 lnet_nidstr(peer, nid), ulnet_strerror(status));
}
