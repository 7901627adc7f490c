/* SPDX-License-Identifier: MIT */
/*
 * msg.h - messages (struct lnet_msg, msg.c): the message pool, attaching an
 * MD, committing and finalizing, and the queue of messages to hand to LNDs
 * or fail once the lock is dropped (struct lnet_sendq).
 */
#ifndef ULNET_CORE_MSG_H
#define ULNET_CORE_MSG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/instance.h"
#include "core/list.h"
#include "core/lnet_hdr.h"
#include "core/md.h"
#include "ulnet/ulnet.h"

/* --- messages --------------------------------------------------------------- */

enum lnet_msg_state { LNET_MSG_FREE = 0, LNET_MSG_BUSY = 1 };

struct lnet_rtrbuf;       /* router.h */
struct lnet_rtrbufpool;

struct lnet_msg {
	struct ul_list msg_list;       /* free list, credit queue, lazy queue, discovery queue */
	ulnet_t *msg_ln;
	struct lnet_msg *msg_fin_next; /* per-thread finalize queue */
	int msg_fin_status;
	unsigned msg_state;
	int msg_finalized;             /* exactly-once guard, atomic */

	uint32_t msg_type;             /* enum ulnet_msg_type */
	ulnet_process_id_t msg_target; /* where it goes (sending) */
	ulnet_nid_t msg_from;          /* last hop (receiving) */
	ulnet_nid_t msg_initiator;     /* primary NID of the sender (receiving) */
	ulnet_nid_t msg_src_nid_param; /* local NID the caller asked for, or ANY */
	struct lnet_hdr msg_hdr;

	union {
		struct {
			unsigned msg_sending:1;
			unsigned msg_receiving:1;
			unsigned msg_tx_committed:1;
			unsigned msg_rx_committed:1;
			unsigned msg_ack:1;            /* send an ACK once the PUT is in */
			unsigned msg_txcredit:1;
			unsigned msg_peertxcredit:1;
			unsigned msg_tx_delayed:1;
			unsigned msg_rx_delayed:1;     /* waiting on a lazy portal */
			unsigned msg_discovery_wait:1; /* queued on a peer until discovered */
			unsigned msg_tracked:1;        /* counted in md_rspt_pending */
			unsigned msg_retries:8;        /* resends so far (lnet_health_check_locked()) */
			unsigned msg_recovery:1;       /* recovery ping: to its NID only, never resent */
			unsigned msg_routed:1;         /* goes to a gateway (msg_txpeer), not its dest */
			unsigned msg_forward:1;        /* not ours: received, then sent on (router.c) */
			unsigned msg_rtrcredit:1;      /* holds a router credit of msg_rxpeer */
			/* a GET whose REPLY the LND moves itself: on the
			 * target, parsed with rdma_req (its recv() writes the
			 * REPLY); on the requester, its REPLY message made by
			 * lnet_create_reply_msg() (never resent) */
			unsigned msg_rdma_get:1;
			/* enum ulnet_hstatus of a failed send, as the LND or a
			 * fault rule classed it (the kernel's msg_health_status);
			 * 0: classed from the errno (lnet_health_check_locked()) */
			unsigned msg_hstatus:4;
		};
		unsigned msg_bits;             /* all of the above at once */
	};

	struct lnet_ni *msg_txni;
	struct lnet_ni *msg_rxni;
	struct lnet_peer_ni *msg_txpeer;
	struct lnet_peer_ni *msg_rxpeer;
	struct lnet_libmd *msg_md;

	uint32_t msg_len;              /* payload bytes on the wire */
	uint32_t msg_offset;           /* into the MD */
	uint32_t msg_wanted;           /* bytes placed (receiving) */
	const struct iovec *msg_iov;   /* payload fragments (the MD's) */
	unsigned msg_niov;

	void *msg_rx_private;
	uint64_t msg_deadline;         /* instance clock */
	uint64_t msg_t_start;
	uint64_t msg_resend_deadline;  /* no resend after it; valid once msg_retries > 0 */
	void *msg_lnd_slot;
	struct lnet_rtrbuf *msg_rtrbuf; /* a forwarded message's router buffer */
	uint64_t msg_fault_release;    /* held by a delay rule until (fault.c) */
	struct ulnet_event msg_ev;
};

/* One message of `type` and its payload bytes, in an NI's or a peer NI's
 * per-type counts (sent, received or dropped: each kept with its bytes). */
static inline void lnet_count_type(struct ulnet_msg_type_counts *msgs,
				   struct ulnet_msg_type_counts *bytes, unsigned type, uint64_t nob)
{
	msgs->n[type]++;
	bytes->n[type] += nob;
}

/* --- messages (msg.c) --------------------------------------------------------- */

int lnet_msg_pool_init(ulnet_t *ln);
void lnet_msg_pool_fini(ulnet_t *ln);
/* Alloc, free and commit are inline: each runs once or twice per message
 * (the pool grows out of line). */
int lnet_msg_pool_grow_locked(ulnet_t *ln);
static inline struct lnet_msg *lnet_msg_alloc_locked(ulnet_t *ln)
{
	struct lnet_msg *msg;

	if (__builtin_expect(ul_list_empty(&ln->ln_msg_free), 0) && lnet_msg_pool_grow_locked(ln))
		return NULL;
	msg = ul_list_first(&ln->ln_msg_free, struct lnet_msg, msg_list);
	ul_list_del(&msg->msg_list);
	LASSERT(msg->msg_state == LNET_MSG_FREE);
	/* No memset of the ~0.5 KiB message (a `rep stos` per message): the
	 * fields read before being written are cleared here. The header is
	 * written in full by lnet_prep_send() or lnet_parse() before anything
	 * reads it; msg_target, msg_from, msg_initiator and msg_src_nid_param
	 * by the path that reads them (send or receive); the event by
	 * lnet_build_msg_event() and lnet_md_deconstruct() before a handler
	 * sees it (only its type is read earlier, by the counters). */
	msg->msg_fin_next = NULL;
	msg->msg_fin_status = 0;
	msg->msg_finalized = 0;
	msg->msg_bits = 0;
	msg->msg_txni = NULL;
	msg->msg_rxni = NULL;
	msg->msg_txpeer = NULL;
	msg->msg_rxpeer = NULL;
	msg->msg_md = NULL;
	msg->msg_len = 0;
	msg->msg_offset = 0;
	msg->msg_wanted = 0;
	msg->msg_iov = NULL;
	msg->msg_niov = 0;
	msg->msg_rx_private = NULL;
	msg->msg_deadline = 0;
	msg->msg_t_start = 0;
	msg->msg_lnd_slot = NULL;
	ul_list_init(&msg->msg_list);
	msg->msg_ln = ln;
	msg->msg_state = LNET_MSG_BUSY;
	msg->msg_ev.ln = ln;
	msg->msg_ev.type = 0;
	return msg;
}

static inline void lnet_msg_free_locked(ulnet_t *ln, struct lnet_msg *msg)
{
	LASSERT(msg->msg_state == LNET_MSG_BUSY);
	LASSERT(!msg->msg_md && !msg->msg_tx_committed && !msg->msg_rx_committed);
	LASSERT(!msg->msg_rtrbuf);   /* so a new message starts without one */
	msg->msg_state = LNET_MSG_FREE;
	ul_list_add(&msg->msg_list, &ln->ln_msg_free);
}

static inline void lnet_msg_attach_md(struct lnet_msg *msg, struct lnet_libmd *md,
				      uint32_t offset, uint32_t mlen)
{
	/* from here the message owns a reference on the MD until finalize */
	msg->msg_md = md;
	if (msg->msg_receiving) {
		msg->msg_offset = offset;
		msg->msg_wanted = mlen;
	}
	md->md_refcount++;
	if (md->md_threshold != ULNET_MD_THRESH_INF) {
		LASSERT(md->md_threshold > 0);
		md->md_threshold--;
	}
	lnet_md_deconstruct(md, &msg->msg_ev);
}

static inline void lnet_msg_commit_locked(ulnet_t *ln, struct lnet_msg *msg, bool timed)
{
	/* only sends that may wait for credits need a deadline, and only
	 * PUTs a start time (the egress latency); loopback and receives
	 * don't, and skip the clock. The deadline of the others is set when
	 * they wait for a credit (lnet_post_send_locked(): in this critical
	 * section, so the same instant). A PUT may come with its start time
	 * already read (msg_t_start, by response tracking). */
	if (timed && msg->msg_type == ULNET_MSG_PUT) {
		uint64_t now = msg->msg_t_start ? msg->msg_t_start : lnet_now(ln);

		msg->msg_t_start = now;
		msg->msg_deadline = now + (uint64_t)ln->ln_g.transaction_timeout * LNET_NSEC_PER_SEC;
	} else if (timed) {
		msg->msg_t_start = 0;
		msg->msg_deadline = 0;   /* set when it waits for a credit */
	} else {
		msg->msg_t_start = 0;
		msg->msg_deadline = UINT64_MAX;
	}
	if (msg->msg_sending) {
		LASSERT(!msg->msg_tx_committed);
		msg->msg_tx_committed = 1;
		if (msg->msg_rx_committed) /* a REPLY reusing its GET: counted once */
			return;
	} else {
		LASSERT(!msg->msg_rx_committed);
		msg->msg_rx_committed = 1;
	}
	ln->ln_ctr.msgs_alloc++;
	if (ln->ln_ctr.msgs_alloc > ln->ln_ctr.msgs_max)
		ln->ln_ctr.msgs_max = ln->ln_ctr.msgs_alloc;
}

/* Finalize a message the core owns (never handed to an LND, or handed back). */
void lnet_finalize_core(struct lnet_msg *msg, int status);

/* Messages to hand to LNDs / fail once the lock is dropped. */
struct lnet_sendq {
	struct ul_list sq_send;
	struct ul_list sq_fail;        /* msg_fin_status holds the error */
	struct ul_list sq_recv;        /* forwarded messages given a router buffer */
};
static inline void lnet_sendq_init(struct lnet_sendq *q)
{
	ul_list_init(&q->sq_recv);
	ul_list_init(&q->sq_send);
	ul_list_init(&q->sq_fail);
}

/* The start of a timer callback of the instance: `q` ready, the lock
 * taken and the clock read, or false (unlocked) once the node stops. */
static inline bool lnet_timer_enter(ulnet_t *ln, struct lnet_sendq *q, uint64_t *now)
{
	lnet_sendq_init(q);
	lnet_lock(ln);
	if (ln->ln_state != LNET_STATE_RUNNING) {
		lnet_unlock(ln);
		return false;
	}
	*now = lnet_now(ln);
	return true;
}

#endif
