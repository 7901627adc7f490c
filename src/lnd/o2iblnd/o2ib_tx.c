/* SPDX-License-Identifier: MIT */
/*
 * o2ib_tx.c - o2ib sends: the NI's pool of pre-registered message buffers,
 * send() (IMMEDIATE messages), the credit rules and NOOPs of
 * kiblnd_check_sends(), posting, send completions and tx timeouts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_int.h"

#define KIB_NS 1000000000ULL

int kib_txpool_init(struct kib_net *net)
{
	size_t sz = (size_t)net->tun.ntx * KIB_MSG_SIZE;

	net->txs = calloc((size_t)net->tun.ntx, sizeof(*net->txs));
	net->tx_bufs = aligned_alloc(4096, sz);
	net->rd_pool = calloc((size_t)net->tun.ntx * KIB_MAX_RDMA_FRAGS, sizeof(*net->rd_pool));
	if (!net->txs || !net->tx_bufs || !net->rd_pool)
		return -ENOMEM;
	net->tx_mr = ibv_reg_mr(net->pd, net->tx_bufs, sz, IBV_ACCESS_LOCAL_WRITE);
	if (!net->tx_mr)
		return -errno ? -errno : -ENOMEM;
	for (int i = 0; i < net->tun.ntx; i++) {
		struct kib_tx *tx = &net->txs[i];

		tx->buf = net->tx_bufs + (size_t)i * KIB_MSG_SIZE;
		tx->rd_frags = net->rd_pool + (size_t)i * KIB_MAX_RDMA_FRAGS;
		kib_list_add_tail(&tx->link, &net->idle_txs);
		net->nidle++;
	}
	return 0;
}

void kib_txpool_fini(struct kib_net *net)
{
	if (net->tx_mr)
		ibv_dereg_mr(net->tx_mr);
	net->tx_mr = NULL;
	free(net->tx_bufs);
	free(net->txs);
	free(net->rd_pool);
	net->rd_pool = NULL;
	net->tx_bufs = NULL;
	net->txs = NULL;
}

struct kib_tx *kib_tx_get(struct kib_net *net)
{
	struct kib_tx *tx;

	if (kib_list_empty(&net->idle_txs))
		return NULL;
	tx = kib_container(net->idle_txs.next, struct kib_tx, link);
	kib_list_del(&tx->link);
	net->nidle--;
	tx->conn = NULL;
	tx->sending = 0;
	tx->queued = false;
	tx->status = 0;
	tx->nob = 0;
	tx->lntmsg[0] = tx->lntmsg[1] = NULL;
	memset(&tx->m, 0, sizeof(tx->m));
	tx->cookie = ++net->next_cookie;
	tx->waiting = false;
	tx->done_len = -1;
	tx->src_iov = NULL;
	tx->src_niov = 0;
	tx->src_off = 0;
	tx->rdma_nob = 0;
	tx->rd_nfrags = 0;
	tx->rd_key = 0;
	tx->deadline = kib_now(net) + (uint64_t)net->tun.timeout * KIB_NS;
	return tx;
}

/* Locked: the tx is on no list; its messages are finalized by kib_unlock(). */
void kib_tx_done(struct kib_net *net, struct kib_tx *tx)
{
	tx->fin_next = NULL;
	*net->fin_tail = tx;
	net->fin_tail = &tx->fin_next;
}

void kib_tx_fail_list(struct kib_net *net, struct kib_list *q, int status)
{
	while (!kib_list_empty(q)) {
		struct kib_tx *tx = kib_container(q->next, struct kib_tx, link);

		kib_list_del(&tx->link);
		tx->queued = false;
		tx->status = status;
		tx->waiting = false;
		/* queued again while a send of it is still posted (a PUT_REQ
		 * whose PUT_ACK came before its own send completion, now the
		 * PUT_DONE): it ends with that completion, or when the QP
		 * goes (as kiblnd_abort_txs leaves it to kiblnd_tx_complete) */
		if (tx->sending > 0 && tx->conn) {
			kib_list_add_tail(&tx->link, &tx->conn->active_txs);
			continue;
		}
		kib_tx_done(net, tx);
	}
}

void kib_queue_tx(struct kib_conn *conn, struct kib_tx *tx)
{
	tx->conn = conn;
	tx->queued = true;
	switch (tx->m.type) {
	case KIB_MSG_IMMEDIATE:
		kib_list_add_tail(&tx->link, &conn->tx_queue);
		break;
	case KIB_MSG_PUT_REQ:
	case KIB_MSG_GET_REQ:
		kib_list_add_tail(&tx->link, &conn->tx_rsrvd);
		break;
	default:        /* NOOP (out of band), PUT_ACK/NAK/DONE, GET_DONE */
		kib_list_add_tail(&tx->link, &conn->tx_nocred);
		break;
	}
}

static void kib_credit_state(const struct kib_conn *c, struct kib_credit_state *s)
{
	const struct kib_net *net = c->net;

	s->queue_depth = c->queue_depth;
	s->credits = c->credits;
	s->outstanding = c->outstanding;
	s->nsends_posted = c->nsends_posted;
	s->noops_posted = c->noops_posted;
	s->nocred_queued = !kib_list_empty(&c->tx_nocred);
	s->queued = !kib_list_empty(&c->tx_queue);
	s->keepalive_due = net->tun.keepalive > 0 &&
			   kib_now(net) > c->last_send + (uint64_t)net->tun.keepalive * KIB_NS;
}

/* Post one tx: 0, -EAGAIN (not now), or < 0 (the connection is closed). */
static int kib_post_tx(struct kib_conn *c, struct kib_tx *tx, bool credit)
{
	struct kib_net *net = c->net;
	struct kib_credit_state s;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	ssize_t n;

	kib_credit_state(c, &s);
	if (kib_may_post(&s, &net->tun, credit) < 0)
		return -EAGAIN;
	kib_list_del(&tx->link);
	tx->queued = false;
	if (tx->m.type == KIB_MSG_NOOP) {
		kib_credit_state(c, &s);        /* without this NOOP queued */
		if (!kib_need_noop(&s, &net->tun) || c->noops_posted >= KIB_OOB_MSGS) {
			kib_tx_done(net, tx);   /* redundant */
			return 0;
		}
	}
	tx->m.version = (uint16_t)c->version;
	tx->m.credits = (uint8_t)c->outstanding;
	tx->m.srcnid = net->nid4;
	tx->m.srcstamp = net->incarnation;
	tx->m.dstnid = c->peer->nid4;
	tx->m.dststamp = c->incarnation;
	if (tx->m.type == KIB_MSG_PUT_ACK || tx->m.type == KIB_MSG_GET_REQ)
		n = kib_msg_encode(&tx->m, tx->rd_frags, tx->rd_nfrags, false, tx->buf, KIB_MSG_SIZE);
	else
		n = kib_msg_encode(&tx->m, NULL, 0, false, tx->buf, KIB_MSG_SIZE);
	if (n < 0) {
		tx->status = (int)n;
		kib_tx_done(net, tx);
		return 0;
	}
	tx->nob = (uint32_t)n + tx->m.payload_nob;
	kib_msg_finish(&net->tun, tx->buf, tx->nob, c->cksum_form);
	if ((tx->m.type == KIB_MSG_PUT_DONE || tx->m.type == KIB_MSG_GET_DONE) && tx->rdma_nob &&
	    tx->m.status >= 0) {
		int rc = kib_post_rdma(c, tx);

		if (rc == -EIO) {
			tx->status = -EIO;
			kib_tx_done(net, tx);
			kib_close_conn(c, -EIO, "cannot post an RDMA write");
			return -EIO;
		}
		if (rc < 0) {
			/* tell the peer it failed, as the kernel does */
			lnet_ni_log(net->ni, ULNET_LOG_ERROR,
				    "o2iblnd: %s: cannot set up RDMA of %u bytes: %d", c->name,
				    tx->rdma_nob, rc);
			tx->status = rc;
			tx->m.status = rc;
			n = kib_msg_encode(&tx->m, NULL, 0, false, tx->buf, KIB_MSG_SIZE);
			tx->nob = (uint32_t)n;
			kib_msg_finish(&net->tun, tx->buf, tx->nob, c->cksum_form);
		}
	}
	memset(&sge, 0, sizeof(sge));
	sge.addr = (uintptr_t)tx->buf;
	sge.length = tx->nob;
	sge.lkey = net->tx_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)tx;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(c->qp, &wr, &bad) != 0) {
		tx->status = -EIO;
		kib_tx_done(net, tx);
		kib_close_conn(c, -EIO, "cannot post a send");
		return -EIO;
	}
	if (tx->m.type == KIB_MSG_NOOP && lnet_ni_log_enabled(net->ni, ULNET_LOG_DEBUG))
		lnet_ni_log(net->ni, ULNET_LOG_DEBUG,
			    "o2iblnd: %s: NOOP posted (%d credits returned, idle %llu ms)", c->name,
			    c->outstanding,
			    (unsigned long long)((kib_now(net) - c->last_send) / 1000000ULL));
	c->outstanding = 0;
	if (credit)
		c->credits--;
	c->nsends_posted++;
	if (tx->m.type == KIB_MSG_NOOP)
		c->noops_posted++;
	tx->sending++;
	tx->conn = c;
	kib_list_add_tail(&tx->link, &c->active_txs);
	c->last_send = kib_now(net);
	return 0;
}

void kib_check_sends(struct kib_conn *c)
{
	struct kib_net *net = c->net;
	struct kib_credit_state s;

	if (c->state != KIB_CONN_ESTABLISHED)
		return;
	while (c->reserved > 0 && !kib_list_empty(&c->tx_rsrvd)) {
		struct kib_tx *tx = kib_container(c->tx_rsrvd.next, struct kib_tx, link);

		kib_list_del(&tx->link);
		kib_list_add_tail(&tx->link, &c->tx_queue);
		c->reserved--;
	}
	kib_credit_state(c, &s);
	if (kib_need_noop(&s, &net->tun)) {
		struct kib_tx *tx = kib_tx_get(net);

		if (tx) {
			tx->m.type = KIB_MSG_NOOP;
			kib_queue_tx(c, tx);
		}
	}
	while (c->state == KIB_CONN_ESTABLISHED) {
		struct kib_tx *tx;
		bool credit;

		if (!kib_list_empty(&c->tx_nocred)) {
			tx = kib_container(c->tx_nocred.next, struct kib_tx, link);
			credit = false;
		} else if (!kib_list_empty(&c->tx_queue)) {
			tx = kib_container(c->tx_queue.next, struct kib_tx, link);
			credit = true;
		} else {
			break;
		}
		if (kib_post_tx(c, tx, credit) != 0) {
			/* out of credits (not only of concurrent sends):
			 * said once until a credit lets a message go */
			if (credit && c->credits == 0 && !c->credit_stalled &&
			    c->state == KIB_CONN_ESTABLISHED) {
				c->credit_stalled = true;
				c->credit_stalls++;
				if (lnet_ni_log_enabled(net->ni, ULNET_LOG_DEBUG))
					lnet_ni_log(net->ni, ULNET_LOG_DEBUG,
						    "o2iblnd: %s: out of credits (queue depth %d): "
						    "%s waits (%d times so far)", c->name,
						    c->queue_depth, kib_msg_type_str(tx->m.type),
						    c->credit_stalls);
			}
			break;
		}
		if (credit)
			c->credit_stalled = false;
	}
}

void kib_tx_complete(struct kib_conn *c, struct kib_tx *tx, int status)
{
	struct kib_net *net = c->net;

	if (tx->sending <= 0)
		return;         /* already failed by a teardown */
	tx->sending--;
	c->nsends_posted--;
	if (tx->m.type == KIB_MSG_NOOP)
		c->noops_posted--;
	if (status != 0) {
		if (!tx->status)
			tx->status = c->comms_error ? c->comms_error : -EIO;
		tx->waiting = false;
		if (c->state == KIB_CONN_ESTABLISHED)
			lnet_ni_log(net->ni, ULNET_LOG_ERROR,
				    "o2iblnd: %s: send of %s failed: %s", c->name,
				    kib_msg_type_str(tx->m.type), ibv_wc_status_str(status));
		kib_close_conn(c, -EIO, "send failed");
	}
	/* done unless it waits for the peer's answer or went out again */
	if (tx->sending == 0 && !tx->waiting && !tx->queued) {
		kib_list_del(&tx->link);
		kib_tx_done(net, tx);
	}
	kib_check_sends(c);
}

void kib_check_txs(struct kib_conn *c, uint64_t now)
{
	struct kib_list *qs[] = { &c->tx_queue, &c->tx_nocred, &c->tx_rsrvd, &c->active_txs };
	bool polled = false;

again:
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		for (struct kib_list *l = qs[i]->next; l != qs[i]; l = l->next) {
			struct kib_tx *tx = kib_container(l, struct kib_tx, link);

			if (tx->deadline > now)
				continue;
			if (tx->sending && !polled) {
				/* Its work requests are the device's: it must
				 * complete them, in error at worst once the RC
				 * retries are spent. Completions in the CQ that
				 * no event announced would explain the wait;
				 * take them and look again (the tx may be gone). */
				int n;

				polled = true;
				n = kib_poll_cq(c);
				if (n > 0)
					lnet_ni_log(c->net->ni, ULNET_LOG_WARN,
						    "o2iblnd: %s: %d completions were in the CQ with no "
						    "event for them (a timed-out %s among them?)",
						    c->name, n, kib_msg_type_str(tx->m.type));
				if (c->state != KIB_CONN_ESTABLISHED)
					return;
				goto again;
			}
			/* which side stalled tells the admin where to look:
			 * the fabric or device (a posted send with no
			 * completion), the peer (no answer), or credits */
			lnet_ni_log(c->net->ni, ULNET_LOG_ERROR, "o2iblnd: %s: timed out tx (%s, %s) after %d s",
				    c->name, kib_msg_type_str(tx->m.type),
				    tx->sending ? "posted, not completed by the device: the peer's device has not acknowledged it"
				    : i == 3    ? "sent, waiting for the peer's answer"
						: "queued",
				    c->net->tun.timeout);
			kib_close_conn(c, -ETIMEDOUT, "tx timed out");
			return;
		}
	}
}

void kib_send(struct lnet_ni *ni, struct lnet_msg *msg)
{
	struct kib_net *net = lnet_ni_data(ni);
	ulnet_process_id_t target = lnet_msg_target(msg);
	const struct iovec *iov;
	unsigned niov;
	size_t off, len;
	ulnet_nid4_t nid4;
	struct kib_peer *peer;
	struct kib_tx *tx;
	struct kib_conn *c;
	int rc = 0;

	lnet_msg_payload(msg, &iov, &niov, &off, &len);
	if (ulnet_nid_to_nid4(&target.nid, &nid4) < 0 || nid4 == net->nid4) {
		lnet_finalize(msg, -EHOSTUNREACH);
		return;
	}
	/* a dead link (o2ib_link.c): what connect() gives with no route */
	if (__atomic_load_n(&net->link_down, __ATOMIC_RELAXED)) {
		lnet_finalize(msg, -ENETUNREACH);
		return;
	}
	/* the kernel's choice: IMMEDIATE when it fits a message; a GET whose
	 * REPLY does not (and that is not forwarded or routed) as GET_REQ,
	 * anything else larger as PUT_REQ */
	uint8_t type = KIB_MSG_IMMEDIATE;
	const struct iovec *siov = NULL;
	unsigned sniov = 0;
	size_t slen = 0;
	struct lnet_msg *reply = NULL;

	if (lnet_msg_hdr(msg)->type == ULNET_MSG_GET) {
		if (lnet_msg_get_sink(msg, &siov, &sniov, &slen) == 0 &&
		    KIB_IMMEDIATE_SIZE + slen > KIB_MSG_SIZE) {
			type = KIB_MSG_GET_REQ;
			reply = lnet_create_reply_msg(ni, msg);
			if (!reply) {
				char nb[ULNET_NIDSTR_SIZE];

				lnet_ni_log(ni, ULNET_LOG_ERROR, "o2iblnd: %s: cannot create the GET's reply",
					    ulnet_nid_str(&target.nid, nb));
				lnet_finalize(msg, -EIO);
				return;
			}
		}
	} else if (KIB_IMMEDIATE_SIZE + len > KIB_MSG_SIZE) {
		type = KIB_MSG_PUT_REQ;
	}
	kib_lock(net);
	if (net->shutdown) {
		rc = -ESHUTDOWN;
		goto out;
	}
	tx = kib_tx_get(net);
	if (!tx) {
		lnet_ni_log(ni, ULNET_LOG_ERROR, "o2iblnd: no tx descriptor left (ntx %d)",
			    net->tun.ntx);
		rc = -ENOMEM;
		goto out;
	}
	tx->m.type = type;
	tx->lntmsg[0] = msg;
	tx->lntmsg[1] = reply;
	if (type == KIB_MSG_IMMEDIATE) {
		tx->m.hdr = *lnet_msg_hdr(msg);
		tx->m.payload_nob = (uint32_t)len;
		if (len) {
			struct iovec dst = { tx->buf + KIB_IMMEDIATE_SIZE, len };

			lnet_copy_iov(&dst, 1, 0, iov, niov, off, len);
		}
	} else {
		rc = type == KIB_MSG_GET_REQ ? kib_send_rdma_req(net, msg, tx, siov, sniov, 0, slen)
					     : kib_send_rdma_req(net, msg, tx, iov, niov, off, len);
		if (rc < 0) {
			char nb[ULNET_NIDSTR_SIZE];

			lnet_ni_log(ni, ULNET_LOG_ERROR,
				    "o2iblnd: %s: cannot register the %s buffer: %d",
				    ulnet_nid_str(&target.nid, nb), kib_msg_type_str(type), rc);
			tx->status = rc;
			kib_tx_done(net, tx);
			rc = 0;
			goto out;
		}
	}
	peer = kib_peer_find(net, nid4);
	if (!peer)
		peer = kib_peer_create(net, nid4);
	if (!peer) {
		tx->status = -ENOMEM;
		kib_tx_done(net, tx);
		goto out;
	}
	if ((c = kib_peer_send_conn(peer))) {   /* one established */
		kib_queue_tx(c, tx);
		kib_check_sends(c);
	} else {
		tx->queued = true;
		kib_list_add_tail(&tx->link, &peer->tx_queue);
		if (!peer->connecting && !peer->accepting)
			kib_kick(net);
	}
out:
	kib_unlock(net);
	if (rc < 0) {
		lnet_finalize(msg, rc);
		if (reply)
			lnet_finalize(reply, rc);
	}
}
