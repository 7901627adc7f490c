/* SPDX-License-Identifier: MIT */
/*
 * o2ib_conn.c - o2ib connections over the RDMA CM: the active connect
 * (resolve address and route, QP, rdma_connect with the CONNREQ as private
 * data, the CONNACK check), the passive side (CONNREQ verdict, CONNACK in
 * the accept, rejections with the kernel's reasons), reconnects after a
 * rejection, the connection race, close and teardown.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_int.h"

#define KIB_NS 1000000000ULL

static struct kib_conn *kib_conn_alloc(struct kib_peer *peer, bool active, int version)
{
	struct kib_net *net = peer->net;
	struct kib_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->net = net;
	c->peer = peer;
	peer->nconns++;
	c->active = active;
	c->version = version;
	c->queue_depth = peer->queue_depth;
	c->max_frags = peer->max_frags;
	c->refs = 1;
	c->id = ++net->next_conn_id;
	c->last_send = kib_now(net);
	c->cksum_form = KIB_CKSUM_SIGNED;
	kib_list_init(&c->plink);
	kib_list_init(&c->tx_queue);
	kib_list_init(&c->tx_nocred);
	kib_list_init(&c->tx_rsrvd);
	kib_list_init(&c->active_txs);
	kib_list_init(&c->early_rxs);
	c->peer_nid = peer->nid;
	snprintf(c->name, sizeof(c->name), "%s conn#%u", peer->nidstr, c->id);
	kib_list_add_tail(&c->link, &net->conns);
	return c;
}

/* The QP, its CQ and completion channel, the receive buffers (posted). */
static int kib_conn_setup_qp(struct kib_conn *c)
{
	struct kib_net *net = c->net;
	struct ibv_qp_init_attr qa;
	/* each message may come with a write per source and sink fragment */
	int nsend = net->tun.concurrent_sends * (2 * KIB_MAX_RDMA_FRAGS + 1) + KIB_OOB_MSGS;
	struct ibv_device_attr da;
	int rc;

	if (ibv_query_device(c->cmid->verbs, &da) == 0 && nsend > da.max_qp_wr)
		nsend = da.max_qp_wr;

	c->nrx = kib_rx_msgs(c->queue_depth);
	c->cch = ibv_create_comp_channel(c->cmid->verbs);
	if (!c->cch)
		return -errno ? -errno : -ENOMEM;
	fcntl(c->cch->fd, F_SETFL, fcntl(c->cch->fd, F_GETFL) | O_NONBLOCK);
	c->cq = ibv_create_cq(c->cmid->verbs, c->nrx + nsend, c, c->cch, 0);
	if (!c->cq)
		return -ENOMEM;
	if (ibv_req_notify_cq(c->cq, 0) != 0)
		return -EIO;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = (uint32_t)nsend;
	qa.cap.max_recv_wr = (uint32_t)c->nrx;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 0;
	if (rdma_create_qp(c->cmid, net->pd, &qa) != 0)
		return -errno ? -errno : -ENOMEM;
	c->qp = c->cmid->qp;
	rc = kib_rx_setup(c);
	if (rc < 0)
		return rc;
	ul_io_init(&c->cq_io, c->cch->fd, kib_cq_io_cb);
	rc = ul_io_start(net->loop, &c->cq_io, EPOLLIN);
	if (rc < 0)
		return rc;
	for (int i = 0; i < c->nrx; i++) {
		rc = kib_post_rx(&c->rxs[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The source port of the peer that asks (the CM's address of the request's
 * id), -1 if it has none we know. */
static int kib_peer_port(struct rdma_cm_id *cmid)
{
	const struct sockaddr *sa = rdma_get_peer_addr(cmid);

	if (sa && sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa && sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return -1;
}

/* Starts address resolution from `src` to `dst`: with use_privileged_port,
 * as the kernel, from the highest free port below 1024 (address reuse on,
 * so connections may share one), so that a peer with
 * require_privileged_port accepts us. Without the privilege (EACCES: not
 * root, no CAP_NET_BIND_SERVICE) it says so once and uses any port, as
 * socklnd does. Returns 0 or -1 with errno. */
static int kib_resolve_addr(struct kib_conn *c, struct sockaddr_in *src, struct sockaddr_in *dst)
{
	struct kib_net *net = c->net;
	int one = 1;

	if (net->tun.use_priv_port && !net->no_priv_port) {
		if (rdma_set_option(c->cmid, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
				    sizeof(one)) != 0)
			return -1;
		for (int port = 1023; port > 0; port--) {
			src->sin_port = htons((uint16_t)port);
			if (rdma_resolve_addr(c->cmid, (struct sockaddr *)src, (struct sockaddr *)dst,
					      KIB_RESOLVE_TIMEOUT_MS) == 0) {
				lnet_ni_log(net->ni, ULNET_LOG_DEBUG,
					    "o2iblnd: %s: bound to port %d", c->name, port);
				return 0;
			}
			if (errno == EACCES || errno == EPERM) {
				net->no_priv_port = true;
				lnet_ni_log(net->ni, ULNET_LOG_WARN,
					    "o2iblnd: %s: cannot bind a privileged port (%s): connecting "
					    "from any port; a peer with require_privileged_port=1 refuses "
					    "it", c->name, strerror(errno));
				break;
			}
			if (errno != EADDRINUSE && errno != EADDRNOTAVAIL)
				return -1;
		}
		if (!net->no_priv_port) {
			lnet_ni_log(net->ni, ULNET_LOG_ERROR,
				    "o2iblnd: %s: no free privileged port", c->name);
			errno = EADDRINUSE;
			return -1;
		}
	}
	src->sin_port = 0;
	return rdma_resolve_addr(c->cmid, (struct sockaddr *)src, (struct sockaddr *)dst,
				 KIB_RESOLVE_TIMEOUT_MS);
}

int kib_connect_peer(struct kib_peer *peer)
{
	struct kib_net *net = peer->net;
	struct sockaddr_in src, dst;
	struct kib_conn *c;

	if (net->link_down) {
		/* our link, not the peer: its aliveness stays as it is */
		kib_tx_fail_list(net, &peer->tx_queue, -ENETUNREACH);
		return -ENETUNREACH;
	}
	c = kib_conn_alloc(peer, true, peer->version ? peer->version : KIB_MSG_VERSION);
	if (!c) {
		kib_peer_connect_failed(peer, -ENOMEM, "no memory");
		return -ENOMEM;
	}
	peer->connecting++;
	c->state = KIB_CONN_ACTIVE_CONNECT;
	if (rdma_create_id(net->cmch, &c->cmid, c, RDMA_PS_TCP) != 0) {
		c->cmid = NULL;
		kib_close_conn(c, -errno, "rdma_create_id failed");
		return -EIO;
	}
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	src.sin_addr.s_addr = htonl(net->ip);
	dst = src;
	dst.sin_addr.s_addr = htonl(ulnet_nid_ipv4(&peer->nid));
	dst.sin_port = htons((uint16_t)net->tun.service);
	if (kib_resolve_addr(c, &src, &dst) != 0) {
		kib_close_conn(c, -errno ? -errno : -EHOSTUNREACH, "cannot resolve address");
		return -EHOSTUNREACH;
	}
	lnet_ni_log(net->ni, ULNET_LOG_DEBUG, "o2iblnd: %s: connecting", c->name);
	return 0;
}

/* A peer with no connection: conns_per_peer connects at once, as the
 * kernel's kiblnd_launch_tx() does for a new peer (a reconnect after a
 * rejection is one, as there). Stops at a failure, which may have freed
 * the peer. */
void kib_connect_peer_all(struct kib_peer *peer)
{
	int n = peer->net->tun.conns_per_peer;

	for (int i = 0; i < n; i++)
		if (kib_connect_peer(peer) < 0)
			break;
}

static void kib_send_connreq(struct kib_conn *c)
{
	struct kib_net *net = c->net;
	struct rdma_conn_param cp;
	struct kib_msg m;
	uint8_t buf[KIB_CONNMSG_SIZE];
	ssize_t n;
	int rc;

	rc = kib_conn_setup_qp(c);
	if (rc < 0) {
		kib_close_conn(c, rc, "cannot set up the QP");
		return;
	}
	memset(&m, 0, sizeof(m));
	m.version = (uint16_t)c->version;
	m.type = KIB_MSG_CONNREQ;
	m.srcnid = net->nid4;
	m.srcstamp = net->incarnation;
	m.dstnid = c->peer->nid4;
	m.dststamp = c->peer->incarnation;
	m.cp.queue_depth = (uint16_t)c->queue_depth;
	m.cp.max_frags = (uint16_t)c->max_frags;
	m.cp.max_msg_size = KIB_MSG_SIZE;
	n = kib_msg_encode(&m, NULL, 0, false, buf, sizeof(buf));
	if (n < 0) {
		kib_close_conn(c, (int)n, "cannot encode CONNREQ");
		return;
	}
	/* the kernel checksums its CONNREQ too (kiblnd_pack_msg) */
	kib_msg_finish(&net->tun, buf, (uint32_t)n, c->cksum_form);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = buf;
	cp.private_data_len = (uint8_t)n;
	cp.flow_control = 1;
	cp.retry_count = (uint8_t)net->tun.retry_count;
	cp.rnr_retry_count = (uint8_t)net->tun.rnr_retry_count;
	/* the connect request's time bound counts from here, as the kernel's
	 * (ibc_last_send at rdma_connect): address and route resolution
	 * before it were bounded by their own 5 s each */
	c->last_send = kib_now(net);
	if (rdma_connect(c->cmid, &cp) != 0)
		kib_close_conn(c, -errno ? -errno : -EIO, "rdma_connect failed");
}

/* `c` is no longer one to send on (closing or destroyed). */
void kib_peer_unlink_conn(struct kib_peer *peer, struct kib_conn *c)
{
	if (kib_list_empty(&c->plink))
		return;
	kib_list_del(&c->plink);
	if (peer->conn == c)
		peer->conn = kib_list_empty(&peer->estab)
				     ? NULL : kib_container(peer->estab.next, struct kib_conn, plink);
}

/* The established connection to send the next tx on: each in turn, as
 * the kernel's kiblnd_get_conn_locked(). NULL: none. */
struct kib_conn *kib_peer_send_conn(struct kib_peer *peer)
{
	struct kib_conn *c = peer->conn;
	struct kib_list *next;

	if (!c)
		return NULL;
	next = c->plink.next == &peer->estab ? peer->estab.next : c->plink.next;
	peer->conn = kib_container(next, struct kib_conn, plink);
	return c;
}

void kib_peer_connect_failed(struct kib_peer *peer, int error, const char *why)
{
	struct kib_net *net = peer->net;

	if (peer->connecting || peer->accepting || peer->conn)
		return;         /* another attempt may still make it */
	peer->retry_at = kib_now(net) + KIB_NS;
	if (!kib_list_empty(&peer->tx_queue))
		lnet_ni_log(net->ni, ULNET_LOG_ERROR,
			    "o2iblnd: %s: connection failed (%s): %d, failing its queued messages",
			    peer->nidstr, why, error);
	/* the peer NI is down until heard from (the core takes only its own
	 * lock, and never calls an LND with it held) */
	if (error && error != -ESHUTDOWN)
		lnet_notify_peer_ni(net->ni, &peer->nid, error);
	kib_tx_fail_list(net, &peer->tx_queue, error);
}

void kib_conn_established(struct kib_conn *c)
{
	struct kib_peer *peer = c->peer;
	struct kib_net *net = c->net;

	if (c->state == KIB_CONN_ACTIVE_CONNECT)
		peer->connecting--;
	else if (c->state == KIB_CONN_PASSIVE_WAIT)
		peer->accepting--;
	c->state = KIB_CONN_ESTABLISHED;
	c->last_send = kib_now(net);
	peer->races = 0;
	peer->reconnecting = 0;
	/* another established connection to the same peer instance stays:
	 * when both sides connect at once and each accepts the other's
	 * attempt (the race rule rejects only while connecting), closing
	 * one would fail what is in flight on it, on both sides. As the
	 * kernel, only those of an older instance of the peer go. */
	for (struct kib_list *l = peer->estab.next, *n; l != &peer->estab; l = n) {
		struct kib_conn *o = kib_container(l, struct kib_conn, plink);

		n = l->next;
		if (o->version != c->version || o->incarnation != c->incarnation)
			kib_close_conn(o, -ESTALE, "replaced by a connection to a newer instance");
	}
	peer->version = c->version;
	peer->incarnation = c->incarnation;
	kib_list_add_tail(&c->plink, &peer->estab);
	if (!peer->conn)
		peer->conn = c;
	/* which side checksums (and in which char form) says at once why a
	 * peer would drop our messages as "Bad checksum" */
	lnet_ni_log(net->ni, ULNET_LOG_INFO, "o2iblnd: %s: established (%s, queue depth %d, "
		    "checksums: ours %s, the peer's %s)", c->name, c->active ? "active" : "passive",
		    c->queue_depth,
		    !net->tun.cksum ? "off" : c->cksum_form == KIB_CKSUM_UNSIGNED ? "on (unsigned char)"
										 : "on (signed char)",
		    !c->peer_cksum ? "off" : c->cksum_form == KIB_CKSUM_UNSIGNED ? "on (unsigned char)"
										 : "on (signed char)");
	if (lnet_ni_log_enabled(net->ni, ULNET_LOG_DEBUG)) {
		/* the RC transport's retry rules, as the CM set them: an ack
		 * timeout of 0 would leave a lost packet unretried for good */
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (!ibv_query_qp(c->qp, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY, &ia))
			lnet_ni_log(net->ni, ULNET_LOG_DEBUG,
				    "o2iblnd: %s: qp 0x%x: ack timeout %u (4.096 us << n), retry %u, rnr retry %u",
				    c->name, c->qp->qp_num, a.timeout, a.retry_cnt, a.rnr_retry);
	}
	while (!kib_list_empty(&peer->tx_queue)) {
		struct kib_tx *tx = kib_container(peer->tx_queue.next, struct kib_tx, link);

		kib_list_del(&tx->link);
		tx->queued = false;
		kib_queue_tx(c, tx);
	}
	while (!kib_list_empty(&c->early_rxs) && c->state == KIB_CONN_ESTABLISHED) {
		struct kib_rx *rx = kib_container(c->early_rxs.next, struct kib_rx, early);

		kib_list_del(&rx->early);
		kib_handle_rx(rx);
	}
	if (c->state == KIB_CONN_ESTABLISHED)
		kib_check_sends(c);
}

void kib_close_conn(struct kib_conn *c, int error, const char *why)
{
	struct kib_peer *peer = c->peer;
	struct kib_net *net = c->net;
	enum kib_conn_state old = c->state;

	if (old >= KIB_CONN_CLOSING)
		return;
	c->state = KIB_CONN_CLOSING;
	c->closing_since = kib_now(net);
	c->comms_error = error;
	lnet_ni_log(net->ni, old == KIB_CONN_ESTABLISHED && error == -ESHUTDOWN ? ULNET_LOG_INFO
										: ULNET_LOG_WARN,
		    "o2iblnd: %s: closing: %s (%d)", c->name, why, error);
	kib_peer_unlink_conn(peer, c);
	if (old == KIB_CONN_ESTABLISHED && error && error != -ESHUTDOWN && error != -ESTALE)
		lnet_notify_peer_ni(net->ni, &peer->nid, error);
	if (c->cmid && old != KIB_CONN_INIT)
		rdma_disconnect(c->cmid);
	kib_tx_fail_list(net, &c->tx_queue, error);
	kib_tx_fail_list(net, &c->tx_nocred, error);
	kib_tx_fail_list(net, &c->tx_rsrvd, error);
	if (old == KIB_CONN_ACTIVE_CONNECT) {
		peer->connecting--;
		if (!c->reconnect)
			kib_peer_connect_failed(peer, error, why);
	} else if (old == KIB_CONN_PASSIVE_WAIT) {
		peer->accepting--;
		kib_peer_connect_failed(peer, error, why);
	}
	/* a connection that never carried anything goes at once */
	if (!c->cmid || !c->qp || old == KIB_CONN_ACTIVE_CONNECT || old == KIB_CONN_PASSIVE_WAIT)
		kib_destroy_conn(c);
}

static void kib_conn_free(struct kib_conn *c)
{
	kib_rx_free(c);
	free(c);
}

void kib_conn_decref(struct kib_conn *c)
{
	if (--c->refs == 0)
		kib_conn_free(c);
}

void kib_destroy_conn(struct kib_conn *c)
{
	struct kib_net *net = c->net;
	struct kib_peer *peer = c->peer;

	if (c->state == KIB_CONN_DEAD)
		return;
	if (c->state < KIB_CONN_CLOSING) {
		/* a connection still connecting is destroyed (and may be
		 * freed) by kib_close_conn() itself: a reference keeps it
		 * readable here */
		c->refs++;
		kib_close_conn(c, -ECONNABORTED, "destroyed");
		if (c->state == KIB_CONN_DEAD) {
			kib_conn_decref(c);
			return;
		}
		c->refs--;
	}
	c->state = KIB_CONN_DEAD;
	if (c->qp) {
		/* nothing moves through it from now on (a closed connection's
		 * QP is in this state already: rdma_disconnect() put it there) */
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(c->qp, &qa, IBV_QP_STATE);
	}
	if (c->cq) {
		ul_io_stop(net->loop, &c->cq_io);
		kib_poll_cq(c);
	}
	/* the QP, CQ and channel are destroyed on the reaper's thread: that
	 * may block for long (o2ib_reap.c) */
	kib_reap(net, c->qp, c->cq, c->cch);
	if (c->cmid)
		c->cmid->qp = NULL;
	c->qp = NULL;
	c->cq = NULL;
	c->cch = NULL;
	/* posted sends that will never complete now */
	while (!kib_list_empty(&c->active_txs)) {
		struct kib_tx *tx = kib_container(c->active_txs.next, struct kib_tx, link);

		kib_list_del(&tx->link);
		tx->sending = 0;
		if (!tx->status)
			tx->status = c->comms_error ? c->comms_error : -ECONNABORTED;
		kib_tx_done(net, tx);
	}
	kib_list_init(&c->early_rxs);
	if (c->cmid)
		rdma_destroy_id(c->cmid);
	c->cmid = NULL;
	kib_list_del(&c->link);
	kib_peer_unlink_conn(peer, c);
	peer->nconns--;
	if (c->reconnect && !net->shutdown && !kib_list_empty(&peer->tx_queue) && !peer->conn &&
	    !peer->connecting && !peer->accepting)
		kib_connect_peer(peer);
	else if (c->reconnect)
		kib_peer_connect_failed(peer, c->comms_error, "no reconnect");
	kib_peer_maybe_free(peer);
	kib_conn_decref(c);
}

/* Every rejection carries a kib_rej, so that the peer's LND logs (and acts
 * on) the reason, not a consumer-defined error without one. */
static void kib_reject_send(struct rdma_cm_id *cmid, const struct kib_rej *rej)
{
	uint8_t buf[KIB_REJ_SIZE];
	ssize_t n = kib_rej_encode(rej, false, buf, sizeof(buf));

	rdma_reject(cmid, buf, n > 0 ? (uint8_t)n : 0);
}

static void kib_reject(struct kib_net *net, struct rdma_cm_id *cmid, const struct kib_rej *rej)
{
	kib_reject_send(cmid, rej);
	rdma_destroy_id(cmid);
	(void)net;
}

static void kib_passive_connect(struct kib_net *net, struct rdma_cm_id *cmid, const uint8_t *priv,
				size_t len)
{
	struct kib_accept_ctx ctx;
	struct kib_msg req, ack;
	struct kib_rej rej;
	struct kib_peer *peer = NULL;
	struct kib_conn *c;
	struct rdma_conn_param cp;
	uint8_t buf[KIB_CONNMSG_SIZE];
	const char *why;
	char src[ULNET_NIDSTR_SIZE] = "?";
	enum kib_accept_verdict v;
	ssize_t n;
	int rc;

	memset(&ctx, 0, sizeof(ctx));
	ctx.my_nid = net->nid4;
	ctx.my_incarnation = net->incarnation;
	ctx.queue_depth_max = net->tun.peer_credits;
	/* a dead link takes no connection (o2ib_link.c) */
	ctx.ready = !net->shutdown && !net->link_down;
	ctx.require_priv_port = net->tun.require_priv_port;
	ctx.peer_port = kib_peer_port(cmid);
	/* the peer as we know it, if the request names one */
	if (len >= KIB_CONNMSG_SIZE && kib_msg_decode(priv, len, &req) > 0) {
		peer = kib_peer_find(net, req.srcnid);
		if (peer) {
			ctx.peer_known = true;
			ctx.peer_connecting = peer->connecting > 0;
			ctx.peer_version = peer->version;
			ctx.peer_incarnation = peer->incarnation;
			ctx.peer_races = peer->races;
		}
	}
	v = kib_connreq_check(priv, len, &ctx, &req, &rej, &why);
	if (req.srcnid) {
		ulnet_nid_t nid;

		ulnet_nid_from_nid4(req.srcnid, &nid);
		ulnet_nid_str(&nid, src);
	}
	if (v != KIB_ACCEPT) {
		if (v == KIB_ACCEPT_STALE_PEER && peer) {
			while (peer->conn)
				kib_close_conn(peer->conn, -ESTALE, "peer restarted");
			peer->incarnation = req.srcstamp;
			peer->version = req.version;
		}
		if (rej.why == KIB_REJECT_CONN_RACE && peer)
			peer->races++;
		lnet_ni_log(net->ni, rej.why == KIB_REJECT_CONN_RACE ? ULNET_LOG_DEBUG : ULNET_LOG_WARN,
			    "o2iblnd: rejecting connection request from %s: %s (reject reason %u)",
			    src, why, rej.why);
		kib_reject(net, cmid, &rej);
		return;
	}
	if (!peer)
		peer = kib_peer_create(net, req.srcnid);
	if (!peer) {
		rej.why = KIB_REJECT_NO_RESOURCES;
		kib_reject(net, cmid, &rej);
		return;
	}
	if (peer->version == 0) {
		peer->version = req.version;
		peer->incarnation = req.srcstamp;
	}
	peer->queue_depth = req.cp.queue_depth;
	peer->max_frags = req.cp.max_frags;
	peer->reconnecting = 0;
	peer->races = 0;
	c = kib_conn_alloc(peer, false, req.version);
	if (!c) {
		rej.why = KIB_REJECT_NO_RESOURCES;
		kib_reject(net, cmid, &rej);
		kib_peer_maybe_free(peer);
		return;
	}
	peer->accepting++;
	c->state = KIB_CONN_PASSIVE_WAIT;
	c->cmid = cmid;
	cmid->context = c;
	c->incarnation = req.srcstamp;
	c->credits = c->queue_depth;
	c->reserved = c->queue_depth;
	c->cksum_form = req.cksum_unsigned ? KIB_CKSUM_UNSIGNED : KIB_CKSUM_SIGNED;
	c->peer_cksum = req.cksum != 0;
	rc = kib_conn_setup_qp(c);
	if (rc < 0) {
		rej.why = KIB_REJECT_NO_RESOURCES;
		kib_reject_send(cmid, &rej);    /* the connection owns cmid */
		kib_close_conn(c, rc, "cannot set up the QP");
		return;
	}
	memset(&ack, 0, sizeof(ack));
	ack.version = (uint16_t)c->version;
	ack.type = KIB_MSG_CONNACK;
	ack.srcnid = net->nid4;
	ack.srcstamp = net->incarnation;
	ack.dstnid = req.srcnid;
	ack.dststamp = req.srcstamp;
	ack.cp.queue_depth = (uint16_t)c->queue_depth;
	ack.cp.max_frags = (uint16_t)c->max_frags;
	ack.cp.max_msg_size = KIB_MSG_SIZE;
	n = kib_msg_encode(&ack, NULL, 0, false, buf, sizeof(buf));
	if (n > 0)
		kib_msg_finish(&net->tun, buf, (uint32_t)n, c->cksum_form);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = buf;
	cp.private_data_len = n > 0 ? (uint8_t)n : 0;
	cp.flow_control = 1;
	cp.retry_count = (uint8_t)net->tun.retry_count;
	cp.rnr_retry_count = (uint8_t)net->tun.rnr_retry_count;
	if (rdma_accept(cmid, &cp) != 0)
		kib_close_conn(c, -errno ? -errno : -EIO, "rdma_accept failed");
	else
		lnet_ni_log(net->ni, ULNET_LOG_DEBUG, "o2iblnd: %s: accepted", c->name);
}

static void kib_active_established(struct kib_conn *c, const uint8_t *priv, size_t len)
{
	struct kib_net *net = c->net;
	struct kib_msg ack;
	const char *why;
	int rc = kib_connack_check(priv, len, c->version, c->queue_depth, c->max_frags, net->nid4,
				   net->incarnation, &ack, &why);

	if (rc < 0) {
		lnet_ni_log(net->ni, ULNET_LOG_ERROR, "o2iblnd: %s: bad CONNACK: %s",
			    c->name, why);
		kib_close_conn(c, rc, why);
		return;
	}
	c->incarnation = ack.srcstamp;
	c->credits = ack.cp.queue_depth;
	c->reserved = ack.cp.queue_depth;
	c->queue_depth = ack.cp.queue_depth;
	c->max_frags = ack.cp.max_frags;
	c->cksum_form = ack.cksum_unsigned ? KIB_CKSUM_UNSIGNED : KIB_CKSUM_SIGNED;
	c->peer_cksum = ack.cksum != 0;
	kib_conn_established(c);
}

static void kib_rejected(struct kib_conn *c, int status, const uint8_t *priv, size_t len)
{
	struct kib_peer *peer = c->peer;
	struct kib_rej rej;
	const char *why = "rejected";
	int qd = peer->queue_depth, mf = peer->max_frags, err;
	bool has = kib_cm_rejection(status, priv, len, &rej, &err, &why) == 1;

	if (has && (rej.why == KIB_REJECT_CONN_RACE || rej.why == KIB_REJECT_CONN_STALE ||
		    rej.why == KIB_REJECT_CONN_UNCOMPAT || rej.why == KIB_REJECT_MSG_QUEUE_SIZE ||
		    rej.why == KIB_REJECT_RDMA_FRAGS)) {
		bool rc = kib_reconnect_check(&rej, true, !kib_list_empty(&peer->tx_queue),
					      peer->version != rej.version, peer->accepting > 0,
					      &qd, &mf, &why);

		lnet_ni_log(c->net->ni, rej.why == KIB_REJECT_CONN_RACE ? ULNET_LOG_DEBUG : ULNET_LOG_WARN,
			    "o2iblnd: %s: rejected (reason %u): %s (%s)", c->name, rej.why,
			    rc ? "reconnect" : "don't reconnect", why);
		if (rc && rej.version == KIB_MSG_VERSION) {
			c->reconnect = true;
			peer->reconnecting++;
			peer->queue_depth = qd;
			peer->max_frags = mf;
			peer->version = rej.version;
			if (rej.incarnation)
				peer->incarnation = rej.incarnation;
		}
		kib_close_conn(c, -ECONNREFUSED, "rejected");
		return;
	}
	if (has)
		why = rej.why == KIB_REJECT_NO_RESOURCES ? "peer out of resources"
		      : rej.why == KIB_REJECT_EARLY	 ? "peer not ready"
		      : rej.why == KIB_REJECT_FATAL	 ? "fatal error at the peer"
							 : "unknown reason";
	lnet_ni_log(c->net->ni, ULNET_LOG_ERROR, "o2iblnd: %s: connection rejected: %s (status %d)",
		    c->name, why, status);
	kib_close_conn(c, has ? -ECONNREFUSED : err, why);
}

static void kib_cm_event(struct kib_net *net, struct rdma_cm_event *ev, const uint8_t *priv,
			 size_t plen)
{
	struct rdma_cm_id *id = ev->id;
	struct kib_conn *c;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		kib_passive_connect(net, id, priv, plen);
		return;
	}
	if (id == net->listener || !id->context || id->context == net)
		return;
	c = id->context;
	/* closing a connection that is still connecting frees it: the
	 * handlers below may go on using it (DISCONNECTED destroys it
	 * after closing it) */
	c->refs++;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (c->state != KIB_CONN_ACTIVE_CONNECT)
			break;
		/* the IP ToS of RoCE QoS, set where the kernel's
		 * kiblnd_set_tos() sets it: before the route is resolved */
		if (net->tun.tos >= 0) {
			uint8_t tos = (uint8_t)net->tun.tos;

			if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
					    sizeof(tos)) != 0) {
				kib_close_conn(c, -errno ? -errno : -EINVAL, "cannot set the tos");
				break;
			}
		}
		if (rdma_resolve_route(id, KIB_RESOLVE_TIMEOUT_MS) != 0)
			kib_close_conn(c, -EHOSTUNREACH, "cannot resolve route");
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (c->state == KIB_CONN_ACTIVE_CONNECT)
			kib_send_connreq(c);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR: {
		/* the CM's own status (an address resolution's -ETIMEDOUT: no
		 * ARP answer in time; a route lookup's error) says which step
		 * failed, as the kernel's "ADDR ERROR %d" does */
		char why[64];

		snprintf(why, sizeof(why), "%s, status %d", rdma_event_str(ev->event), ev->status);
		kib_close_conn(c, -EHOSTUNREACH, why);
		break;
	}
	case RDMA_CM_EVENT_REJECTED:
		if (c->state == KIB_CONN_ACTIVE_CONNECT)
			kib_rejected(c, ev->status, priv, plen);
		else
			kib_close_conn(c, -ECONNREFUSED, "rejected");
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (c->state == KIB_CONN_ACTIVE_CONNECT)
			kib_active_established(c, priv, plen);
		else if (c->state == KIB_CONN_PASSIVE_WAIT)
			kib_conn_established(c);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		kib_close_conn(c, -ECONNRESET, "disconnected by the peer");
		kib_destroy_conn(c);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		kib_close_conn(c, -ENODEV, "device removed");
		kib_destroy_conn(c);
		break;
	default:
		break;
	}
	kib_conn_decref(c);
}

int kib_cm_handle_events(struct kib_net *net)
{
	struct rdma_cm_event *ev;
	int n = 0;

	while (rdma_get_cm_event(net->cmch, &ev) == 0) {
		struct rdma_cm_event copy = *ev;
		uint8_t priv[256];
		size_t plen = 0;

		if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
			plen = ev->param.conn.private_data_len;
			if (plen > sizeof(priv))
				plen = sizeof(priv);
			memcpy(priv, ev->param.conn.private_data, plen);
		}
		rdma_ack_cm_event(ev);
		kib_lock(net);
		/* going down, a connect request is still judged: the NI is
		 * not ready, which rejects it REJECT_EARLY as the kernel's */
		if (!net->shutdown || copy.event == RDMA_CM_EVENT_CONNECT_REQUEST)
			kib_cm_event(net, &copy, priv, plen);
		kib_unlock(net);
		n++;
	}
	return n;
}

void kib_cm_io_cb(struct ul_io *io, uint32_t revents)
{
	struct kib_net *net = kib_container(io, struct kib_net, cm_io);

	(void)revents;
	kib_cm_handle_events(net);
}
