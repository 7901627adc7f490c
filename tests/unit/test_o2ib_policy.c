/* SPDX-License-Identifier: MIT */
/*
 * test_o2ib_policy.c - the o2ib LND's decisions (o2ib_policy.h): tunable
 * defaults, the passive side's CONNREQ verdicts and rejection reasons, the
 * CONNACK check, the connection race, reconnect rules, NOOPs and credits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_policy.h"

#define NID_A 0x000500000ad2000bULL  /* 10.210.0.11@o2ib */
#define NID_B 0x000500000ad2000cULL  /* 10.210.0.12@o2ib */

static size_t connmsg(uint8_t *buf, uint8_t type, ulnet_nid4_t src, ulnet_nid4_t dst,
		      uint64_t srcstamp, uint64_t dststamp, int qd, int frags, int msgsize)
{
	struct kib_msg m;

	memset(&m, 0, sizeof(m));
	m.version = KIB_MSG_VERSION;
	m.type = type;
	m.srcnid = src;
	m.dstnid = dst;
	m.srcstamp = srcstamp;
	m.dststamp = dststamp;
	m.cp.queue_depth = (uint16_t)qd;
	m.cp.max_frags = (uint16_t)frags;
	m.cp.max_msg_size = (uint32_t)msgsize;
	ssize_t n = kib_msg_encode(&m, NULL, 0, false, buf, KIB_CONNMSG_SIZE);

	assert_int_equal(n, KIB_CONNMSG_SIZE);
	return (size_t)n;
}

static void test_tunables(void **state)
{
	struct kib_tunables t;

	(void)state;
	assert_int_equal(kib_tunables_setup(&t, 0), 0);
	assert_int_equal(t.peer_credits, 8);
	assert_int_equal(t.peercredits_hiw, 4);
	assert_int_equal(t.concurrent_sends, 8);
	assert_int_equal(t.ntx, 512);
	assert_int_equal(t.timeout, 50);
	assert_int_equal(t.keepalive, 100);
	assert_int_equal(t.service, 987);
	assert_int_equal(kib_rx_msgs(8), 18);
	assert_int_equal(kib_tunables_setup(&t, 1), 0);
	assert_int_equal(t.peercredits_hiw, 0);
	assert_int_equal(kib_tunables_setup(&t, 256), -EINVAL);
}

static struct kib_accept_ctx ctx_b(void)
{
	struct kib_accept_ctx c;

	memset(&c, 0, sizeof(c));
	c.my_nid = NID_B;
	c.my_incarnation = 222;
	c.queue_depth_max = 8;
	c.ready = true;
	return c;
}

static void test_connreq(void **state)
{
	uint8_t buf[KIB_CONNMSG_SIZE];
	struct kib_accept_ctx c = ctx_b();
	struct kib_msg req;
	struct kib_rej rej;
	const char *why;
	size_t n;

	(void)state;
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 0, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_ACCEPT);
	assert_int_equal(req.srcstamp, 111);
	/* a smaller queue depth is taken */
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 222, 4, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_ACCEPT);
	/* too deep */
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 0, 16, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_MSG_QUEUE_SIZE);
	assert_int_equal(rej.cp.queue_depth, 8);
	assert_int_equal(rej.incarnation, 222);
	/* fragments: neither more nor (without FMR) fewer */
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 0, 8, KIB_MAX_RDMA_FRAGS + 1, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_RDMA_FRAGS);
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 0, 8, 32, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_RDMA_FRAGS);
	assert_int_equal(rej.cp.max_frags, KIB_MAX_RDMA_FRAGS);
	/* message size */
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 0, 8, KIB_MAX_RDMA_FRAGS, 8192);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_FATAL);
	/* not for us */
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_A, 111, 0, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_FATAL);
	/* stale: it thinks we are an older incarnation */
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 221, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_CONN_STALE);
	/* a CONNACK where a CONNREQ belongs */
	n = connmsg(buf, KIB_MSG_CONNACK, NID_A, NID_B, 111, 0, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_FATAL);
	/* NI not ready */
	c.ready = false;
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 0, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_EARLY);
	c.ready = true;
	/* garbage and short */
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(kib_connreq_check(buf, sizeof(buf), &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_FATAL);
	assert_int_equal(kib_connreq_check(buf, 3, &c, &req, &rej, &why), KIB_REJECT);
	/* the peer restarted */
	c.peer_known = true;
	c.peer_version = KIB_MSG_VERSION;
	c.peer_incarnation = 100;
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 0, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_ACCEPT_STALE_PEER);
	assert_int_equal(rej.why, KIB_REJECT_CONN_STALE);
}

static void test_race(void **state)
{
	uint8_t buf[KIB_CONNMSG_SIZE];
	struct kib_accept_ctx c = ctx_b();
	struct kib_msg req;
	struct kib_rej rej;
	const char *why;
	size_t n;

	(void)state;
	/* the kernel's nidhash: the address bytes read little-endian */
	assert_true(kib_nid4_hash(NID_A) < kib_nid4_hash(NID_B));
	c.peer_known = true;
	c.peer_connecting = true;
	c.peer_version = KIB_MSG_VERSION;
	c.peer_incarnation = 111;
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 0, 8, KIB_MAX_RDMA_FRAGS, 4096);
	/* B is higher: A's request loses */
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_CONN_RACE);
	/* after 20 races the lower NID is let win */
	c.peer_races = KIB_MAX_CONN_RACES;
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_ACCEPT);
	/* A, higher... no: A receiving B's request accepts it */
	c = ctx_b();
	c.my_nid = NID_A;
	c.peer_known = true;
	c.peer_connecting = true;
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_B, NID_A, 111, 0, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_ACCEPT);
}

static void test_connack(void **state)
{
	uint8_t buf[KIB_CONNMSG_SIZE];
	struct kib_msg ack;
	const char *why;
	size_t n;

	(void)state;
	n = connmsg(buf, KIB_MSG_CONNACK, NID_B, NID_A, 222, 111, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connack_check(buf, n, KIB_MSG_VERSION, 8, KIB_MAX_RDMA_FRAGS, NID_A, 111,
					   &ack, &why), 0);
	assert_int_equal(ack.srcstamp, 222);
	/* deeper than asked */
	assert_int_equal(kib_connack_check(buf, n, KIB_MSG_VERSION, 4, KIB_MAX_RDMA_FRAGS, NID_A, 111,
					   &ack, &why), -EPROTO);
	/* not our incarnation */
	assert_int_equal(kib_connack_check(buf, n, KIB_MSG_VERSION, 8, KIB_MAX_RDMA_FRAGS, NID_A, 112,
					   &ack, &why), -ESTALE);
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_B, NID_A, 222, 111, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connack_check(buf, n, KIB_MSG_VERSION, 8, KIB_MAX_RDMA_FRAGS, NID_A, 111,
					   &ack, &why), -EPROTO);
}

static void test_reconnect(void **state)
{
	struct kib_rej rej;
	const char *why;
	int qd = 8, mf = KIB_MAX_RDMA_FRAGS;

	(void)state;
	memset(&rej, 0, sizeof(rej));
	rej.why = KIB_REJECT_CONN_RACE;
	assert_true(kib_reconnect_check(&rej, true, true, false, false, &qd, &mf, &why));
	/* nothing waits, or the peer is connecting to us */
	assert_false(kib_reconnect_check(&rej, true, false, false, false, &qd, &mf, &why));
	assert_false(kib_reconnect_check(&rej, true, true, false, true, &qd, &mf, &why));
	rej.why = KIB_REJECT_MSG_QUEUE_SIZE;
	rej.has_cp = true;
	rej.cp.queue_depth = 4;
	assert_true(kib_reconnect_check(&rej, true, true, false, false, &qd, &mf, &why));
	assert_int_equal(qd, 4);
	rej.cp.queue_depth = 16;
	assert_false(kib_reconnect_check(&rej, true, true, false, false, &qd, &mf, &why));
	rej.has_cp = false;
	assert_false(kib_reconnect_check(&rej, true, true, false, false, &qd, &mf, &why));
}

static void test_credits(void **state)
{
	struct kib_tunables t;
	struct kib_credit_state s;

	(void)state;
	kib_tunables_setup(&t, 8);
	memset(&s, 0, sizeof(s));
	s.queue_depth = 8;
	s.credits = 8;
	/* few credits owed: no NOOP */
	s.outstanding = 3;
	assert_false(kib_need_noop(&s, &t));
	/* at the high-water mark, nothing queued to carry them */
	s.outstanding = 4;
	assert_true(kib_need_noop(&s, &t));
	/* a queued message will carry them... */
	s.queued = true;
	assert_false(kib_need_noop(&s, &t));
	/* ...unless it has no credit to go */
	s.credits = 0;
	assert_true(kib_need_noop(&s, &t));
	s.nocred_queued = true;
	assert_false(kib_need_noop(&s, &t));
	/* keepalive: nothing owed but idle too long */
	memset(&s, 0, sizeof(s));
	s.queue_depth = 8;
	s.credits = 8;
	s.keepalive_due = true;
	assert_true(kib_need_noop(&s, &t));
	/* a negotiated-down depth scales the mark: 4 * 4 / 8 = 2 */
	memset(&s, 0, sizeof(s));
	s.queue_depth = 4;
	s.credits = 4;
	s.outstanding = 2;
	assert_true(kib_need_noop(&s, &t));
	/* posting: credits and concurrent sends */
	s.credits = 0;
	assert_int_equal(kib_may_post(&s, &t, true), -EAGAIN);
	assert_int_equal(kib_may_post(&s, &t, false), 0);
	s.credits = 1;
	s.nsends_posted = t.concurrent_sends;
	assert_int_equal(kib_may_post(&s, &t, false), -EAGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tunables),
		cmocka_unit_test(test_connreq),
		cmocka_unit_test(test_race),
		cmocka_unit_test(test_connack),
		cmocka_unit_test(test_reconnect),
		cmocka_unit_test(test_credits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
