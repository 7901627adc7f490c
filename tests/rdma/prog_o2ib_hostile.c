/* SPDX-License-Identifier: MIT */
/*
 * prog_o2ib_hostile.c - a misbehaving o2ib peer, for test_o2ib_ping.sh:
 * against an o2ib NI at PEER_IP (service port 987) from MY_IP, it
 *   1. connects with garbage private data: expects a rejection
 *      (REJECT_FATAL, the kernel's answer to what it cannot parse);
 *   2. connects with a CONNREQ asking for a queue depth of 64: expects
 *      REJECT_MSG_QUEUE_SIZE with the peer's own depth in the parameters;
 *   3. connects properly (CONNACK checked), then sends a malformed message
 *      (bad magic): expects the peer to disconnect;
 *   4. connects properly twice, as the same instance (what both sides of a
 *      connection race end up with when each accepted the other's
 *      attempt): expects both to stay up for 3 s, as the kernel keeps
 *      both, where closing the first would fail what was in flight on it.
 * Its CONNREQs claim the NID of MY_IP + 80 (last octet), not MY_IP's own.
 * Prints one line per step; exit 0 when every step went as expected.
 *
 * usage: prog_o2ib_hostile MY_IP PEER_IP
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lnd/o2iblnd/o2ib_wire.h"

static struct rdma_event_channel *ch;
static int service = 987;     /* the node's ko2iblnd service port */

static int wait_event(struct rdma_cm_event *out, uint8_t *priv, size_t *plen, int secs)
{
	struct pollfd pfd = { ch->fd, POLLIN, 0 };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, secs * 1000) <= 0)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(ch, &ev) != 0)
		return -errno;
	*out = *ev;
	*plen = 0;
	if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
		*plen = ev->param.conn.private_data_len;
		if (*plen > 256)
			*plen = 256;
		memcpy(priv, ev->param.conn.private_data, *plen);
	}
	rdma_ack_cm_event(ev);
	return 0;
}

static ulnet_nid4_t nid4_of(const char *ip)
{
	struct in_addr a;

	inet_aton(ip, &a);
	return ((uint64_t)ULNET_LND_O2IB << 48) | ntohl(a.s_addr);
}

/* The NID it claims: its address + 80 in the last octet, so that it is
 * not taken for the node that runs it (an LNet node may be there too). */
static ulnet_nid4_t fake_nid(const char *ip)
{
	return nid4_of(ip) + 80;
}

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[8192];
};

/* Resolve and connect with `priv`; returns the event that ends it. */
static int try_connect(struct conn *c, const char *me, const char *peer, const uint8_t *priv,
		       size_t len, struct rdma_cm_event *ev, uint8_t *rpriv, size_t *rlen)
{
	struct sockaddr_in src = { 0 }, dst = { 0 };
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param cp;
	int rc;

	memset(c, 0, sizeof(*c));
	src.sin_family = dst.sin_family = AF_INET;
	inet_aton(me, &src.sin_addr);
	inet_aton(peer, &dst.sin_addr);
	dst.sin_port = htons(service);
	if (rdma_create_id(ch, &c->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(c->id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 5000))
		return -errno;
	if ((rc = wait_event(ev, rpriv, rlen, 10)) || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		return rc ? rc : -EIO;
	if (rdma_resolve_route(c->id, 5000))
		return -errno;
	if ((rc = wait_event(ev, rpriv, rlen, 10)) || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return rc ? rc : -EIO;
	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = ibv_create_cq(c->id->verbs, 64, NULL, NULL, 0);
	c->mr = ibv_reg_mr(c->pd, c->buf, sizeof(c->buf), IBV_ACCESS_LOCAL_WRITE);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (!c->pd || !c->cq || !c->mr || rdma_create_qp(c->id, c->pd, &qa))
		return -ENOMEM;
	/* room for whatever the peer sends before it notices */
	for (int i = 0; i < 4; i++) {
		struct ibv_sge sge = { (uintptr_t)c->buf + 4096, 4096, c->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

		ibv_post_recv(c->id->qp, &wr, &bad);
	}
	memset(&cp, 0, sizeof(cp));
	cp.private_data = priv;
	cp.private_data_len = (uint8_t)len;
	cp.flow_control = 1;
	cp.retry_count = 5;
	cp.rnr_retry_count = 6;
	if (rdma_connect(c->id, &cp))
		return -errno;
	return wait_event(ev, rpriv, rlen, 20);
}

static void conn_free(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
}

static size_t connreq(uint8_t *buf, const char *me, const char *peer, int qd)
{
	struct kib_msg m;

	memset(&m, 0, sizeof(m));
	m.version = KIB_MSG_VERSION;
	m.type = KIB_MSG_CONNREQ;
	m.srcnid = fake_nid(me);
	m.dstnid = nid4_of(peer);
	m.srcstamp = 0x1234;
	m.cp.queue_depth = (uint16_t)qd;
	m.cp.max_frags = KIB_MAX_RDMA_FRAGS;
	m.cp.max_msg_size = KIB_MSG_SIZE;
	return (size_t)kib_msg_encode(&m, NULL, 0, false, buf, KIB_CONNMSG_SIZE);
}

int main(int argc, char **argv)
{
	struct rdma_cm_event ev;
	uint8_t priv[256], rpriv[256];
	size_t rlen;
	struct kib_rej rej;
	struct conn c;
	int fails = 0, rc;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: prog_o2ib_hostile MY_IP PEER_IP [SERVICE_PORT]\n");
		return 2;
	}
	if (argc == 4)
		service = atoi(argv[3]);
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("rdma_create_event_channel");
		return 1;
	}

	/* 1. garbage */
	memset(priv, 0x5a, KIB_CONNMSG_SIZE);
	rc = try_connect(&c, argv[1], argv[2], priv, KIB_CONNMSG_SIZE, &ev, rpriv, &rlen);
	if (rc == 0 && ev.event == RDMA_CM_EVENT_REJECTED && kib_rej_decode(rpriv, rlen, &rej) >= 0 &&
	    rej.why == KIB_REJECT_FATAL) {
		printf("hostile: garbage CONNREQ rejected (reason %u)\n", rej.why);
	} else {
		printf("hostile: FAIL garbage CONNREQ: rc %d event %s\n", rc,
		       rc ? "-" : rdma_event_str(ev.event));
		fails++;
	}
	conn_free(&c);

	/* 2. queue depth too large */
	rlen = connreq(priv, argv[1], argv[2], 64);
	rc = try_connect(&c, argv[1], argv[2], priv, rlen, &ev, rpriv, &rlen);
	if (rc == 0 && ev.event == RDMA_CM_EVENT_REJECTED && kib_rej_decode(rpriv, rlen, &rej) >= 0 &&
	    rej.why == KIB_REJECT_MSG_QUEUE_SIZE && rej.has_cp) {
		printf("hostile: queue depth 64 rejected (reason %u, peer's depth %u, incarnation %s)\n",
		       rej.why, rej.cp.queue_depth, rej.incarnation ? "set" : "0");
	} else {
		printf("hostile: FAIL queue depth 64: rc %d event %s\n", rc,
		       rc ? "-" : rdma_event_str(ev.event));
		fails++;
	}
	conn_free(&c);

	/* 3. a proper connection, then a malformed message */
	rlen = connreq(priv, argv[1], argv[2], 8);
	rc = try_connect(&c, argv[1], argv[2], priv, rlen, &ev, rpriv, &rlen);
	struct kib_msg ack;

	if (rc == 0 && ev.event == RDMA_CM_EVENT_ESTABLISHED && kib_msg_decode(rpriv, rlen, &ack) > 0 &&
	    ack.type == KIB_MSG_CONNACK && ack.dstnid == fake_nid(argv[1]) && ack.dststamp == 0x1234) {
		struct ibv_sge sge = { (uintptr_t)c.buf, 100, c.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

		printf("hostile: connected (CONNACK queue depth %u, max_frags %u)\n",
		       ack.cp.queue_depth, ack.cp.max_frags);
		memset(c.buf, 0xee, 100);
		if (ibv_post_send(c.id->qp, &wr, &bad)) {
			printf("hostile: FAIL cannot post\n");
			fails++;
		} else {
			rc = wait_event(&ev, rpriv, &rlen, 20);
			if (rc == 0 && ev.event == RDMA_CM_EVENT_DISCONNECTED) {
				printf("hostile: malformed message: the peer disconnected\n");
			} else {
				printf("hostile: FAIL malformed message: rc %d event %s\n", rc,
				       rc ? "-" : rdma_event_str(ev.event));
				fails++;
			}
		}
	} else {
		printf("hostile: FAIL proper CONNREQ: rc %d event %s\n", rc,
		       rc ? "-" : rdma_event_str(ev.event));
		fails++;
	}
	conn_free(&c);

	/* 4. two connections of one instance */
	struct conn c2;
	int up = 0;

	rlen = connreq(priv, argv[1], argv[2], 8);
	rc = try_connect(&c, argv[1], argv[2], priv, rlen, &ev, rpriv, &rlen);
	up += rc == 0 && ev.event == RDMA_CM_EVENT_ESTABLISHED;
	rlen = connreq(priv, argv[1], argv[2], 8);
	rc = try_connect(&c2, argv[1], argv[2], priv, rlen, &ev, rpriv, &rlen);
	up += rc == 0 && ev.event == RDMA_CM_EVENT_ESTABLISHED;
	if (up != 2) {
		printf("hostile: FAIL two connections: %d established (rc %d event %s)\n", up, rc,
		       rc ? "-" : rdma_event_str(ev.event));
		fails++;
	} else if ((rc = wait_event(&ev, rpriv, &rlen, 3)) != -ETIMEDOUT) {
		printf("hostile: FAIL two connections: the %s one got %s\n",
		       rc ? "?" : ev.id == c.id ? "first" : "second", rc ? "an error" : rdma_event_str(ev.event));
		fails++;
	} else {
		printf("hostile: two connections of one instance: both up after 3 s\n");
	}
	if (c.id)
		rdma_disconnect(c.id);
	if (c2.id)
		rdma_disconnect(c2.id);
	conn_free(&c);
	conn_free(&c2);
	rdma_destroy_event_channel(ch);
	return fails ? 1 : 0;
}
