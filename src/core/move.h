/* SPDX-License-Identifier: MIT */
/*
 * move.h - what the send path (send.c) and the receive path (recv.c)
 * share: small helpers inlined on both.
 */
#ifndef ULNET_CORE_MOVE_H
#define ULNET_CORE_MOVE_H

#include "core/core.h"

static inline bool lnet_msg_is_response(const struct lnet_msg *msg)
{
	return msg->msg_type == ULNET_MSG_ACK || msg->msg_type == ULNET_MSG_REPLY;
}

static inline const char *lnet_msgtyp2str(uint32_t type)
{
	switch (type) {
	case ULNET_MSG_ACK: return "ACK";
	case ULNET_MSG_PUT: return "PUT";
	case ULNET_MSG_GET: return "GET";
	case ULNET_MSG_REPLY: return "REPLY";
	case ULNET_MSG_HELLO: return "HELLO";
	default: return "<UNKNOWN>";
	}
}

/* The event of a message, from its header. Inlined with a constant `type`
 * (both paths call it once per message): each caller gets only its case. */
static inline __attribute__((always_inline)) void
lnet_build_msg_event(struct lnet_msg *msg, enum ulnet_event_kind type)
{
	const struct lnet_hdr *hdr = &msg->msg_hdr;
	struct ulnet_event *ev = &msg->msg_ev;

	ev->type = type;
	ev->msg_type = (enum ulnet_msg_type)msg->msg_type;
	if (type == ULNET_EVENT_SEND) {
		/* active side: the target as asked; we are the initiator */
		ev->target.nid = hdr->dest_nid;
		ev->target.pid = hdr->dest_pid;
		ev->initiator.nid = ULNET_NID_ANY;
		ev->initiator.pid = hdr->src_pid;
		ev->source.nid = ULNET_NID_ANY;
		ev->source.pid = hdr->src_pid;
		ev->sender = ULNET_NID_ANY;
	} else {
		ev->target.nid = hdr->dest_nid;
		ev->target.pid = hdr->dest_pid;
		ev->initiator.nid = msg->msg_initiator;
		ev->initiator.pid = hdr->src_pid;
		ev->source.nid = hdr->src_nid;
		ev->source.pid = hdr->src_pid;
		ev->rlength = hdr->payload_length;
		ev->sender = msg->msg_from;
		ev->mlength = msg->msg_wanted;
		ev->offset = msg->msg_offset;
	}

	switch (type) {
	case ULNET_EVENT_PUT:
		ev->pt_index = hdr->msg.put.ptl_index;
		ev->match_bits = hdr->msg.put.match_bits;
		ev->hdr_data = hdr->msg.put.hdr_data;
		break;
	case ULNET_EVENT_GET:
		ev->pt_index = hdr->msg.get.ptl_index;
		ev->match_bits = hdr->msg.get.match_bits;
		ev->hdr_data = 0;
		break;
	case ULNET_EVENT_ACK:
		ev->pt_index = 0;
		ev->match_bits = hdr->msg.ack.match_bits;
		ev->mlength = hdr->msg.ack.mlength;
		ev->hdr_data = 0;
		break;
	case ULNET_EVENT_REPLY:
		ev->pt_index = 0;
		ev->match_bits = 0;
		ev->hdr_data = 0;
		break;
	case ULNET_EVENT_SEND:
		if (msg->msg_type == ULNET_MSG_PUT) {
			ev->pt_index = hdr->msg.put.ptl_index;
			ev->match_bits = hdr->msg.put.match_bits;
			ev->offset = hdr->msg.put.offset;
			ev->mlength = ev->rlength = hdr->payload_length;
			ev->hdr_data = hdr->msg.put.hdr_data;
		} else {
			ev->pt_index = hdr->msg.get.ptl_index;
			ev->match_bits = hdr->msg.get.match_bits;
			ev->mlength = ev->rlength = hdr->msg.get.sink_length;
			ev->offset = hdr->msg.get.src_offset;
			ev->hdr_data = 0;
		}
		break;
	default:
		LASSERT(0);
	}
}

#endif
