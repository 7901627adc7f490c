/* SPDX-License-Identifier: MIT */
/*
 * test_socklnd_rules.c - the socklnd connection rules without sockets:
 * which protocol table a HELLO selects, message-to-connection matching,
 * ctype inversion, ZC-ACK forms and cookie allocation, race resolution,
 * admission (incarnation, protocol, duplicates) and HELLO checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "lnd/socklnd/sock_int.h"

static ulnet_nid_t tcp_nid(uint32_t ip)
{
	ulnet_nid_t nid;

	ulnet_nid_from_ipv4(ip, ulnet_mknet(ULNET_LND_TCP, 0), &nid);
	return nid;
}

static void test_proto_tables(void **state)
{
	(void)state;
	for (unsigned v = KSOCK_PROTO_V1; v <= KSOCK_PROTO_V4; v++) {
		for (int be = 0; be < 2; be++) {
			const struct ksock_proto *p = ksock_proto_find(v, be);

			assert_non_null(p);
			assert_int_equal(p->version, v);
			if (v != KSOCK_PROTO_V1)
				assert_int_equal(p->peer_be, be);
			/* V4 carries nid16 headers, the rest nid4 */
			assert_ptr_equal(p->codec, v == KSOCK_PROTO_V4 ? &lnet_hdr_codec_nid16
								   : &lnet_hdr_codec_nid4);
			assert_int_equal(p->khdr_size, v == KSOCK_PROTO_V1 ? 0 : KSOCK_MSG_HDR_SIZE);
			assert_int_equal(p->zc, v >= KSOCK_PROTO_V2);
			assert_int_equal(p->keepalive, v >= KSOCK_PROTO_V3);
			assert_int_equal(p->csum_hdr, v == KSOCK_PROTO_V2);
		}
	}
	assert_null(ksock_proto_find(0, false));
	assert_null(ksock_proto_find(5, true));
	assert_int_equal(ksock_proto_default_version(AF_INET), KSOCK_PROTO_V3);
	assert_int_equal(ksock_proto_default_version(AF_INET6), KSOCK_PROTO_V4);
}

static void test_khdr_by_order(void **state)
{
	const struct ksock_proto *le = ksock_proto_find(3, false), *be = ksock_proto_find(3, true);
	const struct ksock_proto *v1 = ksock_proto_find(1, false);
	struct ksock_msg_hdr m = { .type = KSOCK_MSG_LNET, .zc_cookies = { 7, 9 } }, out;
	uint8_t buf[KSOCK_MSG_HDR_SIZE];

	(void)state;
	/* we always write little-endian; the BE table reads a BE sender */
	assert_int_equal(le->khdr_encode(&m, buf, sizeof(buf)), KSOCK_MSG_HDR_SIZE);
	assert_int_equal(buf[0], 0xc1);
	assert_int_equal(le->khdr_decode(buf, sizeof(buf), &out), KSOCK_MSG_HDR_SIZE);
	assert_int_equal(out.zc_cookies[1], 9);
	assert_int_equal(ksock_msg_hdr_encode(&m, true, buf, sizeof(buf)), KSOCK_MSG_HDR_SIZE);
	assert_int_equal(be->khdr_decode(buf, sizeof(buf), &out), KSOCK_MSG_HDR_SIZE);
	assert_int_equal(out.type, KSOCK_MSG_LNET);
	assert_int_equal(out.zc_cookies[0], 7);
	/* V1: no bytes, always an LNET message */
	assert_int_equal(v1->khdr_encode(&m, buf, sizeof(buf)), 0);
	assert_int_equal(v1->khdr_decode(buf, 0, &out), 0);
	assert_int_equal(out.type, KSOCK_MSG_LNET);
	assert_int_equal(out.zc_cookies[0], 0);
}

/* The tx build writes the ksock header with ksock_msg_hdr_put_le() instead
 * of calling proto->khdr_encode: every table with a ksock header must write
 * exactly those bytes (and ksock_msg_hdr_encode with be = false too); the
 * inline LE decode reads them back and rejects what the runtime one does. */
static void test_khdr_le_inline(void **state)
{
	struct ksock_msg_hdr m = { .type = KSOCK_MSG_NOOP, .csum = 0,
				   .zc_cookies = { 0x0102030405060708ULL, 0x1112131415161718ULL } };
	struct ksock_msg_hdr out;
	uint8_t a[KSOCK_MSG_HDR_SIZE], b[KSOCK_MSG_HDR_SIZE];

	(void)state;
	ksock_msg_hdr_put_le(a, m.type, 0, m.zc_cookies[0], m.zc_cookies[1]);
	assert_int_equal(ksock_msg_hdr_encode(&m, false, b, sizeof(b)), KSOCK_MSG_HDR_SIZE);
	assert_memory_equal(a, b, sizeof(a));
	for (unsigned v = KSOCK_PROTO_V1; v <= KSOCK_PROTO_V4; v++) {
		for (int be = 0; be < 2; be++) {
			const struct ksock_proto *p = ksock_proto_find(v, be);

			memset(b, 0xee, sizeof(b));
			assert_int_equal(p->khdr_encode(&m, b, sizeof(b)), (ssize_t)p->khdr_size);
			if (p->khdr_size)
				assert_memory_equal(a, b, sizeof(a));
		}
	}
	assert_int_equal(ksock_msg_hdr_decode_le(a, sizeof(a), &out), KSOCK_MSG_HDR_SIZE);
	assert_int_equal(out.type, KSOCK_MSG_NOOP);
	assert_true(out.zc_cookies[0] == m.zc_cookies[0] && out.zc_cookies[1] == m.zc_cookies[1]);
	assert_int_equal(ksock_msg_hdr_decode_le(a, sizeof(a) - 1, &out), -EMSGSIZE);
	a[0] = 0xc2;
	assert_int_equal(ksock_msg_hdr_decode_le(a, sizeof(a), &out), -EPROTO);
	assert_int_equal(ksock_msg_hdr_decode(a, sizeof(a), false, &out), -EPROTO);
}

/* ksock_tx_alloc_msg() clears only what a message tx reads before setting
 * it: a recycled NOOP or ZC tx must not pass on its nonblk flag (it would
 * steer the message to the BULK_IN conn) or its ZC cookie (the message
 * would wait for an ACK that never comes). */
static void test_tx_alloc_msg(void **state)
{
	struct ksock_net *net = calloc(1, sizeof(*net));
	struct ksock_tx *tx, *tx2;

	(void)state;
	assert_non_null(net);
	tx = ksock_tx_alloc(net);
	assert_non_null(tx);
	assert_false(tx->nonblk);
	tx->nonblk = true;
	tx->zc_cookie = 42;
	tx->conn = (struct ksock_conn *)net;      /* any non-NULL pointer */
	tx->msg = (struct lnet_msg *)net;
	ksock_tx_free(net, tx);
	tx2 = ksock_tx_alloc_msg(net);
	assert_ptr_equal(tx2, tx);
	assert_false(tx2->nonblk);
	assert_int_equal(tx2->zc_cookie, 0);
	assert_null(tx2->conn);
	assert_null(tx2->msg);
	ksock_tx_free(net, tx2);
	while (net->txblocks) {
		struct ksock_txblock *b = net->txblocks;

		net->txblocks = b->next;
		free(b);
	}
	free(net);
}

static void test_match_v3(void **state)
{
	const struct ksock_proto *p = ksock_proto_find(KSOCK_PROTO_V3, false);
	size_t small = 24 + 72 + 100, big = 24 + 72 + 1000, noop = 24;

	(void)state;
	/* never on ANY */
	assert_int_equal(p->match(SOCKLND_CONN_ANY, small, false, 1024), KSOCK_MATCH_NO);
	assert_int_equal(p->match(SOCKLND_CONN_ANY, noop, true, 1024), KSOCK_MATCH_NO);
	/* small -> CONTROL, bulk (headers count) -> BULK_OUT, each the other's fallback */
	assert_int_equal(p->match(SOCKLND_CONN_CONTROL, small, false, 1024), KSOCK_MATCH_YES);
	assert_int_equal(p->match(SOCKLND_CONN_BULK_OUT, small, false, 1024), KSOCK_MATCH_MAY);
	assert_int_equal(p->match(SOCKLND_CONN_BULK_OUT, big, false, 1024), KSOCK_MATCH_YES);
	assert_int_equal(p->match(SOCKLND_CONN_CONTROL, big, false, 1024), KSOCK_MATCH_MAY);
	/* messages never on the conn held as BULK_IN */
	assert_int_equal(p->match(SOCKLND_CONN_BULK_IN, small, false, 1024), KSOCK_MATCH_NO);
	assert_int_equal(p->match(SOCKLND_CONN_BULK_IN, big, false, 1024), KSOCK_MATCH_NO);
	/* ZC-ACK / keepalive: only BULK_IN */
	assert_int_equal(p->match(SOCKLND_CONN_BULK_IN, noop, true, 1024), KSOCK_MATCH_YES);
	assert_int_equal(p->match(SOCKLND_CONN_CONTROL, noop, true, 1024), KSOCK_MATCH_NO);
	assert_int_equal(p->match(SOCKLND_CONN_BULK_OUT, noop, true, 1024), KSOCK_MATCH_NO);
	/* V4 behaves the same */
	p = ksock_proto_find(KSOCK_PROTO_V4, true);
	assert_int_equal(p->match(SOCKLND_CONN_ANY, small, false, 1024), KSOCK_MATCH_NO);
	assert_int_equal(p->match(SOCKLND_CONN_BULK_IN, noop, true, 1024), KSOCK_MATCH_YES);
}

/* The size a message is matched by counts the headers of the version, as
 * the kernel does (ksocknal_match_tx, _v3, _v4): V1 a bare nid4 LNet header,
 * V2/V3 the ksock header + nid4, V4 the ksock header + nid16. A 910-byte
 * payload on V4 is 24 + 96 + 910 = 1030 >= min_bulk 1024: BULK_OUT, where
 * a nid4 count (1006) would pick CONTROL. */
static void test_match_size_by_version(void **state)
{
	const struct ksock_proto *v4 = ksock_proto_find(KSOCK_PROTO_V4, false);

	(void)state;
	assert_int_equal(ksock_proto_find(KSOCK_PROTO_V1, false)->match_hdr, 72);
	assert_int_equal(ksock_proto_find(KSOCK_PROTO_V2, true)->match_hdr, 24 + 72);
	assert_int_equal(ksock_proto_find(KSOCK_PROTO_V3, false)->match_hdr, 24 + 72);
	assert_int_equal(v4->match_hdr, 24 + 96);
	assert_int_equal(ksock_proto_find(KSOCK_PROTO_V4, true)->match_hdr, 24 + 96);
	assert_int_equal(v4->match(SOCKLND_CONN_BULK_OUT, v4->match_hdr + 910, false, 1024),
			 KSOCK_MATCH_YES);
	assert_int_equal(v4->match(SOCKLND_CONN_CONTROL, v4->match_hdr + 910, false, 1024),
			 KSOCK_MATCH_MAY);
}

/* The passive duplicate limit: conns_per_peer above 1 as set; 1 (also what
 * 0 becomes) admits up to the most a kernel opens of a type (127). */
static void test_passive_cpp(void **state)
{
	(void)state;
	assert_int_equal(ksock_passive_cpp(1), 1);   /* set to 1: refuse a second, as the kernel */
	assert_int_equal(ksock_passive_cpp(0), ULNET_MAX_CONNS_PER_PEER);
	assert_int_equal(ksock_passive_cpp(2), 2);
	assert_int_equal(ksock_passive_cpp(127), 127);
}

static void test_match_v2(void **state)
{
	const struct ksock_proto *p = ksock_proto_find(KSOCK_PROTO_V2, false);

	(void)state;
	assert_int_equal(p->match(SOCKLND_CONN_ANY, 100, false, 1024), KSOCK_MATCH_YES);
	assert_int_equal(p->match(SOCKLND_CONN_ANY, 5000, false, 1024), KSOCK_MATCH_YES);
	assert_int_equal(p->match(SOCKLND_CONN_CONTROL, 100, false, 1024), KSOCK_MATCH_YES);
	assert_int_equal(p->match(SOCKLND_CONN_CONTROL, 5000, false, 1024), KSOCK_MATCH_MAY);
	assert_int_equal(p->match(SOCKLND_CONN_BULK_OUT, 5000, false, 1024), KSOCK_MATCH_YES);
	assert_int_equal(p->match(SOCKLND_CONN_BULK_IN, 5000, false, 1024), KSOCK_MATCH_MAY);
	assert_int_equal(p->match(SOCKLND_CONN_NONE, 100, false, 1024), KSOCK_MATCH_NO);
	/* V1 shares the V2 rules: ANY is fine */
	p = ksock_proto_find(KSOCK_PROTO_V1, false);
	assert_int_equal(p->match(SOCKLND_CONN_ANY, 100, false, 1024), KSOCK_MATCH_YES);
}

static void test_invert(void **state)
{
	(void)state;
	assert_int_equal(ksock_invert_ctype(SOCKLND_CONN_BULK_IN), SOCKLND_CONN_BULK_OUT);
	assert_int_equal(ksock_invert_ctype(SOCKLND_CONN_BULK_OUT), SOCKLND_CONN_BULK_IN);
	assert_int_equal(ksock_invert_ctype(SOCKLND_CONN_CONTROL), SOCKLND_CONN_CONTROL);
	assert_int_equal(ksock_invert_ctype(SOCKLND_CONN_ANY), SOCKLND_CONN_ANY);
	assert_int_equal(ksock_invert_ctype(SOCKLND_CONN_NONE), SOCKLND_CONN_NONE);
	assert_int_equal(ksock_invert_ctype(4), SOCKLND_CONN_NONE);
	assert_int_equal(ksock_invert_ctype(-7), SOCKLND_CONN_NONE);
}

static void test_zcack_forms(void **state)
{
	struct ksock_zcack z;

	(void)state;
	/* single: NOOP [0, N] or a piggyback in cookies[1] */
	assert_int_equal(ksock_zcack_parse(0, 5, true, &z), 0);
	assert_false(z.keepalive);
	assert_int_equal(z.count, 1);
	assert_true(ksock_zcack_covers(&z, 5));
	assert_false(ksock_zcack_covers(&z, 4));
	assert_false(ksock_zcack_covers(&z, 6));
	/* pair: [0] > [1] means exactly those two */
	assert_int_equal(ksock_zcack_parse(9, 4, true, &z), 0);
	assert_true(z.pair);
	assert_int_equal(z.count, 2);
	assert_true(ksock_zcack_covers(&z, 4));
	assert_true(ksock_zcack_covers(&z, 9));
	assert_false(ksock_zcack_covers(&z, 5));
	/* range: 0 < [0] < [1] means all in between, inclusive */
	assert_int_equal(ksock_zcack_parse(3, 7, true, &z), 0);
	assert_false(z.pair);
	assert_int_equal(z.count, 5);
	for (uint64_t c = 3; c <= 7; c++)
		assert_true(ksock_zcack_covers(&z, c));
	assert_false(ksock_zcack_covers(&z, 2));
	assert_false(ksock_zcack_covers(&z, 8));
	/* keepalive cookie 1 on V3/V4 ACKs nothing */
	assert_int_equal(ksock_zcack_parse(0, 1, true, &z), 0);
	assert_true(z.keepalive);
	assert_false(ksock_zcack_covers(&z, 1));
	/* ... on V2 it is an ordinary (unknown) cookie */
	assert_int_equal(ksock_zcack_parse(0, 1, false, &z), 0);
	assert_false(z.keepalive);
	assert_int_equal(z.count, 1);
	/* a keepalive mixed into a pair is malformed */
	assert_int_equal(ksock_zcack_parse(5, 1, true, &z), -EPROTO);
	assert_int_equal(ksock_zcack_parse(0, 0, true, &z), -EPROTO);
}

static void test_cookie_alloc(void **state)
{
	uint64_t ctr = 0;

	(void)state;
	/* never 0 or 1 (1 is the keepalive), also across a wrap */
	assert_int_equal(ksock_cookie_next(&ctr), 2);
	assert_int_equal(ksock_cookie_next(&ctr), 3);
	ctr = UINT64_MAX;
	assert_true(ksock_cookie_next(&ctr) == UINT64_MAX);
	assert_int_equal(ksock_cookie_next(&ctr), 2);
	ctr = 1;
	assert_int_equal(ksock_cookie_next(&ctr), 2);
}

static void test_race(void **state)
{
	ulnet_nid_t lo = tcp_nid(0x7f000002), hi = tcp_nid(0x7f000003);
	ulnet_nid_t v6 = { .size = 12, .type = ULNET_LND_TCP, .addr = { 0x20, 1 } };

	(void)state;
	/* higher NID wins: I refuse a lower peer only while I'm dialling it */
	assert_true(ksock_race_refuse(&lo, &hi, true));
	assert_false(ksock_race_refuse(&lo, &hi, false));
	assert_false(ksock_race_refuse(&hi, &lo, true));
	assert_false(ksock_race_refuse(&hi, &hi, true));
	/* byte order of the 20-byte form: size first, so any IPv6 > any IPv4 */
	assert_true(ksock_race_refuse(&hi, &v6, true));
	assert_false(ksock_race_refuse(&v6, &hi, true));
}

static struct ksock_admit_in admit_base(const ulnet_nid_t *me, const ulnet_nid_t *peer,
					const struct ksock_proto *p)
{
	struct ksock_admit_in in = { 0 };

	in.my_nid = me;
	in.peer_nid = peer;
	in.conn_proto = p;
	in.peer_proto = p;
	in.incarnation = 100;
	in.peer_incarnation = 100;
	in.conns_per_peer = 1;
	return in;
}

static void test_admit(void **state)
{
	ulnet_nid_t lo = tcp_nid(0x7f000002), hi = tcp_nid(0x7f000003);
	const struct ksock_proto *v3 = ksock_proto_find(3, false), *v2 = ksock_proto_find(2, false);
	struct ksock_admit_in in;

	(void)state;
	in = admit_base(&hi, &lo, v3);
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_OK);
	in.connecting = true;
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_RACE);
	in = admit_base(&lo, &hi, v3);
	in.connecting = true;        /* I'm lower: the higher peer wins, accept */
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_OK);

	/* a new incarnation: the peer rebooted */
	in = admit_base(&hi, &lo, v3);
	in.peer_known = true;
	in.incarnation = 101;
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_REBOOT);
	in.peer_known = false;       /* first conn sets it */
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_OK);
	in = admit_base(&hi, &lo, v3);
	in.peer_known = true;
	in.conn_proto = v2;
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_WRONG_PROTO);

	/* duplicates beyond conns_per_peer, loopback exempt */
	in = admit_base(&hi, &lo, v3);
	in.ndup = 1;
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_DUP);
	in.conns_per_peer = 2;
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_OK);
	in.conns_per_peer = 1;
	in.loopback = true;
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_OK);

	/* active side: NONE in my version = lost race; other version = retry */
	in = admit_base(&lo, &hi, v3);
	in.active = true;
	in.connecting = true;
	in.hello_rc = EALREADY;
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_LOST_RACE);
	in.hello_rc = EPROTO;
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_RETRY_PROTO);
	/* the active side never applies race resolution itself */
	in = admit_base(&hi, &lo, v3);
	in.active = true;
	in.connecting = true;
	assert_int_equal(ksock_admit(&in), KSOCK_ADMIT_OK);
}

static void test_hello_checks(void **state)
{
	ulnet_nid_t a = tcp_nid(0x7f000002), b = tcp_nid(0x7f000003);
	struct ksock_hello h = { 0 };
	const char *why = NULL;

	(void)state;
	h.version = 3;
	h.src_nid = b;
	h.src_pid = 12345;
	h.ctype = SOCKLND_CONN_BULK_IN;
	/* we asked for BULK_OUT; the reply says BULK_IN: fine */
	assert_int_equal(ksock_hello_check_reply(&h, &b, 12345, 3, SOCKLND_CONN_BULK_OUT, &why), 0);
	/* a user-space peer sets USERFLAG: accepted */
	h.src_pid = 12345 | ULNET_PID_USERFLAG;
	assert_int_equal(ksock_hello_check_reply(&h, &b, 12345, 3, SOCKLND_CONN_BULK_OUT, &why), 0);
	h.src_pid = 12345;
	/* types that do not invert */
	assert_int_equal(ksock_hello_check_reply(&h, &b, 12345, 3, SOCKLND_CONN_CONTROL, &why),
			 -EPROTO);
	/* another NID or PID than the one we dialled */
	assert_int_equal(ksock_hello_check_reply(&h, &a, 12345, 3, SOCKLND_CONN_BULK_OUT, &why),
			 -EPROTO);
	assert_non_null(why);
	assert_int_equal(ksock_hello_check_reply(&h, &b, 999, 3, SOCKLND_CONN_BULK_OUT, &why),
			 -EPROTO);
	/* NONE: same version = lost race, other = use its version */
	h.ctype = SOCKLND_CONN_NONE;
	assert_int_equal(ksock_hello_check_reply(&h, &b, 12345, 3, SOCKLND_CONN_CONTROL, &why),
			 EALREADY);
	h.version = 2;
	assert_int_equal(ksock_hello_check_reply(&h, &b, 12345, 3, SOCKLND_CONN_CONTROL, &why),
			 EPROTO);
	h.ctype = SOCKLND_CONN_CONTROL;
	assert_int_equal(ksock_hello_check_reply(&h, &b, 12345, 3, SOCKLND_CONN_CONTROL, &why),
			 EPROTO);
	h.src_nid = ULNET_NID_ANY;
	assert_int_equal(ksock_hello_check_reply(&h, &b, 12345, 3, SOCKLND_CONN_CONTROL, &why),
			 -EPROTO);

	/* passive */
	memset(&h, 0, sizeof(h));
	h.version = 3;
	h.src_nid = a;
	h.ctype = SOCKLND_CONN_CONTROL;
	assert_int_equal(ksock_hello_check_passive(&h, &why), 0);
	h.ctype = 7;
	assert_int_equal(ksock_hello_check_passive(&h, &why), -EPROTO);
	h.ctype = SOCKLND_CONN_NONE;
	assert_int_equal(ksock_hello_check_passive(&h, &why), -EPROTO);
	h.ctype = SOCKLND_CONN_CONTROL;
	h.src_nid = ULNET_NID_ANY;
	assert_int_equal(ksock_hello_check_passive(&h, &why), -EPROTO);
	h.src_nid = a;
	h.nips = 2;
	h.ips[0] = 0x7f000002;
	h.ips[1] = 0;             /* zero IP */
	assert_int_equal(ksock_hello_check_passive(&h, &why), -EPROTO);
	h.ips[1] = 0x7f000003;
	assert_int_equal(ksock_hello_check_passive(&h, &why), 0);
	h.nips = 17;
	assert_int_equal(ksock_hello_check_passive(&h, &why), -EPROTO);
	h.version = 4;            /* V4: nips is ignored */
	assert_int_equal(ksock_hello_check_passive(&h, &why), 0);
}


/* Folding ZC-ACKs into a queued NOOP: single -> pair -> range, ranges grow
 * at either end, anything else stays out; every result parses back to
 * exactly the cookies folded in. */
/* verify_peer_nid: a NID is its connection's source address, an
 * IPv4-mapped IPv6 source being the IPv4 one. */
static void test_nid_is_addr(void **state)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	ulnet_nid_t a, b, v6;

	(void)state;
	assert_int_equal(ulnet_nid_parse("127.0.4.41@tcp", &a, NULL), 0);
	assert_int_equal(ulnet_nid_parse("127.0.4.42@tcp", &b, NULL), 0);
	assert_int_equal(ulnet_nid_parse("::1@tcp", &v6, NULL), 0);
	sin->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, "127.0.4.41", &sin->sin_addr), 1);
	assert_true(ksock_nid_is_addr(&a, &ss));
	assert_false(ksock_nid_is_addr(&b, &ss));
	assert_false(ksock_nid_is_addr(&v6, &ss));
	memset(&ss, 0, sizeof(ss));
	sin6->sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, "::ffff:127.0.4.41", &sin6->sin6_addr), 1);
	assert_true(ksock_nid_is_addr(&a, &ss));
	assert_false(ksock_nid_is_addr(&b, &ss));
	assert_int_equal(inet_pton(AF_INET6, "::1", &sin6->sin6_addr), 1);
	assert_true(ksock_nid_is_addr(&v6, &ss));
	assert_false(ksock_nid_is_addr(&a, &ss));
	ss.ss_family = AF_UNIX;
	assert_false(ksock_nid_is_addr(&v6, &ss));
}

static void test_zcack_merge(void **state)
{
	uint64_t ck[2] = { 0, 7 };
	struct ksock_zcack z;

	(void)state;
	assert_true(ksock_zcack_merge(ck, 7));                 /* duplicate */
	assert_true(ck[0] == 0 && ck[1] == 7);
	assert_true(ksock_zcack_merge(ck, 5));                 /* pair {5,7} */
	assert_true(ck[0] == 7 && ck[1] == 5);
	assert_int_equal(ksock_zcack_parse(ck[0], ck[1], true, &z), 0);
	assert_true(z.pair && z.count == 2 && ksock_zcack_covers(&z, 5) &&
		    ksock_zcack_covers(&z, 7) && !ksock_zcack_covers(&z, 6));
	assert_false(ksock_zcack_merge(ck, 9));                /* 5,7,9: not a range */
	assert_true(ck[0] == 7 && ck[1] == 5);
	assert_true(ksock_zcack_merge(ck, 6));                 /* 5..7 */
	assert_true(ck[0] == 5 && ck[1] == 7);
	assert_int_equal(ksock_zcack_parse(ck[0], ck[1], true, &z), 0);
	assert_true(!z.pair && z.count == 3);
	assert_true(ksock_zcack_merge(ck, 8));                 /* 5..8 */
	assert_true(ksock_zcack_merge(ck, 4));                 /* 4..8 */
	assert_true(ck[0] == 4 && ck[1] == 8);
	assert_true(ksock_zcack_merge(ck, 6));                 /* inside */
	assert_false(ksock_zcack_merge(ck, 10));
	assert_false(ksock_zcack_merge(ck, 2));
	assert_true(ck[0] == 4 && ck[1] == 8);
	/* consecutive pair then its neighbour */
	ck[0] = 0;
	ck[1] = 3;
	assert_true(ksock_zcack_merge(ck, 2));
	assert_true(ck[0] == 3 && ck[1] == 2);
	assert_true(ksock_zcack_merge(ck, 4));
	assert_true(ck[0] == 2 && ck[1] == 4);
	/* a keepalive NOOP gives way to an ACK; a keepalive adds nothing */
	ck[0] = 0;
	ck[1] = KSOCK_KEEPALIVE_COOKIE;
	assert_true(ksock_zcack_merge(ck, 11));
	assert_true(ck[0] == 0 && ck[1] == 11);
	assert_true(ksock_zcack_merge(ck, KSOCK_KEEPALIVE_COOKIE));
	assert_true(ck[0] == 0 && ck[1] == 11);
	{
		uint64_t a[5] = { 9, 3, 12, 4, 7 };

		ksock_acks_sort(a, 5);
		assert_true(a[0] == 12 && a[1] == 9 && a[2] == 7 && a[3] == 4 && a[4] == 3);
	}
}

/* Tunables: 0 takes the ksocklnd default; bad values are refused naming
 * the tunable. */
static void test_tunables(void **state)
{
	struct ulnet_ni_conf c;
	struct ksock_tun t;
	char why[160], note[160];

	(void)state;
	memset(&c, 0, sizeof(c));
	c.tun.tos = -1;
	assert_int_equal(ksock_tun_resolve(&c, AF_INET, &t, why, sizeof(why), note, sizeof(note)), 0);
	assert_int_equal(t.sock_timeout, 50);
	assert_int_equal(t.keepalive, 30);
	assert_int_equal(t.keepalive_idle, 30);
	assert_int_equal(t.keepalive_count, 5);
	assert_int_equal(t.keepalive_intvl, 5);
	assert_int_equal(t.min_bulk, 1024);
	assert_int_equal(t.zc_min_payload, 16384);
	assert_false(t.enable_csum);
	assert_true(t.nonblk_zcack);
	assert_true(t.typed_conns);
	assert_false(t.nagle);
	assert_int_equal(t.min_reconnect_ms, 1000);
	assert_int_equal(t.max_reconnect_ms, 60000);
	assert_int_equal(t.protocol, KSOCK_PROTO_V3);
	assert_int_equal(t.conns_per_peer, 1);
	assert_int_equal(t.tos, -1);
	assert_string_equal(note, "");
	assert_int_equal(ksock_tun_resolve(&c, AF_INET6, &t, why, sizeof(why), NULL, 0), 0);
	assert_int_equal(t.protocol, KSOCK_PROTO_V4);

	c.sock.keepalive = -1;
	c.sock.keepalive_count = -1;
	c.sock.zc_min_payload = 100;
	c.sock.enable_csum = 1;
	c.sock.nonblk_zcack = -1;
	c.sock.min_reconnectms = 90000;
	c.sock.protocol = 2;
	c.sock.typed_conns = -1;
	c.tun.conns_per_peer = 4;
	assert_int_equal(ksock_tun_resolve(&c, AF_INET, &t, why, sizeof(why), note, sizeof(note)), 0);
	assert_int_equal(t.keepalive, 0);
	assert_int_equal(t.keepalive_idle, 0);       /* one of three off: all off */
	assert_int_equal(t.zc_min_payload, 2048);
	assert_non_null(strstr(note, "zc_min_payload"));
	assert_true(t.enable_csum && !t.nonblk_zcack && !t.typed_conns);
	assert_int_equal(t.max_reconnect_ms, 90000); /* default max below min: raised */
	assert_int_equal(t.protocol, 2);
	assert_int_equal(t.conns_per_peer, 4);

	struct { int *field; int bad; const char *name; } bad[] = {
		{ &c.sock.sock_timeout, -3, "sock_timeout" },
		{ &c.sock.keepalive, -2, "keepalive" },
		{ &c.sock.keepalive_intvl, 40000, "keepalive_intvl" },
		{ &c.sock.min_bulk, -1, "min_bulk" },
		{ &c.sock.zc_min_payload, -5, "zc_min_payload" },
		{ &c.sock.enable_csum, 2, "enable_csum" },
		{ &c.sock.nagle, -7, "nagle" },
		{ &c.sock.tx_buffer_size, -1, "tx_buffer_size" },
		{ &c.sock.max_reconnectms, 500, "max_reconnectms" },
		{ &c.sock.protocol, 1, "protocol" },
		{ &c.sock.protocol, 5, "protocol" },
		{ &c.tun.conns_per_peer, 200, "conns_per_peer" },
		{ &c.tun.tos, 256, "tos" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ulnet_ni_conf save = c;

		*bad[i].field = bad[i].bad;
		why[0] = 0;
		assert_int_equal(ksock_tun_resolve(&c, AF_INET, &t, why, sizeof(why), NULL, 0), -EINVAL);
		assert_non_null(strstr(why, bad[i].name));
		c = save;
	}
	/* V3 with untyped conns, V2/V3 on IPv6 */
	c.sock.protocol = 3;
	assert_int_equal(ksock_tun_resolve(&c, AF_INET, &t, why, sizeof(why), NULL, 0), -EINVAL);
	assert_non_null(strstr(why, "typed_conns"));
	c.sock.typed_conns = 0;
	assert_int_equal(ksock_tun_resolve(&c, AF_INET6, &t, why, sizeof(why), NULL, 0), -EINVAL);
	assert_non_null(strstr(why, "protocol"));
}

/* The peer table: 5000 peers (a router's load) are each found again, by
 * the table, with short chains; a lookup costs the same whatever the
 * count (the send path used to walk a list of every peer). */
static void test_peer_table(void **state)
{
	(void)state;
	struct ulnet_opts o = { .flags = ULNET_OPT_MANUAL_PROGRESS };
	struct ulnet_ni_conf c = { 0 };
	struct ksock_peer **made = calloc(5000, sizeof(*made));
	struct ksock_net *net;
	struct lnet_ni *ni;
	ulnet_t *ln;
	unsigned longest = 0;

	assert_non_null(made);
	assert_int_equal(ulnet_create(&o, &ln), 0);
	assert_int_equal(ulnet_nid_parse("127.0.0.2@tcp", &c.nid, NULL), 0);
	snprintf(c.accept, sizeof(c.accept), "none");
	c.tun.tos = -1;
	assert_int_equal(ulnet_ni_add(ln, &c), 0);
	lnet_lock(ln);
	ni = lnet_nid2ni_locked(ln, &c.nid);
	lnet_unlock(ln);
	assert_non_null(ni);
	net = lnet_ni_data(ni);
	ksock_lock(net);
	for (int i = 0; i < 5000; i++) {
		ulnet_nid_t n;

		ulnet_nid_from_ipv4(0x0a000000u | (unsigned)i, ulnet_nid_net(&c.nid), &n);
		made[i] = ksock_peer_find_or_create(net, &n, ULNET_PID_LUSTRE);
		assert_non_null(made[i]);
	}
	assert_int_equal(net->npeers, 5000);
	assert_true(net->peer_hash_size >= 5000);
	for (int i = 0; i < 5000; i++) {
		ulnet_nid_t n;

		ulnet_nid_from_ipv4(0x0a000000u | (unsigned)i, ulnet_nid_net(&c.nid), &n);
		assert_ptr_equal(ksock_peer_find(net, &n), made[i]);
		assert_ptr_equal(ksock_peer_find_or_create(net, &n, ULNET_PID_LUSTRE), made[i]);
	}
	for (unsigned h = 0; h < net->peer_hash_size; h++) {
		unsigned len = 0;

		for (struct ksock_peer *p = net->peer_hash[h]; p; p = p->hnext)
			len++;
		if (len > longest)
			longest = len;
	}
	assert_true(longest <= 12);
	ulnet_nid_t absent;

	ulnet_nid_from_ipv4(0x0b000001u, ulnet_nid_net(&c.nid), &absent);
	assert_null(ksock_peer_find(net, &absent));
	ksock_unlock(net);
	ulnet_destroy(ln);
	free(made);
}

/* conns_per_peer from the link speed, as ksocklnd derives it: one per
 * fourfold speed above 1 Gb/s; unknown or slow counts as 1 Gb/s */
static void test_speed_cpp(void **state)
{
	(void)state;
	assert_int_equal(ksock_speed_cpp(-61), 1);      /* unknown (-ENODATA) */
	assert_int_equal(ksock_speed_cpp(100), 1);
	assert_int_equal(ksock_speed_cpp(1000), 1);
	assert_int_equal(ksock_speed_cpp(2500), 1);     /* ilog2(2) / 2 + 1 */
	assert_int_equal(ksock_speed_cpp(4000), 2);
	assert_int_equal(ksock_speed_cpp(10000), 2);
	assert_int_equal(ksock_speed_cpp(25000), 3);
	assert_int_equal(ksock_speed_cpp(40000), 3);
	assert_int_equal(ksock_speed_cpp(100000), 4);
	assert_int_equal(ksock_speed_cpp(400000), 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proto_tables),
		cmocka_unit_test(test_peer_table),
		cmocka_unit_test(test_khdr_by_order),
		cmocka_unit_test(test_khdr_le_inline),
		cmocka_unit_test(test_tx_alloc_msg),
		cmocka_unit_test(test_match_v3),
		cmocka_unit_test(test_match_v2),
		cmocka_unit_test(test_match_size_by_version),
		cmocka_unit_test(test_passive_cpp),
		cmocka_unit_test(test_invert),
		cmocka_unit_test(test_zcack_forms),
		cmocka_unit_test(test_cookie_alloc),
		cmocka_unit_test(test_race),
		cmocka_unit_test(test_admit),
		cmocka_unit_test(test_hello_checks),
		cmocka_unit_test(test_nid_is_addr),
		cmocka_unit_test(test_zcack_merge),
		cmocka_unit_test(test_tunables),
		cmocka_unit_test(test_speed_cpp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
