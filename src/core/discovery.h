/* SPDX-License-Identifier: MIT */
/*
 * discovery.h - peer discovery (discovery.c): the ping and push of a peer,
 * incoming pushes, and whether a message waits for the discovery of its
 * destination.
 */
#ifndef ULNET_CORE_DISCOVERY_H
#define ULNET_CORE_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/instance.h"
#include "core/msg.h"
#include "core/peer.h"
#include "ulnet/ulnet.h"

/* Incoming push (event on the push target MD). */
void lnet_peer_push_event(ulnet_t *ln, const struct ulnet_event *ev, const uint8_t *data,
			  size_t len);
/* Queue `msg` on `lp` until discovered, starting discovery: 1. */
int lnet_peer_discovery_queue_locked(ulnet_t *ln, struct lnet_peer *lp, struct lnet_msg *msg,
				     struct lnet_sendq *q);
/* Traffic on portal 0 is what discovery itself uses, and responses carry no
 * portal: neither waits for discovery. */
static inline bool lnet_msg_discovery(const struct lnet_msg *msg)
{
	switch (msg->msg_type) {
	case ULNET_MSG_PUT:
		return msg->msg_hdr.msg.put.ptl_index != ULNET_RESERVED_PORTAL;
	case ULNET_MSG_GET:
		return msg->msg_hdr.msg.get.ptl_index != ULNET_RESERVED_PORTAL;
	default:
		return false;
	}
}

static inline bool lnet_peer_needs_push_locked(ulnet_t *ln, const struct lnet_peer *lp)
{
	if (!(lp->lp_state & LNET_PEER_MULTI_RAIL))
		return false;
	if (lp->lp_state & LNET_PEER_FORCE_PUSH)
		return true;
	if ((lp->lp_state & LNET_PEER_NO_DISCOVERY) || !ln->ln_g.discovery)
		return false;
	return lp->lp_node_seqno < ln->ln_ping_seqno;
}

static inline bool lnet_peer_is_uptodate_locked(ulnet_t *ln, const struct lnet_peer *lp)
{
	const unsigned want = LNET_PEER_DISCOVERED | LNET_PEER_NIDS_UPTODATE;

	if (lp->lp_state & (LNET_PEER_DISCOVERING | LNET_PEER_FORCE_PING | LNET_PEER_FORCE_PUSH |
			    LNET_PEER_REDISCOVER))
		return false;
	if (lnet_peer_needs_push_locked(ln, lp))
		return false;
	return (lp->lp_state & want) == want;
}

/* Does sending `msg` to `lpni` have to wait for discovery? If so it is
 * queued on the peer (discovery started if needed): 1. 0: send it now.
 * <0: discovery could not start. Lock held; sends go to `q`. Inline, with
 * the tests above: every PUT/GET asks. */
static inline int lnet_peer_discovery_hold_locked(ulnet_t *ln, struct lnet_peer_ni *lpni,
						  struct lnet_msg *msg, struct lnet_sendq *q)
{
	struct lnet_peer *lp = lpni->lpni_peer;

	if (!lp || !ln->ln_g.discovery || !lnet_msg_discovery(msg))
		return 0;
	if (lnet_peer_is_uptodate_locked(ln, lp))
		return 0;
	return lnet_peer_discovery_queue_locked(ln, lp, msg, q);
}
/* Start discovery of `lp` unless running (lock held); sends go to `q`. */
int lnet_peer_start_discovery_locked(ulnet_t *ln, struct lnet_peer *lp, bool force,
				     struct lnet_sendq *q);
/* Our ping info changed: push it to the Multi-Rail peers (lock held). */
void lnet_push_update_to_peers_locked(ulnet_t *ln, struct lnet_sendq *q);
/* A peer goes away: forget its discovery (lock held). */
void lnet_peer_cancel_discovery_locked(ulnet_t *ln, struct lnet_peer *lp);

#endif
