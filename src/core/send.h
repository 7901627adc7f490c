/* SPDX-License-Identifier: MIT */
/*
 * send.h - the send path (send.c): preparing and sending a message, NI and
 * peer credits, handing ready messages to their LNDs (lnet_sendq_flush()),
 * response tracking, PUT and GET.
 */
#ifndef ULNET_CORE_SEND_H
#define ULNET_CORE_SEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/instance.h"
#include "core/list.h"
#include "core/lnd.h"
#include "core/lnet_hdr.h"
#include "core/md.h"
#include "core/msg.h"
#include "core/ni.h"
#include "core/peer.h"
#include "ulnet/ulnet.h"
#include "util/evloop.h"

static inline void lnet_setpayloadbuffer(struct lnet_msg *msg)
{
	LASSERT(msg->msg_md);
	msg->msg_iov = msg->msg_md->md_iov;
	msg->msg_niov = msg->msg_md->md_niov;
}

/* lnet_prep_send() writes every byte of the header: no padding between
 * the fields it sets. */
_Static_assert(sizeof(struct lnet_hdr) ==
		       offsetof(struct lnet_hdr, msg) + sizeof(((struct lnet_hdr *)0)->msg) &&
	       offsetof(struct lnet_hdr, msg) == 2 * sizeof(ulnet_nid_t) + 4 * sizeof(uint32_t),
	       "struct lnet_hdr has no padding");

/* The header and the fields of a message about to be sent (inline: once
 * per message sent). */
static inline void lnet_prep_send(ulnet_t *ln, struct lnet_msg *msg, uint32_t type,
				  const ulnet_process_id_t *target, uint32_t offset, uint32_t len)
{
	msg->msg_type = type;
	msg->msg_target = *target;
	msg->msg_len = len;
	msg->msg_offset = offset;
	msg->msg_iov = NULL;
	msg->msg_niov = 0;
	if (len)
		lnet_setpayloadbuffer(msg);
	/* field by field: a memset of the whole header is a `rep stos` */
	msg->msg_hdr.type = type;
	/* dest_nid is the peer NI chosen later; src_nid the local NI */
	msg->msg_hdr.dest_nid = target->nid;
	memset(&msg->msg_hdr.src_nid, 0, sizeof(msg->msg_hdr.src_nid));
	msg->msg_hdr.dest_pid = target->pid;
	msg->msg_hdr.src_pid = ln->ln_pid;
	msg->msg_hdr.payload_length = len;
	memset(&msg->msg_hdr.msg, 0, sizeof(msg->msg_hdr.msg));
	/* a new hand-over to an LND begins */
	__atomic_store_n(&msg->msg_finalized, 0, __ATOMIC_RELEASE);
}

/* Send a prepared message from `src` (NULL/ANY: choose). Returns 0 (sent,
 * queued for credits or for discovery) or -errno (not sent; the caller
 * finalizes). */
int lnet_send(ulnet_t *ln, const ulnet_nid_t *src, struct lnet_msg *msg);
/* The same with the lock held; ready messages go on `q`. */
int lnet_send_locked(ulnet_t *ln, const ulnet_nid_t *src, struct lnet_msg *msg,
		     struct lnet_sendq *q);
/* `now`: the clock if the caller read it (messages released from the
 * credit queues check their deadline), else 0. */
/* A credit came back to a queue of waiting messages: post its first. */
void lnet_release_delayed_locked(ulnet_t *ln, struct ul_list *queue, struct lnet_sendq *q,
				 uint64_t now);
/* Inline: once per message sent; a call only when a message waits. */
static inline void lnet_return_tx_credits_locked(ulnet_t *ln, struct lnet_msg *msg,
						 struct lnet_sendq *q, uint64_t now)
{
	if (msg->msg_txcredit) {
		struct lnet_ni *ni = msg->msg_txni;

		msg->msg_txcredit = 0;
		ni->ni_tx_credits++;
		/* the queue may have been emptied by a shutdown */
		if (ni->ni_tx_credits <= 0 && !ul_list_empty(&ni->ni_tx_delayed))
			lnet_release_delayed_locked(ln, &ni->ni_tx_delayed, q, now);
	}
	if (msg->msg_peertxcredit) {
		struct lnet_peer_ni *lp = msg->msg_txpeer;

		msg->msg_peertxcredit = 0;
		lp->lpni_txqnob -= msg->msg_len + LNET_HDR_NID4_SIZE;
		lp->lpni_txcredits++;
		if (lp->lpni_txcredits <= 0 && !ul_list_empty(&lp->lpni_txq))
			lnet_release_delayed_locked(ln, &lp->lpni_txq, q, now);
	}
}
/* The LND calls (inline: once per message each); lnet_ni_recv() is in recv.h. */
static inline void lnet_ni_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	ni->ni_lnd->send(ni, msg);
}

void lnet_fwd_recv_ready(struct lnet_msg *msg);   /* router.c */

bool lnet_fault_send_error(ulnet_t *ln, struct lnet_msg *msg, int *status);   /* fault.c */

/* Hand the ready messages to their LNDs, fail the others (inline: a few
 * times per message). A drop rule with health errors fails a message
 * here, as its LND would (the kernel's lnet_send_error_simulation()). */
static inline void lnet_sendq_flush(ulnet_t *ln, struct lnet_sendq *q)
{
	struct lnet_msg *msg;

	while ((msg = ul_list_first(&q->sq_send, struct lnet_msg, msg_list))) {
		int status;

		ul_list_del(&msg->msg_list);
		if (__builtin_expect(__atomic_load_n(&ln->ln_fault_nhealth, __ATOMIC_RELAXED) != 0, 0) &&
		    lnet_fault_send_error(ln, msg, &status)) {
			lnet_finalize(msg, status);
			continue;
		}
		lnet_ni_send(msg->msg_txni, msg);
	}
	while ((msg = ul_list_first(&q->sq_fail, struct lnet_msg, msg_list))) {
		ul_list_del(&msg->msg_list);
		lnet_finalize_core(msg, msg->msg_fin_status);
	}
	/* a forwarded message that waited: its LND reads it now */
	while (__builtin_expect(!ul_list_empty(&q->sq_recv), 0)) {
		msg = ul_list_first(&q->sq_recv, struct lnet_msg, msg_list);
		ul_list_del(&msg->msg_list);
		lnet_fwd_recv_ready(msg);
	}
}

/* Response tracking. */
/* Inline: once per tracked request. */
static inline void lnet_rspt_detach_locked(ulnet_t *ln, struct lnet_libmd *md)
{
	if (!md->md_rspt_active)
		return;
	if (ln->ln_ctr.rst_alloc)
		ln->ln_ctr.rst_alloc--;
	md->md_rspt_active = false;
	md->md_rspt_pending = 0;
	ul_list_del(&md->md_rspt_list);
}

void lnet_rspt_timer_cb(struct ul_timer *t);
/* ulnet_put/ulnet_get on a looked-up MD, lock held; sends go on `q`. */
int lnet_put_locked(ulnet_t *ln, const ulnet_nid_t *self, struct lnet_libmd *md,
		    enum ulnet_ack_req ack, const ulnet_process_id_t *target, unsigned portal,
		    uint64_t match_bits, unsigned remote_offset, uint64_t hdr_data,
		    struct lnet_sendq *q);
int lnet_get_locked(ulnet_t *ln, const ulnet_nid_t *self, struct lnet_libmd *md,
		    const ulnet_process_id_t *target, unsigned portal, uint64_t match_bits,
		    unsigned remote_offset, struct lnet_sendq *q);
/* Can `target` be reached (from `self`)? 0, -EHOSTUNREACH or -EINVAL. */
int lnet_check_reachable_locked(ulnet_t *ln, const ulnet_nid_t *self, const ulnet_nid_t *target);
/* Fail every message waiting for credits (destroy). */
void lnet_fail_queued_locked(ulnet_t *ln, struct lnet_ni *ni, struct lnet_sendq *q, int status);
/* Our best NI on `net` (more credits, then round robin), or NULL (send.c). */
struct lnet_ni *lnet_best_ni_on_net_locked(ulnet_t *ln, ulnet_net_t net);
/* The recovery ping (GET of the ping target) to `nid` exactly, on `md`
 * (send.c); sends go to `q`. */
int lnet_get_recovery_locked(ulnet_t *ln, struct lnet_libmd *md, const ulnet_nid_t *nid,
			     struct lnet_sendq *q);

#endif
