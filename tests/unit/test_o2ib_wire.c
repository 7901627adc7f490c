/* SPDX-License-Identifier: MIT */
/*
 * test_o2ib_wire.c - the o2iblnd codec (src/lnd/o2iblnd/o2ib_wire.c):
 * a CONNREQ encodes to bytes written out by hand from the kernel's packed
 * layout, in both byte orders; every type round-trips; the checksum matches
 * values computed by hand for the signed-char and unsigned-char forms and
 * either is accepted; descriptors bound their fragment count; every
 * truncation fails; rejections in V1 and V2 shapes and both magics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lnd/o2iblnd/o2ib_wire.h"

/* 192.168.1.2@o2ib -> 192.168.1.3@o2ib, CONNREQ version 0x12, 8 credits,
 * queue depth 32, 257 frags, 4096-byte messages, srcstamp
 * 0x1122334455667788: magic 0x0be91b91 | version | type | credits | nob 56 |
 * cksum 0 | srcnid 0x00050000c0a80102 | srcstamp | dstnid | dststamp 0 |
 * connparams, each in little-endian order */
static const char CONNREQ_LE[] =
	"911be90b1200c00838000000000000000201a8c00000050088776655443322110301a8c0000005"
	"0000000000000000002000010100100000";
/* its checksum computed by hand with each byte taken as a signed char, and
 * as an unsigned one */
#define CONNREQ_CKSUM_SIGNED	0xd18e02b0U
#define CONNREQ_CKSUM_UNSIGNED	0xa30e3331U

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = strlen(s) / 2;

	for (size_t i = 0; i < n; i++) {
		unsigned v;

		sscanf(s + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
	return n;
}

static ulnet_nid4_t o2ib_nid4(uint32_t ip)
{
	return ((uint64_t)ulnet_mknet(ULNET_LND_O2IB, 0) << 32) | ip;
}

static void o2ib_nid(uint32_t ip, ulnet_nid_t *nid)
{
	ulnet_nid_from_nid4(o2ib_nid4(ip), nid);
}

static struct kib_msg connreq(void)
{
	struct kib_msg m = { .version = KIB_MSG_VERSION_2, .type = KIB_MSG_CONNREQ, .credits = 8,
			     .srcstamp = 0x1122334455667788ULL,
			     .cp = { .queue_depth = 32, .max_frags = 257, .max_msg_size = 4096 } };

	m.srcnid = o2ib_nid4(0xc0a80102);
	m.dstnid = o2ib_nid4(0xc0a80103);
	return m;
}

/* every field of the header, swapped where the sender was big-endian */
static void swap_header(uint8_t *b)
{
	static const struct { int off, size; } f[] = {
		{ 0, 4 }, { 4, 2 }, { 8, 4 }, { 12, 4 }, { 16, 8 }, { 24, 8 }, { 32, 8 }, { 40, 8 },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		for (int j = 0; j < f[i].size / 2; j++) {
			uint8_t t = b[f[i].off + j];

			b[f[i].off + j] = b[f[i].off + f[i].size - 1 - j];
			b[f[i].off + f[i].size - 1 - j] = t;
		}
}

static void test_connreq_bytes(void **state)
{
	uint8_t want[64], buf[64], be[64];
	struct kib_msg m = connreq(), d;
	size_t n = unhex(CONNREQ_LE, want);

	(void)state;
	assert_int_equal(n, KIB_CONNMSG_SIZE);
	assert_int_equal(kib_msg_encode(&m, NULL, 0, false, buf, sizeof(buf)), 56);
	assert_memory_equal(buf, want, 56);

	/* the big-endian form: every field swapped, the connparams too */
	assert_int_equal(kib_msg_encode(&m, NULL, 0, true, be, sizeof(be)), 56);
	memcpy(buf, want, 56);
	swap_header(buf);
	buf[48] = 0x00, buf[49] = 0x20;                    /* queue depth 32 */
	buf[50] = 0x01, buf[51] = 0x01;                    /* 257 frags */
	buf[52] = 0, buf[53] = 0, buf[54] = 0x10, buf[55] = 0; /* 4096 */
	assert_memory_equal(be, buf, 56);

	for (int order = 0; order < 2; order++) {
		assert_int_equal(kib_msg_decode(order ? be : want, 56, &d), 56);
		assert_int_equal(d.be, order);
		assert_int_equal(d.version, 0x12);
		assert_int_equal(d.type, KIB_MSG_CONNREQ);
		assert_int_equal(d.credits, 8);
		assert_int_equal(d.srcnid, 0x00050000c0a80102ULL);
		assert_int_equal(d.dstnid, 0x00050000c0a80103ULL);
		assert_int_equal(d.srcstamp, 0x1122334455667788ULL);
		assert_int_equal(d.cp.queue_depth, 32);
		assert_int_equal(d.cp.max_frags, 257);
		assert_int_equal(d.cp.max_msg_size, 4096);
		assert_int_equal(d.cksum, 0);
	}
}

static void test_checksum(void **state)
{
	uint8_t b[64], z[16] = { 0x80 };
	struct kib_msg d;

	(void)state;
	/* one byte 0x80 then zeros: -128 rotated left 15 times, or 0x80 */
	assert_int_equal(kib_cksum(z, 16, KIB_CKSUM_SIGNED), 0xffc07fffU);
	assert_int_equal(kib_cksum(z, 16, KIB_CKSUM_UNSIGNED), 0x00400000U);
	memset(z, 0, sizeof(z));
	assert_int_equal(kib_cksum(z, 16, KIB_CKSUM_SIGNED), 1); /* never 0 */

	unhex(CONNREQ_LE, b);
	assert_int_equal(kib_cksum(b, 56, KIB_CKSUM_SIGNED), CONNREQ_CKSUM_SIGNED);
	assert_int_equal(kib_cksum(b, 56, KIB_CKSUM_UNSIGNED), CONNREQ_CKSUM_UNSIGNED);

	/* sealed either way, it decodes; the form it matched is reported */
	kib_msg_seal(b, 56, false, KIB_CKSUM_SIGNED);
	assert_int_equal(b[12] | b[13] << 8 | b[14] << 16 | (uint32_t)b[15] << 24, CONNREQ_CKSUM_SIGNED);
	assert_int_equal(kib_cksum(b, 56, KIB_CKSUM_SIGNED), CONNREQ_CKSUM_SIGNED); /* field read as 0 */
	assert_int_equal(kib_msg_decode(b, 56, &d), 56);
	assert_int_equal(d.cksum, CONNREQ_CKSUM_SIGNED);
	assert_false(d.cksum_unsigned);
	kib_msg_seal(b, 56, false, KIB_CKSUM_UNSIGNED);
	assert_int_equal(kib_msg_decode(b, 56, &d), 56);
	assert_true(d.cksum_unsigned);

	/* a changed byte fails it */
	b[30] ^= 1;
	assert_int_equal(kib_msg_decode(b, 56, &d), -EPROTO);
}

static void test_round_trip(void **state)
{
	static const uint8_t types[] = {
		KIB_MSG_CONNREQ, KIB_MSG_CONNACK, KIB_MSG_NOOP, KIB_MSG_IMMEDIATE, KIB_MSG_PUT_REQ,
		KIB_MSG_PUT_NAK, KIB_MSG_PUT_ACK, KIB_MSG_PUT_DONE, KIB_MSG_GET_REQ, KIB_MSG_GET_DONE,
	};
	struct kib_rdma_frag frags[3] = { { 4096, 0x7f0000001000ULL },
					  { 100, 0x123456789abcdef0ULL },
					  { 1, 0xffffffffffffffffULL } };
	uint8_t buf[KIB_MSG_SIZE];

	(void)state;
	for (size_t t = 0; t < sizeof(types); t++)
		for (int be = 0; be < 2; be++) {
			struct kib_msg m = connreq(), d;
			ssize_t n;

			m.type = types[t];
			m.credits = 3;
			m.dststamp = 42;
			m.hdr.type = ULNET_MSG_PUT;
			m.hdr.payload_length = 17;
			m.hdr.msg.put.match_bits = 0xabcdef;
			m.hdr.msg.put.ack_wmd = LNET_WIRE_HANDLE_NONE;
			o2ib_nid(0xc0a80102, &m.hdr.src_nid);
			o2ib_nid(0xc0a80109, &m.hdr.dest_nid);
			m.cookie = 0x1000 + t;
			m.src_cookie = 7;
			m.dst_cookie = 8;
			m.status = -5;
			m.rd.key = 0xdeadbeef;
			m.payload_nob = 17;
			n = kib_msg_encode(&m, frags, 3, be, buf, sizeof(buf));
			assert_true(n > 0);
			if (m.type == KIB_MSG_IMMEDIATE) {
				memset(buf + n, 0x5a, 17);
				n += 17;
			}
			kib_msg_seal(buf, (uint32_t)n, be, KIB_CKSUM_SIGNED);
			assert_int_equal(kib_msg_decode(buf, (size_t)n, &d), n);
			assert_int_equal(d.type, m.type);
			assert_int_equal(d.credits, 3);
			assert_int_equal(d.dststamp, 42);
			assert_int_equal(d.be, be);
			switch (m.type) {
			case KIB_MSG_IMMEDIATE:
				assert_int_equal(d.payload_nob, 17);
				/* fall through */
			case KIB_MSG_PUT_REQ:
			case KIB_MSG_GET_REQ:
				assert_int_equal(d.hdr.type, ULNET_MSG_PUT);
				assert_int_equal(d.hdr.msg.put.match_bits, 0xabcdef);
				assert_true(ulnet_nid_same(&d.hdr.dest_nid, &m.hdr.dest_nid));
				if (m.type != KIB_MSG_IMMEDIATE)
					assert_int_equal(d.cookie, m.cookie);
				if (m.type != KIB_MSG_GET_REQ)
					break;
				/* fall through */
			case KIB_MSG_PUT_ACK:
				if (m.type == KIB_MSG_PUT_ACK) {
					assert_int_equal(d.src_cookie, 7);
					assert_int_equal(d.dst_cookie, 8);
				}
				assert_int_equal(d.rd.key, 0xdeadbeef);
				assert_int_equal(d.rd.nfrags, 3);
				for (uint32_t i = 0; i < 3; i++) {
					struct kib_rdma_frag f = kib_rd_frag(&d.rd, i);

					assert_int_equal(f.nob, frags[i].nob);
					assert_int_equal(f.addr, frags[i].addr);
				}
				break;
			case KIB_MSG_PUT_NAK:
			case KIB_MSG_PUT_DONE:
			case KIB_MSG_GET_DONE:
				assert_int_equal(d.cookie, m.cookie);
				assert_int_equal(d.status, -5);
				break;
			default:
				break;
			}
			/* every shorter buffer fails, none is read past */
			for (size_t l = 0; l < (size_t)n; l++) {
				uint8_t *cut = malloc(l ? l : 1);

				memcpy(cut, buf, l);
				assert_true(kib_msg_decode(cut, l, &d) < 0);
				free(cut);
			}
		}
}

/* Cookies are echoed byte for byte, whatever the two sides' orders (the
 * kernel never swaps them): a big-endian peer's PUT_REQ cookie comes back
 * in our little-endian PUT_ACK as the same 8 bytes. */
static void test_cookies_echoed(void **state)
{
	static const uint8_t ck[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct kib_rdma_frag f = { 4096, 0x1000 };
	uint8_t req[KIB_PUTREQ_SIZE], ack[KIB_PUTACK_SIZE(1)];
	struct kib_msg m = connreq(), d;

	(void)state;
	m.type = KIB_MSG_PUT_REQ;
	m.hdr.type = ULNET_MSG_PUT;
	o2ib_nid(0xc0a80102, &m.hdr.src_nid);
	o2ib_nid(0xc0a80103, &m.hdr.dest_nid);
	assert_int_equal(kib_msg_encode(&m, NULL, 0, true, req, sizeof(req)), KIB_PUTREQ_SIZE);
	memcpy(req + KIB_PUTREQ_SIZE - 8, ck, 8);   /* the peer's cookie bytes */
	assert_int_equal(kib_msg_decode(req, sizeof(req), &d), KIB_PUTREQ_SIZE);
	assert_true(d.be);
	m = connreq();
	m.type = KIB_MSG_PUT_ACK;
	m.src_cookie = d.cookie;
	m.dst_cookie = 42;
	assert_int_equal(kib_msg_encode(&m, &f, 1, false, ack, sizeof(ack)), KIB_PUTACK_SIZE(1));
	assert_memory_equal(ack + KIB_HDR_SIZE, ck, 8);
	/* and a completion's cookie likewise */
	m.type = KIB_MSG_PUT_DONE;
	m.cookie = d.cookie;
	assert_int_equal(kib_msg_encode(&m, NULL, 0, true, ack, sizeof(ack)), KIB_COMPLETION_SIZE);
	assert_memory_equal(ack + KIB_HDR_SIZE, ck, 8);
}

static void test_descriptors(void **state)
{
	static struct kib_rdma_frag frags[KIB_MAX_RDMA_FRAGS + 1];
	uint8_t buf[KIB_MSG_SIZE];
	struct kib_msg m = connreq(), d;
	ssize_t n;

	(void)state;
	m.type = KIB_MSG_GET_REQ;
	m.hdr.type = ULNET_MSG_GET;
	o2ib_nid(0xc0a80102, &m.hdr.src_nid);
	o2ib_nid(0xc0a80103, &m.hdr.dest_nid);
	for (int i = 0; i <= KIB_MAX_RDMA_FRAGS; i++)
		frags[i] = (struct kib_rdma_frag){ 4096, 0x1000ULL * (uint64_t)i };
	/* 257 fragments fit a 4 KiB message; 258 and 0 are refused */
	n = kib_msg_encode(&m, frags, KIB_MAX_RDMA_FRAGS, false, buf, sizeof(buf));
	assert_int_equal(n, KIB_GETREQ_SIZE(KIB_MAX_RDMA_FRAGS));
	assert_int_equal(kib_msg_decode(buf, (size_t)n, &d), n);
	assert_int_equal(d.rd.nfrags, KIB_MAX_RDMA_FRAGS);
	assert_int_equal(kib_rd_frag(&d.rd, 256).addr, 0x100000ULL);
	assert_int_equal(kib_msg_encode(&m, frags, KIB_MAX_RDMA_FRAGS + 1, false, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(kib_msg_encode(&m, frags, 0, false, buf, sizeof(buf)), -EINVAL);

	/* on the wire: nfrags 0, nfrags 258, and more fragments than nob holds */
	n = kib_msg_encode(&m, frags, 2, false, buf, sizeof(buf));
	assert_true(n > 0);
	buf[KIB_PUTREQ_SIZE + 4] = 0;
	assert_int_equal(kib_msg_decode(buf, (size_t)n, &d), -EPROTO);
	buf[KIB_PUTREQ_SIZE + 4] = 2 + 1; /* 3 frags in a message that holds 2 */
	assert_int_equal(kib_msg_decode(buf, (size_t)n, &d), -EPROTO);
	buf[KIB_PUTREQ_SIZE + 4] = 2;
	assert_int_equal(kib_msg_decode(buf, (size_t)n, &d), n);
	buf[KIB_PUTREQ_SIZE + 4] = 0x02, buf[KIB_PUTREQ_SIZE + 5] = 0x01; /* 258 */
	assert_int_equal(kib_msg_decode(buf, (size_t)n, &d), -EPROTO);
}

static void test_refused(void **state)
{
	uint8_t b[64], c[256];
	struct kib_msg d, m = connreq();

	(void)state;
	unhex(CONNREQ_LE, b);
	memcpy(c, b, 56);
	c[0] ^= 0xff; /* magic */
	assert_int_equal(kib_msg_decode(c, 56, &d), -EPROTO);
	memcpy(c, b, 56);
	c[4] = 0x13; /* version */
	assert_int_equal(kib_msg_decode(c, 56, &d), -EPROTO);
	c[4] = 0x11; /* V1 is taken */
	assert_int_equal(kib_msg_decode(c, 56, &d), 56);
	memcpy(c, b, 56);
	c[6] = 0xd8; /* type */
	assert_int_equal(kib_msg_decode(c, 56, &d), -EPROTO);
	memcpy(c, b, 56);
	c[6] = KIB_MSG_PUT_REQ; /* a PUT_REQ needs 128 bytes */
	assert_int_equal(kib_msg_decode(c, 56, &d), -EPROTO);
	memcpy(c, b, 56);
	c[8] = 57; /* nob past what arrived */
	assert_int_equal(kib_msg_decode(c, 56, &d), -EMSGSIZE);
	c[8] = 40; /* nob below the header */
	assert_int_equal(kib_msg_decode(c, 56, &d), -EPROTO);
	memcpy(c, b, 56);
	memset(c + 16, 0xff, 8); /* src NID ANY */
	assert_int_equal(kib_msg_decode(c, 56, &d), -EPROTO);
	/* a message shorter than the buffer: nob counts */
	assert_int_equal(kib_msg_decode(b, 56 + 0, &d), 56);
	/* too long an IMMEDIATE */
	m.type = KIB_MSG_IMMEDIATE;
	m.hdr.type = ULNET_MSG_PUT;
	m.payload_nob = KIB_MSG_SIZE - KIB_IMMEDIATE_SIZE + 1;
	assert_int_equal(kib_msg_encode(&m, NULL, 0, false, c, sizeof(c)), -EINVAL);
	m.payload_nob = KIB_MSG_SIZE - KIB_IMMEDIATE_SIZE;
	assert_int_equal(kib_msg_encode(&m, NULL, 0, false, c, sizeof(c)), KIB_IMMEDIATE_SIZE);
	assert_int_equal(kib_msg_encode(&m, NULL, 0, false, c, 100), -ENOSPC);
	m.type = 0x42;
	assert_int_equal(kib_msg_encode(&m, NULL, 0, false, c, sizeof(c)), -EINVAL);
	assert_string_equal(kib_msg_type_str(KIB_MSG_GET_DONE), "GET_DONE");
	assert_string_equal(kib_msg_type_str(0x42), "???");
}

static void test_rejections(void **state)
{
	/* V2, little-endian: magic, version 0x12, why 7, pad, incarnation 5,
	 * queue depth 16, 256 frags, 4096 */
	static const char REJ_LE[] = "911be90b120007000500000000000000100000010010" "0000";
	uint8_t b[148] = { 0 }, e[KIB_REJ_SIZE];
	struct kib_rej r, w = { .version = 0x12, .why = KIB_REJECT_MSG_QUEUE_SIZE, .incarnation = 5,
				.cp = { 16, 256, 4096 } };

	(void)state;
	unhex(REJ_LE, b);
	assert_int_equal(kib_rej_encode(&w, false, e, sizeof(e)), KIB_REJ_SIZE);
	assert_memory_equal(e, b, KIB_REJ_SIZE);
	/* the RDMA CM hands over 148 bytes of private data */
	assert_int_equal(kib_rej_decode(b, sizeof(b), &r), KIB_REJ_SIZE);
	assert_true(r.has_cp);
	assert_int_equal(r.why, 7);
	assert_int_equal(r.incarnation, 5);
	assert_int_equal(r.cp.queue_depth, 16);
	assert_int_equal(r.cp.max_frags, 256);

	assert_int_equal(kib_rej_encode(&w, true, e, sizeof(e)), KIB_REJ_SIZE);
	assert_int_equal(kib_rej_decode(e, sizeof(e), &r), KIB_REJ_SIZE);
	assert_true(r.be);
	assert_int_equal(r.magic, KIB_MSG_MAGIC);
	assert_int_equal(r.cp.max_msg_size, 4096);
	assert_int_equal(r.incarnation, 5);

	/* V1: no incarnation or parameters, whatever the length */
	b[4] = 0x11;
	assert_int_equal(kib_rej_decode(b, sizeof(b), &r), KIB_REJ_MIN_SIZE);
	assert_false(r.has_cp);
	assert_int_equal(r.incarnation, ~0ULL);
	/* 7 bytes are enough for the reason; 6 are not */
	b[4] = 0x12;
	assert_int_equal(kib_rej_decode(b, 7, &r), KIB_REJ_MIN_SIZE);
	assert_int_equal(r.why, 7);
	assert_int_equal(kib_rej_decode(b, 6, &r), -EMSGSIZE);
	/* LNet's magic is a rejection too; anything else is not */
	w.magic = KIB_LNET_PROTO_MAGIC;
	assert_int_equal(kib_rej_encode(&w, true, e, sizeof(e)), KIB_REJ_SIZE);
	assert_int_equal(kib_rej_decode(e, sizeof(e), &r), KIB_REJ_SIZE);
	assert_int_equal(r.magic, KIB_LNET_PROTO_MAGIC);
	e[0] ^= 1;
	assert_int_equal(kib_rej_decode(e, sizeof(e), &r), -EPROTO);
	assert_int_equal(kib_rej_encode(&w, false, e, KIB_REJ_SIZE - 1), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connreq_bytes),
		cmocka_unit_test(test_checksum),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_cookies_echoed),
		cmocka_unit_test(test_descriptors),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_rejections),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
