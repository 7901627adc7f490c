/* SPDX-License-Identifier: MIT */
/*
 * test_wire_codec.c - wire codecs on hand-made inputs: the reference's
 * generated examples byte for byte, every truncated prefix, big-endian
 * senders (built by our encoders and written by hand), HELLO V1, limits,
 * invalid ping infos, LARGE_ADDR ping info, and the socklnd CRC.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/lnet_hdr.h"
#include "core/ping_info.h"
#include "lnd/socklnd/sock_wire.h"
#include "util/util_bytes.h"

#define IP_A 0xc0a80101u	/* 192.168.1.1 */
#define IP_B 0xc0a80102u	/* 192.168.1.2 */

static ulnet_nid_t tcp_nid(uint32_t ip)
{
	ulnet_nid_t nid;

	ulnet_nid_from_ipv4(ip, ulnet_mknet(ULNET_LND_TCP, 0), &nid);
	return nid;
}

/* 2001:db8::<last>@tcp<num> */
static ulnet_nid_t ipv6_nid(uint8_t last, uint16_t num)
{
	ulnet_nid_t nid = { .size = 12, .type = ULNET_LND_TCP, .num = num,
			    .addr = { 0x20, 0x01, 0x0d, 0xb8 } };

	nid.addr[15] = last;
	return nid;
}

static void assert_nid_eq(const ulnet_nid_t *a, const ulnet_nid_t *b)
{
	assert_true(ulnet_nid_same(a, b));
}

/* ---- reference examples (lnet-protocol.md §1.3, §1.4, §1.7, §1.8) ----- */

static const uint8_t ex_acr_v1[] = {
	0x00, 0x71, 0xce, 0xac, 0x01, 0x00, 0x00, 0x00, 0x02, 0x01, 0xa8, 0xc0, 0x00, 0x00, 0x02, 0x00,
};
static const uint8_t ex_acr_v2[] = {
	0x00, 0x71, 0xce, 0xac, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x02,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};
static const uint8_t ex_hello_v3[] = {
	0x63, 0x69, 0x72, 0x45, 0x03, 0x00, 0x00, 0x00, 0x01, 0x01, 0xa8, 0xc0, 0x00, 0x00, 0x02, 0x00,
	0x02, 0x01, 0xa8, 0xc0, 0x00, 0x00, 0x02, 0x00, 0x39, 0x30, 0x00, 0x00, 0x39, 0x30, 0x00, 0x00,
	0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
/* The example leaves the ack handle open; this one wants no ACK. */
static const uint8_t ex_put[] = {
	0x02, 0x01, 0xa8, 0xc0, 0x00, 0x00, 0x02, 0x00, 0x01, 0x01, 0xa8, 0xc0, 0x00, 0x00, 0x02, 0x00,
	0x39, 0x30, 0x00, 0x00, 0x39, 0x30, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
static const uint8_t ex_ping_info[] = {
	0x67, 0x6e, 0x69, 0x70, 0x1e, 0x00, 0x00, 0x00, 0x39, 0x30, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x01, 0xa8, 0xc0, 0x00, 0x00, 0x02, 0x00, 0xde, 0xc0, 0xaa, 0x15, 0x00, 0x00, 0x00, 0x00,
};

static void test_example_acceptor(void **state)
{
	(void)state;
	struct lnet_acceptor_req r = { .version = 1, .target = tcp_nid(IP_B) }, d;
	uint8_t buf[64];
	ulnet_nid_t b = tcp_nid(IP_B);

	assert_int_equal(lnet_acceptor_req_encode(&r, false, buf, sizeof(buf)), 16);
	assert_memory_equal(buf, ex_acr_v1, 16);
	r.version = 2;
	assert_int_equal(lnet_acceptor_req_encode(&r, false, buf, sizeof(buf)), 28);
	assert_memory_equal(buf, ex_acr_v2, 28);

	assert_int_equal(lnet_acceptor_req_decode(ex_acr_v1, sizeof(ex_acr_v1), &d), 16);
	assert_int_equal(d.version, 1);
	assert_false(d.swapped);
	assert_nid_eq(&d.target, &b);
	assert_int_equal(lnet_acceptor_req_decode(ex_acr_v2, sizeof(ex_acr_v2), &d), 28);
	assert_int_equal(d.version, 2);
	assert_nid_eq(&d.target, &b);
}

static struct ksock_hello example_hello(void)
{
	struct ksock_hello h = {
		.version = KSOCK_PROTO_V3,
		.src_nid = tcp_nid(IP_A),
		.dst_nid = tcp_nid(IP_B),
		.src_pid = ULNET_PID_LUSTRE,
		.dst_pid = ULNET_PID_LUSTRE,
		.src_incarnation = 0x1122334455667788ULL,
		.ctype = SOCKLND_CONN_CONTROL,
	};
	return h;
}

static void assert_hello_eq(const struct ksock_hello *a, const struct ksock_hello *b)
{
	assert_int_equal(a->version, b->version);
	assert_nid_eq(&a->src_nid, &b->src_nid);
	assert_int_equal(a->src_pid, b->src_pid);
	assert_int_equal(a->src_incarnation, b->src_incarnation);
	assert_int_equal(a->ctype, b->ctype);
	assert_int_equal(a->nips, b->nips);
	if (a->version != KSOCK_PROTO_V4)
		for (unsigned i = 0; i < a->nips; i++)
			assert_int_equal(a->ips[i], b->ips[i]);
	if (a->version == KSOCK_PROTO_V1)
		return;		/* V1 carries no destination fields */
	assert_nid_eq(&a->dst_nid, &b->dst_nid);
	assert_int_equal(a->dst_pid, b->dst_pid);
	assert_int_equal(a->dst_incarnation, b->dst_incarnation);
}

static void test_example_hello_v3(void **state)
{
	(void)state;
	struct ksock_hello h = example_hello(), d;
	uint8_t buf[128];

	assert_int_equal(ksock_hello_encode(&h, false, buf, sizeof(buf)), 56);
	assert_memory_equal(buf, ex_hello_v3, 56);
	assert_int_equal(ksock_hello_decode_prefix(ex_hello_v3, 8, &d), 8);
	assert_int_equal(d.version, 3);
	assert_int_equal(ksock_hello_size(ex_hello_v3, sizeof(ex_hello_v3)), 56);
	assert_int_equal(ksock_hello_decode(ex_hello_v3, sizeof(ex_hello_v3), &d), 56);
	assert_false(d.swapped);
	assert_hello_eq(&d, &h);
}

static struct lnet_hdr example_put(void)
{
	struct lnet_hdr h = {
		.dest_nid = tcp_nid(IP_B),
		.src_nid = tcp_nid(IP_A),
		.dest_pid = ULNET_PID_LUSTRE,
		.src_pid = ULNET_PID_LUSTRE,
		.type = ULNET_MSG_PUT,
		.payload_length = 4096,
	};
	h.msg.put.ack_wmd = LNET_WIRE_HANDLE_NONE;
	h.msg.put.match_bits = 0x10;
	h.msg.put.ptl_index = 6;
	return h;
}

static void assert_hdr_eq(const struct lnet_hdr *a, const struct lnet_hdr *b)
{
	assert_nid_eq(&a->dest_nid, &b->dest_nid);
	assert_nid_eq(&a->src_nid, &b->src_nid);
	assert_int_equal(a->dest_pid, b->dest_pid);
	assert_int_equal(a->src_pid, b->src_pid);
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->payload_length, b->payload_length);
	assert_memory_equal(&a->msg, &b->msg, sizeof(a->msg));
}

static void test_example_put(void **state)
{
	(void)state;
	struct lnet_hdr h = example_put(), d;
	uint8_t buf[LNET_HDR_MAX_SIZE];

	assert_int_equal(lnet_hdr_encode_nid4(&h, buf, sizeof(buf)), 72);
	assert_memory_equal(buf, ex_put, 72);
	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(lnet_hdr_decode_nid4(ex_put, sizeof(ex_put), &d), 72);
	assert_hdr_eq(&d, &h);
}

static void test_example_ping_info(void **state)
{
	(void)state;
	struct lnet_ping_ni nis[2] = {
		{ .nid = ULNET_NID_LO0, .status = 7 },
		{ .nid = tcp_nid(IP_A), .status = LNET_NI_STATUS_UP },
	}, dn[4];
	struct lnet_ping_info pi = { .features = 0x1e, .pid = 12345, .nnis = 2, .nis = nis },
			      d = { .nis = dn, .max_nis = 4 };
	uint8_t buf[128];

	assert_int_equal(lnet_ping_info_size(&pi), 48);
	assert_int_equal(lnet_ping_info_encode(&pi, buf, sizeof(buf)), 48);
	assert_memory_equal(buf, ex_ping_info, 48);
	assert_int_equal(lnet_ping_info_encode(&pi, buf, 47), -ENOSPC);

	assert_int_equal(lnet_ping_info_decode(ex_ping_info, sizeof(ex_ping_info), &d), 48);
	assert_int_equal(d.features, 0x1e);
	assert_int_equal(d.pid, 12345);
	assert_int_equal(d.nnis, 2);
	assert_int_equal(d.nnis_wire, 2);
	assert_false(d.swapped);
	assert_false(d.truncated);
	assert_nid_eq(&d.nis[0].nid, &ULNET_NID_LO0);
	assert_int_equal(d.nis[0].status, 7);
	assert_nid_eq(&d.nis[1].nid, &nis[1].nid);
	assert_int_equal(d.nis[1].status, LNET_NI_STATUS_UP);

	/* a caller's array smaller than the list: nnis_wire tells */
	d.max_nis = 1;
	assert_int_equal(lnet_ping_info_decode(ex_ping_info, sizeof(ex_ping_info), &d), 48);
	assert_int_equal(d.nnis, 1);
	assert_int_equal(d.nnis_wire, 2);
}

/* ---- every truncated prefix fails with -EMSGSIZE ----------------------- */

typedef ssize_t (*decode_fn)(const uint8_t *buf, size_t len, void *out);

static ssize_t dec_acr(const uint8_t *b, size_t l, void *o) { return lnet_acceptor_req_decode(b, l, o); }
static ssize_t dec_hello(const uint8_t *b, size_t l, void *o) { return ksock_hello_decode(b, l, o); }
static ssize_t dec_ksm_le(const uint8_t *b, size_t l, void *o) { return ksock_msg_hdr_decode(b, l, false, o); }
static ssize_t dec_ksm_be(const uint8_t *b, size_t l, void *o) { return ksock_msg_hdr_decode(b, l, true, o); }
static ssize_t dec_nid4(const uint8_t *b, size_t l, void *o) { return lnet_hdr_decode_nid4(b, l, o); }
static ssize_t dec_nid16(const uint8_t *b, size_t l, void *o) { return lnet_hdr_decode_nid16(b, l, o); }

/* Each prefix is copied into an exact-size heap buffer so that ASan sees
 * any read past it. */
static void check_prefixes(decode_fn fn, const uint8_t *msg, size_t len, void *out)
{
	for (size_t i = 0; i < len; i++) {
		uint8_t *p = malloc(i ? i : 1);

		memcpy(p, msg, i);
		assert_int_equal(fn(p, i, out), -EMSGSIZE);
		free(p);
	}
	assert_int_equal(fn(msg, len, out), (ssize_t)len);
}

static void test_truncated_sock(void **state)
{
	(void)state;
	struct lnet_acceptor_req r = { .version = 1, .target = tcp_nid(IP_B) };
	struct ksock_hello h = example_hello(), hd;
	struct ksock_msg_hdr m = { .type = KSOCK_MSG_LNET, .csum = 0x1234, .zc_cookies = { 5, 7 } }, md;
	uint8_t buf[256];
	ssize_t n;

	for (int be = 0; be < 2; be++) {
		r.version = 1;
		r.target = tcp_nid(IP_B);
		n = lnet_acceptor_req_encode(&r, be, buf, sizeof(buf));
		check_prefixes(dec_acr, buf, (size_t)n, &r);
		r.version = 2;
		r.target = ipv6_nid(1, 0);
		n = lnet_acceptor_req_encode(&r, be, buf, sizeof(buf));
		check_prefixes(dec_acr, buf, (size_t)n, &r);

		for (uint32_t v = KSOCK_PROTO_V1; v <= KSOCK_PROTO_V4; v++) {
			h = example_hello();
			h.version = v;
			h.nips = 3;
			h.ips[0] = 0x0a000001;
			h.ips[1] = 0x0a000002;
			h.ips[2] = 0x0a000003;
			if (v == KSOCK_PROTO_V4)
				h.nips = 0;
			n = ksock_hello_encode(&h, be, buf, sizeof(buf));
			assert_true(n > 0);
			check_prefixes(dec_hello, buf, (size_t)n, &hd);
			/* the streaming helpers on every prefix too */
			for (size_t i = 0; i < 8; i++)
				assert_int_equal(ksock_hello_decode_prefix(buf, i, &hd), -EMSGSIZE);
			assert_int_equal(ksock_hello_size(buf, (size_t)n), n);
		}
		n = ksock_msg_hdr_encode(&m, be, buf, sizeof(buf));
		assert_int_equal(n, KSOCK_MSG_HDR_SIZE);
		check_prefixes(be ? dec_ksm_be : dec_ksm_le, buf, (size_t)n, &md);
	}
	/* ksock_hello_size: -EMSGSIZE until the size is known */
	assert_int_equal(ksock_hello_size(ex_hello_v3, 56), 56);
	for (size_t i = 0; i < 56; i++)
		assert_int_equal(ksock_hello_size(ex_hello_v3, i), -EMSGSIZE);
}

static void fill_hdr(struct lnet_hdr *h, uint32_t type)
{
	memset(h, 0, sizeof(*h));
	h->dest_nid = tcp_nid(IP_B);
	h->src_nid = tcp_nid(IP_A);
	h->dest_pid = 12345;
	h->src_pid = 0x80001234;
	h->type = type;
	h->payload_length = type == ULNET_MSG_PUT || type == ULNET_MSG_REPLY ? 777 : 0;
	switch (type) {
	case ULNET_MSG_PUT:
		h->msg.put.ack_wmd = (lnet_wire_handle_t){ 0x1111222233334444ULL, 0x55 };
		h->msg.put.match_bits = 0x0123456789abcdefULL;
		h->msg.put.hdr_data = 0xfedcba9876543210ULL;
		h->msg.put.ptl_index = 33;
		h->msg.put.offset = 4096;
		break;
	case ULNET_MSG_GET:
		h->msg.get.return_wmd = (lnet_wire_handle_t){ 0x18e9efb3b505a165ULL, 0xd };
		h->msg.get.match_bits = 0x8000000000000000ULL;
		h->msg.get.ptl_index = 0;
		h->msg.get.src_offset = 8;
		h->msg.get.sink_length = 3960;
		break;
	case ULNET_MSG_ACK:
		h->msg.ack.dst_wmd = (lnet_wire_handle_t){ 7, 8 };
		h->msg.ack.match_bits = 0x8000000000000000ULL;
		h->msg.ack.mlength = 48;
		break;
	case ULNET_MSG_REPLY:
		h->msg.reply.dst_wmd = (lnet_wire_handle_t){ 9, 10 };
		break;
	case ULNET_MSG_HELLO:
		h->msg.hello.incarnation = 0x18e9efb3bcf219abULL;
		h->msg.hello.type = SOCKLND_CONN_BULK_IN;
		break;
	}
}

static void test_lnet_hdr_all_types(void **state)
{
	(void)state;
	const struct lnet_hdr_codec *codecs[2] = { &lnet_hdr_codec_nid4, &lnet_hdr_codec_nid16 };
	struct lnet_hdr h, d;
	uint8_t buf[LNET_HDR_MAX_SIZE + 8];

	assert_int_equal(lnet_hdr_codec_nid4.size, 72);
	assert_int_equal(lnet_hdr_codec_nid16.size, 96);
	for (int c = 0; c < 2; c++) {
		const struct lnet_hdr_codec *codec = codecs[c];

		for (uint32_t t = ULNET_MSG_ACK; t <= ULNET_MSG_HELLO; t++) {
			fill_hdr(&h, t);
			if (c == 1)
				h.src_nid = ipv6_nid(0x11, 3);	/* nid16 only */
			memset(buf, 0xa5, sizeof(buf));
			assert_int_equal(codec->encode(&h, buf, sizeof(buf)), (ssize_t)codec->size);
			assert_int_equal(buf[codec->size], 0xa5);	/* not one byte more */
			assert_int_equal(codec->encode(&h, buf, codec->size - 1), -ENOSPC);
			check_prefixes(c ? dec_nid16 : dec_nid4, buf, codec->size, &d);
			assert_hdr_eq(&d, &h);
			/* common fields are LE at fixed places whatever the form */
			assert_int_equal(ul_get_le32(buf + codec->size - 48), t);
			assert_int_equal(ul_get_le32(buf + codec->size - 44), h.payload_length);
		}
	}
	/* GET leaves the last 4 union bytes zero, REPLY the last 24 */
	fill_hdr(&h, ULNET_MSG_GET);
	lnet_hdr_encode_nid4(&h, buf, sizeof(buf));
	for (int i = 68; i < 72; i++)
		assert_int_equal(buf[i], 0);
	fill_hdr(&h, ULNET_MSG_REPLY);
	lnet_hdr_encode_nid4(&h, buf, sizeof(buf));
	for (int i = 48; i < 72; i++)
		assert_int_equal(buf[i], 0);
}

static void test_lnet_hdr_errors(void **state)
{
	(void)state;
	struct lnet_hdr h, d;
	uint8_t buf[LNET_HDR_MAX_SIZE];

	fill_hdr(&h, ULNET_MSG_PUT);
	h.dest_nid = ipv6_nid(1, 0);
	assert_int_equal(lnet_hdr_encode_nid4(&h, buf, sizeof(buf)), -ERANGE);
	h.type = 5;
	assert_int_equal(lnet_hdr_encode_nid16(&h, buf, sizeof(buf)), -EPROTO);

	fill_hdr(&h, ULNET_MSG_ACK);
	assert_int_equal(lnet_hdr_encode_nid4(&h, buf, sizeof(buf)), 72);
	ul_put_le32(buf + 24, 5);
	assert_int_equal(lnet_hdr_decode_nid4(buf, 72, &d), -EPROTO);
	ul_put_le32(buf + 24, 0x01000000);	/* a BE type word is not accepted */
	assert_int_equal(lnet_hdr_decode_nid4(buf, 72, &d), -EPROTO);

	assert_int_equal(lnet_hdr_encode_nid16(&h, buf, sizeof(buf)), 96);
	buf[0] = 5;				/* dest NID size neither 0 nor 12 */
	assert_int_equal(lnet_hdr_decode_nid16(buf, 96, &d), -EINVAL);
	ul_put_le32(buf + 48, 9);
	assert_int_equal(lnet_hdr_decode_nid16(buf, 96, &d), -EPROTO);
}

/* ---- big-endian senders --------------------------------------------------- */

static void test_be_acceptor(void **state)
{
	(void)state;
	static const uint8_t be_v1[] = {
		0xac, 0xce, 0x71, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x02, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x02,
	};
	static const uint8_t be_v2[] = {
		0xac, 0xce, 0x71, 0x00, 0x00, 0x00, 0x00, 0x02,
		0x0c, 0x02, 0x00, 0x07, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x2a,
	};
	struct lnet_acceptor_req r = { .version = 1, .target = tcp_nid(IP_B) }, d;
	ulnet_nid_t v6 = ipv6_nid(0x2a, 7);
	uint8_t buf[64];

	assert_int_equal(lnet_acceptor_req_encode(&r, true, buf, sizeof(buf)), 16);
	assert_memory_equal(buf, be_v1, 16);
	assert_int_equal(lnet_acceptor_req_decode(be_v1, sizeof(be_v1), &d), 16);
	assert_true(d.swapped);
	assert_int_equal(d.version, 1);
	assert_nid_eq(&d.target, &r.target);

	r.version = 2;
	r.target = v6;
	assert_int_equal(lnet_acceptor_req_encode(&r, true, buf, sizeof(buf)), 28);
	assert_memory_equal(buf, be_v2, 28);
	assert_int_equal(lnet_acceptor_req_decode(be_v2, sizeof(be_v2), &d), 28);
	assert_true(d.swapped);
	assert_int_equal(d.version, 2);
	assert_nid_eq(&d.target, &v6);
}

static void test_be_hello(void **state)
{
	(void)state;
	/* V3 from a BE node: every word big-endian, NIDs included */
	static const uint8_t be_v3[] = {
		0x45, 0x72, 0x69, 0x63, 0x00, 0x00, 0x00, 0x03,
		0x00, 0x02, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x01,
		0x00, 0x02, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x02,
		0x00, 0x00, 0x30, 0x39, 0x00, 0x00, 0x30, 0x39,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0, 0, 0, 0, 0, 0, 0, 0,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
	};
	/* V4 from a BE node: words BE, large NIDs as always */
	static const uint8_t be_v4[] = {
		0x45, 0x72, 0x69, 0x63, 0x00, 0x00, 0x00, 0x04,
		0x0c, 0x02, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a,
		0x00, 0x02, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x80, 0x00, 0x10, 0x92, 0x00, 0x00, 0x30, 0x39,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0, 0, 0, 0, 0, 0, 0, 0,
		0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
	};
	struct ksock_hello h = example_hello(), d;
	uint8_t buf[256];
	ssize_t n;

	assert_int_equal(ksock_hello_encode(&h, true, buf, sizeof(buf)), 56);
	assert_memory_equal(buf, be_v3, 56);
	assert_int_equal(ksock_hello_decode_prefix(be_v3, 8, &d), 8);
	assert_true(d.swapped);
	assert_int_equal(d.version, 3);
	assert_int_equal(ksock_hello_decode(be_v3, sizeof(be_v3), &d), 56);
	assert_true(d.swapped);
	assert_hello_eq(&d, &h);

	h.version = KSOCK_PROTO_V4;
	h.src_nid = ipv6_nid(0x0a, 1);
	h.dst_nid = tcp_nid(IP_B);
	h.src_pid = 0x80001092;
	h.src_incarnation = 5;
	h.ctype = SOCKLND_CONN_NONE;
	assert_int_equal(ksock_hello_encode(&h, true, buf, sizeof(buf)), 80);
	assert_memory_equal(buf, be_v4, 80);
	assert_int_equal(ksock_hello_decode(be_v4, sizeof(be_v4), &d), 80);
	assert_true(d.swapped);
	assert_hello_eq(&d, &h);
	assert_int_equal(d.ctype, SOCKLND_CONN_NONE);

	/* V2 with IPs, encoded BE by us */
	h = example_hello();
	h.version = KSOCK_PROTO_V2;
	h.nips = 2;
	h.ips[0] = IP_A;
	h.ips[1] = IP_B;
	n = ksock_hello_encode(&h, true, buf, sizeof(buf));
	assert_int_equal(n, 64);
	assert_int_equal(ul_get_be32(buf + 56), IP_A);
	assert_int_equal(ksock_hello_size(buf, (size_t)n), 64);
	assert_int_equal(ksock_hello_decode(buf, (size_t)n, &d), 64);
	assert_true(d.swapped);
	assert_hello_eq(&d, &h);
}

static void test_be_ksock_hdr(void **state)
{
	(void)state;
	static const uint8_t be_noop[] = {
		0x00, 0x00, 0x00, 0xc0, 0xde, 0xad, 0xbe, 0xef,
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0x01,
	};
	struct ksock_msg_hdr m = { .type = KSOCK_MSG_NOOP, .csum = 0xdeadbeef, .zc_cookies = { 0, 1 } }, d;
	uint8_t buf[32];

	assert_int_equal(ksock_msg_hdr_encode(&m, true, buf, sizeof(buf)), 24);
	assert_memory_equal(buf, be_noop, 24);
	assert_int_equal(ksock_msg_hdr_decode(be_noop, 24, true, &d), 24);
	assert_memory_equal(&d, &m, sizeof(m));
	/* read in the wrong order, the type is unknown */
	assert_int_equal(ksock_msg_hdr_decode(be_noop, 24, false, &d), -EPROTO);
	assert_int_equal(ksock_msg_hdr_encode(&m, false, buf, 23), -ENOSPC);
}

/* Byte-swap a LE ping info in place of a BE sender: the kernel's rules
 * (header words, nid4 entries; large entries: status only). */
static void swap_ping_info(uint8_t *p, size_t size)
{
	uint32_t nnis = ul_get_le32(p + 12), features = ul_get_le32(p + 4);
	size_t off = 16;

	for (int i = 0; i < 4; i++)
		ul_put_be32(p + 4 * i, ul_get_le32(p + 4 * i));
	for (uint32_t i = 0; i < nnis; i++, off += 16) {
		ul_put_be64(p + off, ul_get_le64(p + off));
		ul_put_be32(p + off + 8, ul_get_le32(p + off + 8));
		ul_put_be32(p + off + 12, ul_get_le32(p + off + 12));
	}
	if (!(features & LNET_PING_FEAT_LARGE_ADDR))
		return;
	while (off + 12 <= size) {
		size_t esz = (12u + p[off + 4] + 3) & ~3u;

		ul_put_be32(p + off, ul_get_le32(p + off));
		off += esz;
	}
}

static void test_be_ping_info(void **state)
{
	(void)state;
	static const uint8_t be_pi[] = {
		0x70, 0x69, 0x6e, 0x67, 0x00, 0x00, 0x00, 0x1e, 0x00, 0x00, 0x30, 0x39, 0x00, 0x00, 0x00, 0x02,
		0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x02, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x01, 0x15, 0xaa, 0xc0, 0xde, 0x00, 0x00, 0x00, 0x00,
	};
	struct lnet_ping_ni dn[4];
	struct lnet_ping_info d = { .nis = dn, .max_nis = 4 };
	uint8_t buf[64];
	ulnet_nid_t a = tcp_nid(IP_A);

	assert_int_equal(lnet_ping_info_decode(be_pi, sizeof(be_pi), &d), 48);
	assert_true(d.swapped);
	assert_int_equal(d.features, 0x1e);
	assert_int_equal(d.pid, 12345);
	assert_int_equal(d.nnis, 2);
	assert_nid_eq(&d.nis[0].nid, &ULNET_NID_LO0);
	assert_int_equal(d.nis[0].status, 7);
	assert_nid_eq(&d.nis[1].nid, &a);
	assert_int_equal(d.nis[1].status, LNET_NI_STATUS_UP);

	/* the helper agrees with the hand-written bytes */
	memcpy(buf, ex_ping_info, 48);
	swap_ping_info(buf, 48);
	assert_memory_equal(buf, be_pi, 48);
	/* and re-encoding gives our (LE) form */
	assert_int_equal(lnet_ping_info_encode(&d, buf, sizeof(buf)), 48);
	assert_memory_equal(buf, ex_ping_info, 48);
}

/* ---- HELLO V1 and limits ------------------------------------------------ */

static void test_hello_v1(void **state)
{
	(void)state;
	struct ksock_hello h = example_hello(), d;
	uint8_t buf[256], buf2[256];
	ssize_t n;

	h.version = KSOCK_PROTO_V1;
	h.nips = 2;
	h.ips[0] = IP_A;
	h.ips[1] = IP_B;
	h.ctype = SOCKLND_CONN_BULK_OUT;
	/* V1 is little-endian whatever `be` says */
	n = ksock_hello_encode(&h, true, buf, sizeof(buf));
	assert_int_equal(n, 72 + 8);
	assert_int_equal(ksock_hello_encode(&h, false, buf2, sizeof(buf2)), n);
	assert_memory_equal(buf, buf2, (size_t)n);

	assert_int_equal(ul_get_le32(buf), LNET_PROTO_TCP_MAGIC);
	assert_int_equal(ul_get_le16(buf + 4), 1);
	assert_int_equal(ul_get_le16(buf + 6), 0);
	assert_int_equal(ul_get_le64(buf + 8), 0x00020000c0a80101ULL);
	assert_int_equal(ul_get_le32(buf + 16), 0);		/* dest_pid */
	assert_int_equal(ul_get_le32(buf + 20), 12345);
	assert_int_equal(ul_get_le32(buf + 24), ULNET_MSG_HELLO);
	assert_int_equal(ul_get_le32(buf + 28), 8);
	assert_int_equal(ul_get_le64(buf + 32), 0x1122334455667788ULL);
	assert_int_equal(ul_get_le32(buf + 40), SOCKLND_CONN_BULK_OUT);
	for (int i = 44; i < 72; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(ul_get_le32(buf + 72), IP_A);

	assert_int_equal(ksock_hello_decode_prefix(buf, 8, &d), 8);
	assert_int_equal(d.version, KSOCK_PROTO_V1);
	assert_int_equal(ksock_hello_size(buf, 32), 80);
	assert_int_equal(ksock_hello_decode(buf, (size_t)n, &d), n);
	assert_false(d.swapped);
	assert_hello_eq(&d, &h);
	assert_int_equal(ksock_hello_encode(&d, false, buf2, sizeof(buf2)), n);
	assert_memory_equal(buf, buf2, (size_t)n);

	/* not a HELLO type, a zero IP, a payload not a multiple of 4, minor 1 */
	memcpy(buf2, buf, (size_t)n);
	ul_put_le32(buf2 + 24, ULNET_MSG_PUT);
	assert_int_equal(ksock_hello_decode(buf2, (size_t)n, &d), -EPROTO);
	memcpy(buf2, buf, (size_t)n);
	ul_put_le32(buf2 + 76, 0);
	assert_int_equal(ksock_hello_decode(buf2, (size_t)n, &d), -EPROTO);
	memcpy(buf2, buf, (size_t)n);
	ul_put_le32(buf2 + 28, 7);
	assert_int_equal(ksock_hello_size(buf2, (size_t)n), -EPROTO);
	memcpy(buf2, buf, (size_t)n);
	ul_put_le16(buf2 + 6, 1);
	assert_int_equal(ksock_hello_decode_prefix(buf2, 8, &d), -EPROTO);
	/* a BE V1 magic is not V1 */
	ul_put_be32(buf2, LNET_PROTO_TCP_MAGIC);
	assert_int_equal(ksock_hello_decode_prefix(buf2, 8, &d), -EPROTO);
}

static void test_hello_limits(void **state)
{
	(void)state;
	struct ksock_hello h = example_hello(), d;
	uint8_t buf[256];
	ssize_t n;

	/* nips > 16: refused on both sides, in both orders */
	h.nips = 17;
	assert_int_equal(ksock_hello_encode(&h, false, buf, sizeof(buf)), -EINVAL);
	h.version = KSOCK_PROTO_V1;
	assert_int_equal(ksock_hello_encode(&h, false, buf, sizeof(buf)), -EINVAL);
	h.version = KSOCK_PROTO_V3;
	h.nips = 16;
	for (int i = 0; i < 16; i++)
		h.ips[i] = 0x0a000001u + (uint32_t)i;
	for (int be = 0; be < 2; be++) {
		n = ksock_hello_encode(&h, be, buf, sizeof(buf));
		assert_int_equal(n, 56 + 64);
		assert_int_equal(ksock_hello_decode(buf, (size_t)n, &d), n);
		assert_hello_eq(&d, &h);
		ul_put_32(buf + 52, 17, be);
		assert_int_equal(ksock_hello_size(buf, (size_t)n), -EPROTO);
		assert_int_equal(ksock_hello_decode(buf, sizeof(buf), &d), -EPROTO);
		assert_int_equal(d.version, KSOCK_PROTO_V3);
	}
	/* V4 ignores nips: no list follows */
	h.version = KSOCK_PROTO_V4;
	h.nips = 0;
	n = ksock_hello_encode(&h, false, buf, sizeof(buf));
	assert_int_equal(n, 80);
	ul_put_le32(buf + 76, 1000);
	assert_int_equal(ksock_hello_size(buf, 8), 80);
	assert_int_equal(ksock_hello_decode(buf, 80, &d), 80);
	assert_int_equal(d.nips, 1000);

	/* unknown versions and magics; the version read is reported */
	h.version = KSOCK_PROTO_V3;
	h.nips = 0;
	ksock_hello_encode(&h, false, buf, sizeof(buf));
	ul_put_le32(buf + 4, 5);
	assert_int_equal(ksock_hello_decode_prefix(buf, 8, &d), -EPROTO);
	assert_int_equal(d.version, 5);
	assert_int_equal(ksock_hello_decode(buf, 56, &d), -EPROTO);
	assert_int_equal(d.version, 5);
	ul_put_be32(buf + 4, 5);
	ul_put_be32(buf, LNET_PROTO_MAGIC);
	assert_int_equal(ksock_hello_decode_prefix(buf, 8, &d), -EPROTO);
	assert_int_equal(d.version, 5);
	assert_true(d.swapped);
	ul_put_le32(buf, LNET_PROTO_ACCEPTOR_MAGIC);
	assert_int_equal(ksock_hello_decode_prefix(buf, 4, &d), -EPROTO);
	h.version = 5;
	assert_int_equal(ksock_hello_encode(&h, false, buf, sizeof(buf)), -EINVAL);

	/* nid4 forms refuse large NIDs; short buffers */
	h = example_hello();
	h.src_nid = ipv6_nid(1, 0);
	assert_int_equal(ksock_hello_encode(&h, false, buf, sizeof(buf)), -ERANGE);
	h.version = KSOCK_PROTO_V4;
	assert_int_equal(ksock_hello_encode(&h, false, buf, 79), -ENOSPC);
	h.version = KSOCK_PROTO_V2;
	h.src_nid = tcp_nid(IP_A);
	assert_int_equal(ksock_hello_encode(&h, false, buf, 55), -ENOSPC);

	/* V4 with a malformed large NID */
	h.version = KSOCK_PROTO_V4;
	ksock_hello_encode(&h, false, buf, sizeof(buf));
	buf[8] = 3;
	assert_int_equal(ksock_hello_decode(buf, 80, &d), -EPROTO);
}

static void test_acceptor_errors(void **state)
{
	(void)state;
	struct lnet_acceptor_req r = { .version = 1, .target = tcp_nid(IP_B) }, d;
	uint8_t buf[64];

	/* a HELLO where the request should be: the "old peer" answer */
	ul_put_le32(buf, LNET_PROTO_MAGIC);
	assert_int_equal(lnet_acceptor_req_decode(buf, 4, &d), -EPROTONOSUPPORT);
	ul_put_be32(buf, LNET_PROTO_MAGIC);
	assert_int_equal(lnet_acceptor_req_decode(buf, 4, &d), -EPROTONOSUPPORT);
	ul_put_le32(buf, LNET_PROTO_TCP_MAGIC);
	assert_int_equal(lnet_acceptor_req_decode(buf, 16, &d), -EPROTO);
	ul_put_le32(buf, 0x12345678);
	assert_int_equal(lnet_acceptor_req_decode(buf, 16, &d), -EPROTO);

	/* unknown version: reported, in either order */
	for (int be = 0; be < 2; be++) {
		lnet_acceptor_req_encode(&r, be, buf, sizeof(buf));
		ul_put_32(buf + 4, 3, be);
		assert_int_equal(lnet_acceptor_req_decode(buf, 8, &d), -EPROTO);
		assert_int_equal(d.version, 3);
		assert_int_equal(d.swapped, be);
	}
	/* v2 with a bad NID size */
	r.version = 2;
	lnet_acceptor_req_encode(&r, false, buf, sizeof(buf));
	buf[8] = 4;
	assert_int_equal(lnet_acceptor_req_decode(buf, 28, &d), -EPROTO);
	/* v1 cannot carry a large NID */
	r.version = 1;
	r.target = ipv6_nid(1, 0);
	assert_int_equal(lnet_acceptor_req_encode(&r, false, buf, sizeof(buf)), -ERANGE);
	r.version = 9;
	assert_int_equal(lnet_acceptor_req_encode(&r, false, buf, sizeof(buf)), -EINVAL);
	r.version = 2;
	assert_int_equal(lnet_acceptor_req_encode(&r, false, buf, 27), -ENOSPC);
}

/* ---- ping info validation ------------------------------------------------ */

static void test_ping_info_invalid(void **state)
{
	(void)state;
	struct lnet_ping_ni dn[4];
	struct lnet_ping_info d = { .nis = dn, .max_nis = 4 };
	uint8_t buf[64];

	memcpy(buf, ex_ping_info, 48);
	buf[0] ^= 1;						/* bad magic */
	assert_int_equal(lnet_ping_info_decode(buf, 48, &d), -EPROTO);

	memcpy(buf, ex_ping_info, 48);
	ul_put_le32(buf + 4, 0x1e & ~LNET_PING_FEAT_NI_STATUS);	/* no NI_STATUS */
	assert_int_equal(lnet_ping_info_decode(buf, 48, &d), -EPROTO);

	memcpy(buf, ex_ping_info, 48);
	ul_put_le32(buf + 12, 0);				/* no entries */
	assert_int_equal(lnet_ping_info_decode(buf, 48, &d), -EPROTO);

	memcpy(buf, ex_ping_info, 48);
	ul_put_le32(buf + 12, 4097);				/* > 4096 entries */
	assert_int_equal(lnet_ping_info_decode(buf, 48, &d), -EPROTO);
	ul_put_le32(buf + 12, 4096);				/* 4096: valid, truncated */
	assert_int_equal(lnet_ping_info_decode(buf, 48, &d), 48);
	assert_true(d.truncated);
	assert_int_equal(d.nnis, 2);

	memcpy(buf, ex_ping_info, 48);
	memcpy(buf + 16, ex_ping_info + 32, 16);		/* entry 0 not 0@lo */
	assert_int_equal(lnet_ping_info_decode(buf, 48, &d), -EPROTO);
	memcpy(buf, ex_ping_info, 48);
	ul_put_le64(buf + 16, 0x0009000000000001ULL);		/* 1@lo */
	assert_int_equal(lnet_ping_info_decode(buf, 48, &d), -EPROTO);

	/* LARGE_ADDR whose total does not even cover the nid4 entries */
	memcpy(buf, ex_ping_info, 48);
	ul_put_le32(buf + 4, 0x1e | LNET_PING_FEAT_LARGE_ADDR);
	ul_put_le32(buf + 28, 40);
	assert_int_equal(lnet_ping_info_decode(buf, 48, &d), -EPROTO);
}

static void test_ping_info_truncated(void **state)
{
	(void)state;
	struct lnet_ping_ni dn[4];
	struct lnet_ping_info d = { .nis = dn, .max_nis = 4 };

	for (size_t i = 0; i < sizeof(ex_ping_info); i++) {
		uint8_t *p = malloc(i ? i : 1);
		ssize_t rc;

		memcpy(p, ex_ping_info, i);
		rc = lnet_ping_info_decode(p, i, &d);
		if (i < 32) {
			/* the header and entry 0 (0@lo) are needed to validate */
			assert_int_equal(rc, -EMSGSIZE);
		} else {
			/* what is whole is decoded, and the cut is reported */
			assert_int_equal(rc, 16 + 16 * (ssize_t)((i - 16) / 16));
			assert_true(d.truncated);
			assert_int_equal(d.nnis, (i - 16) / 16);
		}
		free(p);
	}
}

static void test_ping_info_large_addr(void **state)
{
	(void)state;
	struct lnet_ping_ni nis[4] = {
		{ .nid = ULNET_NID_LO0, .status = 3 },
		{ .nid = ipv6_nid(0x11, 0), .status = LNET_NI_STATUS_UP },	/* listed first... */
		{ .nid = tcp_nid(IP_A), .status = LNET_NI_STATUS_UP },
		{ .nid = ipv6_nid(0x22, 5), .status = LNET_NI_STATUS_DOWN },
	}, dn[4];
	struct lnet_ping_info pi = {
		.features = 0x1e | LNET_PING_FEAT_LARGE_ADDR | LNET_PING_FEAT_PRIMARY_LARGE,
		.pid = 12345, .nnis = 4, .nis = nis,
	}, d = { .nis = dn, .max_nis = 4 };
	uint8_t buf[256], buf2[256];
	ssize_t n;

	/* 16 + 2 nid4 entries + 2 IPv6 entries of 24 */
	assert_int_equal(lnet_ping_info_size(&pi), 16 + 32 + 48);
	n = lnet_ping_info_encode(&pi, buf, sizeof(buf));
	assert_int_equal(n, 96);
	assert_int_equal(ul_get_le32(buf + 12), 2);		/* nid4 entries only */
	assert_int_equal(ul_get_le32(buf + 16 + 12), 96);	/* entry 0 msg_size = total */
	assert_int_equal(ul_get_le64(buf + 32), 0x00020000c0a80101ULL);
	/* ...but goes in the large section: status, then the NID bytes */
	assert_int_equal(ul_get_le32(buf + 48), LNET_NI_STATUS_UP);
	assert_int_equal(buf[52], 12);
	assert_int_equal(buf[53], ULNET_LND_TCP);
	assert_int_equal(ul_get_be16(buf + 54), 0);
	assert_int_equal(ul_get_be32(buf + 56), 0x20010db8);
	assert_int_equal(buf[71], 0x11);
	assert_int_equal(ul_get_le32(buf + 72), LNET_NI_STATUS_DOWN);
	assert_int_equal(ul_get_be16(buf + 78), 5);

	assert_int_equal(lnet_ping_info_decode(buf, (size_t)n, &d), 96);
	assert_int_equal(d.features, pi.features);
	assert_int_equal(d.nnis, 4);
	assert_int_equal(d.nnis_wire, 4);
	assert_false(d.truncated);
	assert_nid_eq(&d.nis[0].nid, &ULNET_NID_LO0);
	assert_int_equal(d.nis[0].msg_size, 96);
	assert_nid_eq(&d.nis[1].nid, &nis[2].nid);
	assert_nid_eq(&d.nis[2].nid, &nis[1].nid);
	assert_int_equal(d.nis[2].status, LNET_NI_STATUS_UP);
	assert_nid_eq(&d.nis[3].nid, &nis[3].nid);
	assert_int_equal(d.nis[3].status, LNET_NI_STATUS_DOWN);
	/* decoded order is wire order, so it now round-trips byte for byte */
	assert_int_equal(lnet_ping_info_encode(&d, buf2, sizeof(buf2)), n);
	assert_memory_equal(buf, buf2, (size_t)n);

	/* from a BE sender: the NID bytes stay as they are */
	memcpy(buf2, buf, (size_t)n);
	swap_ping_info(buf2, (size_t)n);
	assert_int_equal(lnet_ping_info_decode(buf2, (size_t)n, &d), 96);
	assert_true(d.swapped);
	assert_int_equal(d.nnis, 4);
	assert_nid_eq(&d.nis[2].nid, &nis[1].nid);
	assert_int_equal(d.nis[3].status, LNET_NI_STATUS_DOWN);

	/* cut inside the large section: whole entries only */
	assert_int_equal(lnet_ping_info_decode(buf, 80, &d), 72);
	assert_true(d.truncated);
	assert_int_equal(d.nnis, 3);

	/* large NIDs without LARGE_ADDR asked: set anyway */
	pi.features = 0x1e;
	n = lnet_ping_info_encode(&pi, buf, sizeof(buf));
	assert_int_equal(n, 96);
	assert_int_equal(ul_get_le32(buf + 4), 0x1e | LNET_PING_FEAT_LARGE_ADDR);

	/* an IPv4 NID in the large section (12 bytes) is read too, and an
	 * unusable NID size is skipped like the kernel does */
	memcpy(buf2, ex_ping_info, 48);
	ul_put_le32(buf2 + 4, 0x1e | LNET_PING_FEAT_LARGE_ADDR);
	ul_put_le32(buf2 + 28, 48 + 12 + 12);
	memset(buf2 + 48, 0, 28);
	ul_put_le32(buf2 + 48, LNET_NI_STATUS_UP);
	buf2[52] = 0;
	buf2[53] = ULNET_LND_TCP;
	ul_put_be32(buf2 + 56, IP_B);
	ul_put_le32(buf2 + 60, LNET_NI_STATUS_UP);
	buf2[64] = 2;					/* size 2: 14 -> 16 bytes */
	ul_put_le32(buf2 + 28, 48 + 12 + 16);
	assert_int_equal(lnet_ping_info_decode(buf2, 76, &d), 76);
	assert_int_equal(d.nnis, 3);
	assert_int_equal(d.nnis_wire, 4);
	assert_int_equal(ulnet_nid_ipv4(&d.nis[2].nid), IP_B);
}

/* ---- checksum ---------------------------------------------------------- */

static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return crc;
}

static void test_csum(void **state)
{
	(void)state;
	static const char check[] = "123456789";
	uint8_t data[1024 + 8];
	uint64_t rng = 0x243f6a8885a308d3ULL;

	assert_int_equal(ksock_csum(KSOCK_CSUM_SEED, check, 9), 0x340bc6d9u);
	assert_int_equal(~ksock_csum(KSOCK_CSUM_SEED, check, 9), 0xcbf43926u);	/* zlib's */
	assert_int_equal(ksock_csum(KSOCK_CSUM_SEED, check, 0), KSOCK_CSUM_SEED);
	assert_int_equal(ksock_csum(0, "\0\0\0\0", 4), 0);
	/* chaining = one pass */
	for (size_t cut = 0; cut <= 9; cut++)
		assert_int_equal(ksock_csum(ksock_csum(KSOCK_CSUM_SEED, check, cut), check + cut, 9 - cut),
				 0x340bc6d9u);

	for (size_t i = 0; i < sizeof(data); i++) {
		rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
		data[i] = (uint8_t)rng;
	}
	/* the sliced tables against the plain definition, all lengths and
	 * alignments */
	for (size_t len = 0; len <= 300; len++)
		for (size_t al = 0; al < 8; al++)
			assert_int_equal(ksock_csum(KSOCK_CSUM_SEED, data + al, len),
					 crc_bitwise(KSOCK_CSUM_SEED, data + al, len));
	assert_int_equal(ksock_csum(0x12345678, data, 1024), crc_bitwise(0x12345678, data, 1024));
	assert_int_equal(ksock_csum(ksock_csum(KSOCK_CSUM_SEED, data, 333), data + 333, 691),
			 ksock_csum(KSOCK_CSUM_SEED, data, 1024));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_acceptor),
		cmocka_unit_test(test_example_hello_v3),
		cmocka_unit_test(test_example_put),
		cmocka_unit_test(test_example_ping_info),
		cmocka_unit_test(test_truncated_sock),
		cmocka_unit_test(test_lnet_hdr_all_types),
		cmocka_unit_test(test_lnet_hdr_errors),
		cmocka_unit_test(test_be_acceptor),
		cmocka_unit_test(test_be_hello),
		cmocka_unit_test(test_be_ksock_hdr),
		cmocka_unit_test(test_be_ping_info),
		cmocka_unit_test(test_hello_v1),
		cmocka_unit_test(test_hello_limits),
		cmocka_unit_test(test_acceptor_errors),
		cmocka_unit_test(test_ping_info_invalid),
		cmocka_unit_test(test_ping_info_truncated),
		cmocka_unit_test(test_ping_info_large_addr),
		cmocka_unit_test(test_csum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
