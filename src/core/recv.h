/* SPDX-License-Identifier: MIT */
/*
 * recv.h - the receive path (recv.c): handing a message to its LND's
 * recv(), receiving a PUT, and the match request an incoming PUT makes.
 */
#ifndef ULNET_CORE_RECV_H
#define ULNET_CORE_RECV_H

#include <stdbool.h>
#include <stdint.h>

#include "core/list.h"
#include "core/lnd.h"
#include "core/msg.h"
#include "core/ni.h"
#include "core/portal.h"
#include "ulnet/ulnet.h"

/* The LND calls (inline: once per message each); lnet_ni_send() is in send.h. */
static inline void lnet_ni_recv(struct lnet_ni *ni, void *priv, struct lnet_msg *msg, bool delayed,
				uint32_t offset, uint32_t mlen, uint32_t rlen)
{
	const struct iovec *iov = NULL;
	unsigned niov = 0;

	LASSERT(mlen == 0 || msg);
	if (msg) {
		LASSERT(msg->msg_receiving);
		msg->msg_receiving = 0;
		if (mlen) {
			iov = msg->msg_iov;
			niov = msg->msg_niov;
		}
	}
	ni->ni_lnd->recv(ni, priv, msg, delayed, iov, niov, offset, mlen, rlen);
}

void lnet_recv_put(struct lnet_ni *ni, struct lnet_msg *msg, bool delayed);

/* The match request an incoming PUT makes (parse, and lazy re-matching). */
static inline struct lnet_match_info lnet_put_match_info(const struct lnet_msg *msg)
{
	const struct lnet_hdr *hdr = &msg->msg_hdr;

	return (struct lnet_match_info){
		.mi_id = { .nid = msg->msg_initiator, .pid = hdr->src_pid },
		.mi_opc = ULNET_MD_OP_PUT,
		.mi_portal = hdr->msg.put.ptl_index,
		.mi_rlength = hdr->payload_length,
		.mi_roffset = hdr->msg.put.offset,
		.mi_mbits = hdr->msg.put.match_bits,
	};
}

#endif
