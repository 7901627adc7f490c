/* SPDX-License-Identifier: MIT */
/*
 * o2ib_rx.c - o2ib receives: a connection's pre-posted message buffers,
 * the completion channel driven from the event loop, received messages
 * (checks, credits, NOOPs, IMMEDIATE to lnet_parse()), and recv().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_int.h"

int kib_rx_setup(struct kib_conn *c)
{
	size_t sz = (size_t)c->nrx * KIB_MSG_SIZE;

	c->rxs = calloc((size_t)c->nrx, sizeof(*c->rxs));
	c->rx_bufs = aligned_alloc(4096, sz);
	if (!c->rxs || !c->rx_bufs)
		return -ENOMEM;
	c->rx_mr = ibv_reg_mr(c->net->pd, c->rx_bufs, sz, IBV_ACCESS_LOCAL_WRITE);
	if (!c->rx_mr)
		return -errno ? -errno : -ENOMEM;
	for (int i = 0; i < c->nrx; i++) {
		c->rxs[i].conn = c;
		c->rxs[i].buf = c->rx_bufs + (size_t)i * KIB_MSG_SIZE;
		kib_list_init(&c->rxs[i].early);
	}
	return 0;
}

void kib_rx_free(struct kib_conn *c)
{
	if (c->rx_mr)
		ibv_dereg_mr(c->rx_mr);
	c->rx_mr = NULL;
	free(c->rx_bufs);
	free(c->rxs);
	c->rx_bufs = NULL;
	c->rxs = NULL;
}

int kib_post_rx(struct kib_rx *rx)
{
	struct kib_conn *c = rx->conn;
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;

	if (!c->qp)
		return -ESHUTDOWN;
	sge.addr = (uintptr_t)rx->buf;
	sge.length = KIB_MSG_SIZE;
	sge.lkey = c->rx_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)rx | KIB_WR_RX;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_recv(c->qp, &wr, &bad) != 0) {
		kib_close_conn(c, -EIO, "cannot post a receive");
		return -EIO;
	}
	rx->posted = true;
	return 0;
}

/* Locked: repost a consumed buffer, returning a peer credit (owed to the
 * peer with the next message) or a reserved one (ours back) for it. */
void kib_repost_rx(struct kib_rx *rx, enum kib_post_credit credit)
{
	struct kib_conn *c = rx->conn;

	if (c->state != KIB_CONN_ESTABLISHED)
		return;
	if (kib_post_rx(rx) < 0)
		return;
	if (credit == KIB_POSTRX_PEER_CREDIT)
		c->outstanding++;
	else if (credit == KIB_POSTRX_RSRVD_CREDIT)
		c->reserved++;
	kib_check_sends(c);
}

/* Locked: a message arrived on an established connection. */
void kib_handle_rx(struct kib_rx *rx)
{
	struct kib_conn *c = rx->conn;
	struct kib_net *net = c->net;
	struct kib_msg *m = &rx->msg;
	char why[96];
	ssize_t rc;

	if (c->state == KIB_CONN_PASSIVE_WAIT || c->state == KIB_CONN_ACTIVE_CONNECT) {
		kib_list_add_tail(&rx->early, &c->early_rxs);
		return;
	}
	if (c->state != KIB_CONN_ESTABLISHED)
		return;
	rc = kib_msg_decode(rx->buf, rx->nob, m);
	if (rc < 0) {
		snprintf(why, sizeof(why), "malformed message (%u bytes): %s", rx->nob,
			 strerror((int)-rc));
		lnet_ni_log(net->ni, ULNET_LOG_ERROR, "o2iblnd: %s: %s", c->name, why);
		kib_close_conn(c, -EPROTO, why);
		return;
	}
	if (m->srcnid != c->peer->nid4 || m->dstnid != net->nid4 ||
	    m->srcstamp != c->incarnation || m->dststamp != net->incarnation) {
		lnet_ni_log(net->ni, ULNET_LOG_ERROR,
			    "o2iblnd: %s: stale %s (NIDs or incarnations do not match)", c->name,
			    kib_msg_type_str(m->type));
		kib_close_conn(c, -ESTALE, "stale message");
		return;
	}
	if (m->credits) {
		if (c->credits + m->credits > c->queue_depth) {
			lnet_ni_log(net->ni, ULNET_LOG_ERROR,
				    "o2iblnd: %s: bad credits %d + %d > queue depth %d", c->name,
				    c->credits, m->credits, c->queue_depth);
			kib_close_conn(c, -EPROTO, "bad credits");
			return;
		}
		c->credits += m->credits;
	}
	switch (m->type) {
	case KIB_MSG_NOOP:
		/* NOOPs use no credit of ours (out of band) */
		kib_repost_rx(rx, KIB_POSTRX_NO_CREDIT);
		return;
	case KIB_MSG_PUT_ACK:
	case KIB_MSG_PUT_NAK:
	case KIB_MSG_PUT_DONE:
	case KIB_MSG_GET_DONE:
		kib_handle_rdma_rx(rx);
		return;
	case KIB_MSG_IMMEDIATE:
	case KIB_MSG_PUT_REQ:
	case KIB_MSG_GET_REQ:
		c->refs++;
		rx->parse_next = NULL;
		*net->parse_tail = rx;
		net->parse_tail = &rx->parse_next;
		if (m->credits)
			kib_check_sends(c);
		return;
	default:
		lnet_ni_log(net->ni, ULNET_LOG_ERROR,
			    "o2iblnd: %s: unexpected message type %s (0x%x)",
			    c->name, kib_msg_type_str(m->type), m->type);
		kib_close_conn(c, -EPROTO, "unsupported message type");
		return;
	}
}

/* Unlocked: hand an IMMEDIATE to LNet. */
void kib_parse_rx(struct kib_net *net, struct kib_rx *rx)
{
	struct kib_conn *c = rx->conn;
	int rc = lnet_parse(net->ni, &rx->msg.hdr, &c->peer_nid, rx,
			    rx->msg.type == KIB_MSG_GET_REQ);

	if (rc < 0) {
		kib_lock(net);
		lnet_ni_log(net->ni, ULNET_LOG_ERROR, "o2iblnd: %s: LNet refused a message: %d",
			    c->name, rc);
		kib_close_conn(c, -EPROTO, "LNet protocol error");
		kib_conn_decref(c);
		kib_unlock(net);
	}
}

void kib_recv(struct lnet_ni *ni, void *rx_private, struct lnet_msg *msg, bool delayed,
	      const struct iovec *iov, unsigned niov, size_t offset, size_t mlen, size_t rlen)
{
	struct kib_net *net = lnet_ni_data(ni);
	struct kib_rx *rx = rx_private;
	struct kib_conn *c = rx->conn;
	int status = 0;

	/* the core kept the message waiting (a router buffer): the rx stayed
	 * ours meanwhile, its credit not returned, as the kernel's */
	if (delayed && lnet_ni_log_enabled(ni, ULNET_LOG_DEBUG))
		lnet_ni_log(ni, ULNET_LOG_DEBUG, "o2iblnd: %s: delayed receive (%s, %zu bytes)",
			    c->name, kib_msg_type_str(rx->msg.type), rlen);
	if (rx->msg.type != KIB_MSG_IMMEDIATE) {
		kib_recv_rdma(net, rx, msg, iov, niov, offset, mlen);
		return;
	}
	if (rlen > rx->msg.payload_nob) {
		status = -EPROTO;
	} else if (msg && mlen) {
		struct iovec src = { rx->buf + KIB_IMMEDIATE_SIZE, rx->msg.payload_nob };

		lnet_copy_iov(iov, niov, offset, &src, 1, 0, mlen);
	}
	if (msg)
		lnet_finalize(msg, status);
	kib_lock(net);
	if (status < 0) {
		lnet_ni_log(ni, ULNET_LOG_ERROR,
			    "o2iblnd: %s: IMMEDIATE payload %u bytes shorter than its header's %zu",
			    c->name, rx->msg.payload_nob, rlen);
		kib_close_conn(c, status, "short IMMEDIATE payload");
	} else {
		kib_repost_rx(rx, KIB_POSTRX_PEER_CREDIT);
	}
	kib_conn_decref(c);
	kib_unlock(net);
}

int kib_poll_cq(struct kib_conn *c)
{
	struct ibv_wc wc[16];
	int n, total = 0;

	while (c->cq && (n = ibv_poll_cq(c->cq, 16, wc)) > 0) {
		total += n;
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & KIB_WR_RDMA) {
				/* only failed writes complete (unsignalled) */
				struct kib_tx *tx = (struct kib_tx *)(uintptr_t)(wc[i].wr_id & ~KIB_WR_TAGS);

				if (wc[i].status != IBV_WC_SUCCESS) {
					if (!tx->status)
						tx->status = -EIO;
					if (c->state == KIB_CONN_ESTABLISHED)
						lnet_ni_log(c->net->ni, ULNET_LOG_ERROR,
							    "o2iblnd: %s: RDMA write failed: %s", c->name,
							    ibv_wc_status_str(wc[i].status));
					kib_close_conn(c, -EIO, "RDMA write failed");
				}
				continue;
			}
			if (wc[i].wr_id & KIB_WR_RX) {
				struct kib_rx *rx = (struct kib_rx *)(uintptr_t)(wc[i].wr_id & ~KIB_WR_RX);

				rx->posted = false;
				if (wc[i].status != IBV_WC_SUCCESS) {
					if (c->state == KIB_CONN_ESTABLISHED)
						kib_close_conn(c, -EIO, ibv_wc_status_str(wc[i].status));
					continue;
				}
				rx->nob = wc[i].byte_len;
				kib_handle_rx(rx);
			} else {
				struct kib_tx *tx = (struct kib_tx *)(uintptr_t)wc[i].wr_id;

				kib_tx_complete(c, tx, wc[i].status == IBV_WC_SUCCESS ? 0 : (int)wc[i].status);
			}
		}
	}
	return total;
}

void kib_cq_io_cb(struct ul_io *io, uint32_t revents)
{
	struct kib_conn *c = kib_container(io, struct kib_conn, cq_io);
	struct kib_net *net = c->net;
	struct ibv_cq *cq;
	void *ctx;

	(void)revents;
	kib_lock(net);
	if (c->cch && c->cq) {
		while (ibv_get_cq_event(c->cch, &cq, &ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			ibv_req_notify_cq(cq, 0);
		}
		kib_poll_cq(c);
	}
	kib_unlock(net);
}
