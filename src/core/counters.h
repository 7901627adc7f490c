/* SPDX-License-Identifier: MIT */
/*
 * counters.h - the counters (counters.c): the latency sample of a peer NI,
 * inline for the completion paths.
 */
#ifndef ULNET_CORE_COUNTERS_H
#define ULNET_CORE_COUNTERS_H

#include <stdint.h>

#include "core/latency.h"
#include "core/peer.h"
#include "ulnet/ulnet.h"

/* Latency sample of a peer NI, lock held: `what` ULNET_EVENT_SEND (a PUT
 * left: put_egress), ULNET_EVENT_REPLY (get_rtt) or ULNET_EVENT_ACK
 * (put_ack); others are ignored. `start` is the instance clock when the
 * PUT/GET was committed, `now` the clock read for the completion; inline:
 * once or twice per message. */
static inline void lnet_peer_ni_latency_at_locked(struct lnet_peer_ni *lpni,
						  enum ulnet_event_kind what, uint64_t start,
						  uint64_t now)
{
	struct lnet_latency *l;

	if (!lpni || !start)
		return;
	switch (what) {
	case ULNET_EVENT_SEND:
		l = &lpni->lpni_put_egress;
		break;
	case ULNET_EVENT_REPLY:
		l = &lpni->lpni_get_rtt;
		break;
	case ULNET_EVENT_ACK:
		l = &lpni->lpni_put_ack;
		break;
	default:
		return;
	}
	lnet_latency_add(l, now > start ? now - start : 0);
}

#endif
