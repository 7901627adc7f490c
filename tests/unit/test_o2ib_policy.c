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

static int setup_pc(struct kib_tunables *t, int peer_credits)
{
	struct ulnet_ni_conf conf;
	const char *what;

	memset(&conf, 0, sizeof(conf));
	conf.tun.peer_credits = peer_credits;
	conf.tun.tos = -1;
	return kib_tunables_setup(t, &conf, 0, &what);
}

static void test_tunables(void **state)
{
	struct kib_tunables t;

	(void)state;
	assert_int_equal(setup_pc(&t, 0), 0);
	assert_int_equal(t.peer_credits, 8);
	assert_int_equal(t.peercredits_hiw, 4);
	assert_int_equal(t.concurrent_sends, 8);
	assert_int_equal(t.ntx, 512);
	assert_int_equal(t.timeout, 50);
	assert_int_equal(t.keepalive, 100);
	assert_int_equal(t.service, 987);
	assert_int_equal(t.retry_count, 5);
	assert_int_equal(t.rnr_retry_count, 6);
	assert_int_equal(t.map_on_demand, 1);
	assert_false(t.cksum);
	assert_int_equal(t.tos, -1);
	/* the kernel's: connect from a privileged port, take any */
	assert_true(t.use_priv_port);
	assert_false(t.require_priv_port);
	assert_int_equal(kib_rx_msgs(8), 18);
	assert_int_equal(setup_pc(&t, 1), 0);
	assert_int_equal(t.peercredits_hiw, 0);
	assert_int_equal(setup_pc(&t, 256), -EINVAL);
}

/* Every o2ib tunable of the conf reaches the LND, with the kernel's
 * clamps (kiblnd_tunables_setup) and its module parameters' meanings. */
static void test_tunables_conf(void **state)
{
	struct ulnet_ni_conf conf;
	struct ulnet_o2ib_tunables *o = &conf.o2ib;
	struct ulnet_o2ib_tunables shown;
	struct kib_tunables t;
	const char *what;

	(void)state;
	memset(&conf, 0, sizeof(conf));
	conf.tun.peer_credits = 16;
	conf.tun.tos = 106;
	o->service = 18515;
	o->cksum = 1;
	o->timeout = 20;
	o->keepalive = 7;
	o->ntx = 64;
	o->peercredits_hiw = 12;
	o->concurrent_sends = 20;
	o->retry_count = 7;
	o->rnr_retry_count = -1;
	o->map_on_demand = 32;
	o->use_privileged_port = -1;
	o->require_privileged_port = 1;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), 0);
	assert_false(t.use_priv_port);
	assert_true(t.require_priv_port);
	assert_int_equal(t.service, 18515);
	assert_true(t.cksum);
	assert_int_equal(t.timeout, 20);
	assert_int_equal(t.keepalive, 7);
	assert_int_equal(t.ntx, 64);
	assert_int_equal(t.peercredits_hiw, 12);
	assert_int_equal(t.concurrent_sends, 20);
	assert_int_equal(t.retry_count, 7);
	assert_int_equal(t.rnr_retry_count, 0);
	assert_int_equal(t.map_on_demand, 32);
	assert_int_equal(t.tos, 106);
	kib_tunables_show(&t, &shown);
	assert_int_equal(shown.service, 18515);
	assert_int_equal(shown.cksum, 1);
	assert_int_equal(shown.rnr_retry_count, 0);
	assert_int_equal(shown.concurrent_sends, 20);
	assert_int_equal(shown.use_privileged_port, 0);
	assert_int_equal(shown.require_privileged_port, 1);

	/* the kernel's clamps: hiw in [pc/2, pc-1], sends in [pc/2, 2pc] */
	o->peercredits_hiw = 3;
	o->concurrent_sends = 100;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), 0);
	assert_int_equal(t.peercredits_hiw, 8);
	assert_int_equal(t.concurrent_sends, 32);
	o->peercredits_hiw = 40;
	o->concurrent_sends = 2;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), 0);
	assert_int_equal(t.peercredits_hiw, 15);
	assert_int_equal(t.concurrent_sends, 8);

	/* keepalive -1: never; timeout -1: the global lnd_timeout */
	o->keepalive = -1;
	o->timeout = -1;
	assert_int_equal(kib_tunables_setup(&t, &conf, 33, &what), 0);
	assert_int_equal(t.keepalive, 0);
	assert_int_equal(t.timeout, 33);

	/* refusals name the tunable */
	o->ntx = 2052;  /* ntx / 4 above the fmr_pool_size of 512: the kernel refuses the NI */
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), -EINVAL);
	assert_string_equal(what, "ntx");
	o->ntx = 2051;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), 0);
	o->retry_count = 8;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), -EINVAL);
	assert_string_equal(what, "retry_count");
	o->retry_count = 0;
	o->service = 65536;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), -EINVAL);
	assert_string_equal(what, "service");
	o->service = 0;
	conf.tun.conns_per_peer = 2;   /* two connections to each new peer */
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), 0);
	assert_int_equal(t.conns_per_peer, 2);
	conf.tun.conns_per_peer = 128;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), -EINVAL);
	assert_string_equal(what, "conns_per_peer");
	conf.tun.conns_per_peer = 0;   /* the kernel's 0 is 1 */
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), 0);
	assert_int_equal(t.conns_per_peer, 1);
	o->timeout = -2;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), -EINVAL);
	assert_string_equal(what, "timeout");
	o->timeout = 86401;     /* would overflow rdma_cm's timeout in ms */
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), -EINVAL);
	assert_string_equal(what, "timeout");
}

/* kib_msg_finish(): with cksum on, the message carries the kernel's
 * checksum (kiblnd_pack_msg: summed over ibm_nob bytes with ibm_cksum
 * zero), in the peer's char form; with it off, the field stays 0. */
static void test_msg_finish_cksum(void **state)
{
	struct ulnet_ni_conf conf;
	struct kib_tunables t;
	struct kib_msg m, d;
	uint8_t buf[KIB_MSG_SIZE], ref[KIB_MSG_SIZE];
	const char *what;
	ssize_t n;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.version = KIB_MSG_VERSION;
	m.type = KIB_MSG_IMMEDIATE;
	m.credits = 3;
	m.srcnid = NID_A;
	m.dstnid = NID_B;
	m.srcstamp = 0x1122334455667788ULL;
	m.dststamp = 0x99aabbccddeeff00ULL;  /* bytes >= 0x80: the forms differ */
	m.hdr.type = 1;
	m.payload_nob = 5;
	n = kib_msg_encode(&m, NULL, 0, false, buf, sizeof(buf));
	assert_true(n > 0);
	memcpy(buf + n, (const uint8_t[]){ 0xff, 0x80, 0x61, 0x62, 0x63 }, 5);
	uint32_t nob = (uint32_t)n + 5;

	memset(&conf, 0, sizeof(conf));
	conf.tun.tos = -1;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), 0);
	memcpy(ref, buf, nob);
	kib_msg_finish(&t, buf, nob, KIB_CKSUM_SIGNED);
	assert_memory_equal(buf, ref, nob);      /* off: untouched, cksum 0 */
	assert_true(kib_msg_decode(buf, nob, &d) > 0);
	assert_int_equal(d.cksum, 0);

	conf.o2ib.cksum = 1;
	assert_int_equal(kib_tunables_setup(&t, &conf, 0, &what), 0);
	for (int form = KIB_CKSUM_SIGNED; form <= KIB_CKSUM_UNSIGNED; form++) {
		/* the kernel's sum, byte by byte as its char is, field zero */
		uint32_t sum = 0;

		memcpy(buf, ref, nob);
		for (uint32_t i = 0; i < nob; i++) {
			uint32_t ch = form == KIB_CKSUM_SIGNED ? (uint32_t)(int32_t)(int8_t)ref[i]
							       : ref[i];
			sum = ((sum << 1) | (sum >> 31)) + ch;
		}
		if (sum == 0)
			sum = 1;
		kib_msg_finish(&t, buf, nob, (enum kib_cksum_form)form);
		assert_int_equal(buf[12] | buf[13] << 8 | buf[14] << 16 | (uint32_t)buf[15] << 24,
				 sum);
		assert_memory_equal(buf + 16, ref + 16, nob - 16);
		assert_true(kib_msg_decode(buf, nob, &d) > 0);
		assert_int_equal(d.cksum, sum);
		assert_int_equal(d.cksum_unsigned, form == KIB_CKSUM_UNSIGNED);
		/* a flipped payload byte is caught */
		buf[nob - 1] ^= 1;
		assert_true(kib_msg_decode(buf, nob, &d) < 0);
	}
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
	/* require_privileged_port: a request from port 1024 or above is
	 * refused FATAL at our version, whatever it holds; below is taken */
	c.require_priv_port = true;
	c.peer_port = 1024;
	n = connmsg(buf, KIB_MSG_CONNREQ, NID_A, NID_B, 111, 0, 8, KIB_MAX_RDMA_FRAGS, 4096);
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_REJECT);
	assert_int_equal(rej.why, KIB_REJECT_FATAL);
	assert_int_equal(rej.version, KIB_MSG_VERSION);
	assert_non_null(strstr(why, "not privileged"));
	assert_int_equal(req.srcnid, NID_A);   /* for the log */
	c.peer_port = 1023;
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_ACCEPT);
	c.require_priv_port = false;
	c.peer_port = 40000;
	assert_int_equal(kib_connreq_check(buf, n, &c, &req, &rej, &why), KIB_ACCEPT);
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

/* A REJECTED event is taken by its CM reason first (kiblnd_rejected): the
 * CM's own stale-connection rejection reconnects, no listener is
 * unreachable, and only then is the private data a kib_rej. */
static void test_cm_rejection(void **state)
{
	struct kib_rej rej, sent = { .version = KIB_MSG_VERSION, .why = KIB_REJECT_CONN_RACE,
				     .incarnation = 77 };
	uint8_t buf[KIB_REJ_SIZE];
	ssize_t n = kib_rej_encode(&sent, false, buf, sizeof(buf));
	const char *why = NULL;
	int err = 0, qd = 8, mf = KIB_MAX_RDMA_FRAGS;

	(void)state;
	assert_true(n > 0);
	/* stale, from the CM: no private data, yet a reconnect (incarnation 0) */
	assert_int_equal(kib_cm_rejection(KIB_CM_REJ_STALE_CONN, NULL, 0, &rej, &err, &why), 1);
	assert_int_equal(rej.why, KIB_REJECT_CONN_STALE);
	assert_int_equal(rej.incarnation, 0);
	assert_true(kib_reconnect_check(&rej, true, true, false, false, &qd, &mf, &why));
	/* the same reason wins over private data that would decode */
	assert_int_equal(kib_cm_rejection(KIB_CM_REJ_STALE_CONN, buf, (size_t)n, &rej, &err, &why), 1);
	assert_int_equal(rej.why, KIB_REJECT_CONN_STALE);
	/* no listener: unreachable, not refused */
	assert_int_equal(kib_cm_rejection(KIB_CM_REJ_INVALID_SERVICE_ID, NULL, 0, &rej, &err, &why), 0);
	assert_int_equal(err, -EHOSTUNREACH);
	/* the peer LND's rejection */
	assert_int_equal(kib_cm_rejection(KIB_CM_REJ_CONSUMER_DEFINED, buf, (size_t)n, &rej, &err, &why), 1);
	assert_int_equal(rej.why, KIB_REJECT_CONN_RACE);
	assert_int_equal(rej.incarnation, 77);
	/* consumer-defined without a kib_rej */
	assert_int_equal(kib_cm_rejection(KIB_CM_REJ_CONSUMER_DEFINED, NULL, 0, &rej, &err, &why), 0);
	assert_int_equal(err, -ECONNREFUSED);
}

/* Connect requests time out after max(5 s, timeout / 4), as the kernel's
 * kiblnd_connreq_timeout_ms(), not after the whole tx timeout. */
static void test_connreq_timeout(void **state)
{
	struct kib_tunables t;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.timeout = 50;
	assert_int_equal(kib_connreq_timeout_ms(&t), 12500);
	t.timeout = 10;
	assert_int_equal(kib_connreq_timeout_ms(&t), KIB_RESOLVE_TIMEOUT_MS);
	t.timeout = 86400;
	assert_int_equal(kib_connreq_timeout_ms(&t), 21600000);
}

static void test_credits(void **state)
{
	struct kib_tunables t;
	struct kib_credit_state s;

	(void)state;
	assert_int_equal(setup_pc(&t, 8), 0);
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
		cmocka_unit_test(test_tunables_conf),
		cmocka_unit_test(test_msg_finish_cksum),
		cmocka_unit_test(test_connreq),
		cmocka_unit_test(test_race),
		cmocka_unit_test(test_connack),
		cmocka_unit_test(test_reconnect),
		cmocka_unit_test(test_credits),
		cmocka_unit_test(test_cm_rejection),
		cmocka_unit_test(test_connreq_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
