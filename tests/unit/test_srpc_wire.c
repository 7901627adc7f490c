/* SPDX-License-Identifier: MIT */
/*
 * test_srpc_wire.c - the SRPC message codec (src/selftest/srpc_wire.c):
 * messages taken from a kernel lst session (shared/pcaps/lst.pcap, the
 * 160 bytes after the LNet header; trailing zero bytes left out) decode to
 * the fields the capture shows and the replies re-encode byte for byte;
 * every truncated prefix fails; a big-endian sender decodes the same; every
 * type round-trips; errors.
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

#include "selftest/srpc_wire.h"
#include "util/util_bytes.h"

/* lst.pcap message 0 */
static const char MKSN_REQ[] =
	"0df0b0ee01000000000000000000000000000000010000000100000000004b07"
	"0b4da8c0000002001ac9000000000000000000006c61627365737300"
	;
/* lst.pcap message 1 */
static const char MKSN_REP[] =
	"0df0b0ee0100000001000000000000000000000001000000000000000b4da8c0"
	"000002001ac900000000000064000000"
	;
/* lst.pcap message 2 */
static const char TEST_PING_REQ[] =
	"0df0b0ee01000000080000000000000000000000010000000300000000004b07"
	"00000000000000000b4da8c0000002001ac90000000000000200000000000000"
	"0c000000010000000100000000010000"
	;
/* lst.pcap message 3 */
static const char TEST_PING_REP[] =
	"0df0b0ee0100000009000000000000000000000001000000000000000b4da8c0"
	"000002001ac90000"
	;
/* lst.pcap message 4 */
static const char PING_REQ[] =
	"0df0b0ee010000000e0000000000000000000000010000000700000000004b07"
	"cefabeba000000005307016b0000000019adee0e"
	;
/* lst.pcap message 5 */
static const char PING_REP[] =
	"0df0b0ee010000000f00000000000000000000000100000000000000cefabeba"
	;
/* lst.pcap message 14 */
static const char TEST_BRW_W_REQ[] =
	"0df0b0ee01000000080000000000000000000000010000000f00000000004b07"
	"00000000000000000b4da8c0000002001ac90000000000000300000000000000"
	"0b000000010000000100000000010000000002000300000001000000"
	;
/* lst.pcap message 16 */
static const char TEST_BRW_R_REQ[] =
	"0df0b0ee01000000080000000000000000000000010000001200000000004b07"
	"00000000000000000b4da8c0000002001ac90000000000000300000000000000"
	"0b0000000100000001000000000100000000010002000010"
	;
/* lst.pcap message 17 */
static const char TEST_BRW_R_REP[] =
	"0df0b0ee0100000009000000000000000000000001000000000000000b4da8c0"
	"000002001ac90000"
	;
/* lst.pcap message 18 */
static const char BRW_REP[] =
	"0df0b0ee010000000d000000000000000000000001000000"
	;
/* lst.pcap message 19 */
static const char BRW_R_REQ[] =
	"0df0b0ee010000000c0000000000000000000000010000001a00000000004b07"
	"1b00000000004b07010000000010000002000000"
	;
/* lst.pcap message 26 */
static const char STAT_REQ[] =
	"0df0b0ee01000000060000000000000000000000010000002400000000004b07"
	"0b4da8c0000002001ac90000"
	;
/* lst.pcap message 27 */
static const char STAT_REP[] =
	"0df0b0ee0100000007000000000000000000000001000000000000000b4da8c0"
	"000002001ac90000000000008720000000000000000000000000000000000000"
	"0000000000000000100000000000000000000000000003000000000000300000"
	"0000000000000000020000000000000019000000170000000000000000000000"
	"f039000000000000300a0300"
	;
/* lst.pcap message 32 */
static const char RMSN_REQ[] =
	"0df0b0ee01000000020000000000000000000000010000002b00000000004b07"
	"0b4da8c0000002001ac90000"
	;
/* lst.pcap message 33 */
static const char RMSN_REP[] =
	"0df0b0ee010000000300000000000000000000000100000000000000ffffffff"
	"ffffffffffffffffffffffff"
	;

#define CONSOLE_NID 0x00020000c0a84d0bULL   /* 192.168.77.11@tcp */
#define SESSION_STAMP 0xc91aLL

/* The capture's bytes, zero-filled to 160. */
static void load(const char *hex, uint8_t out[SRPC_MSG_SIZE])
{
	size_t n = strlen(hex) / 2;

	assert_true(n <= SRPC_MSG_SIZE);
	memset(out, 0, SRPC_MSG_SIZE);
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

static void decode_capture(const char *hex, struct srpc_msg *m)
{
	uint8_t b[SRPC_MSG_SIZE];

	load(hex, b);
	assert_int_equal(srpc_msg_decode(b, sizeof(b), m), 0);
	assert_int_equal(m->version, SRPC_MSG_VERSION);
	assert_int_equal(m->ses_feats, LST_FEAT_BULK_LEN);
	assert_false(m->swapped);
}

/* Encode `m` and compare with the capture, byte for byte. */
static void assert_encodes_to(const struct srpc_msg *m, const char *hex)
{
	uint8_t want[SRPC_MSG_SIZE], got[SRPC_MSG_SIZE];

	load(hex, want);
	memset(got, 0xa5, sizeof(got));
	assert_int_equal(srpc_msg_encode(m, got, sizeof(got)), SRPC_MSG_SIZE);
	assert_memory_equal(got, want, SRPC_MSG_SIZE);
}

static void assert_session(struct srpc_sid sid)
{
	assert_int_equal(sid.nid, CONSOLE_NID);
	assert_int_equal(sid.stamp, SESSION_STAMP);
}

static void test_capture_session(void **state)
{
	struct srpc_msg m, r = { 0 };

	(void)state;
	decode_capture(MKSN_REQ, &m);
	assert_int_equal(m.type, SRPC_MSG_MKSN_REQST);
	assert_int_equal(m.body.mksn_reqst.rpyid, 0x074b000000000001ULL);
	assert_session(m.body.mksn_reqst.sid);
	assert_int_equal(m.body.mksn_reqst.force, 0);
	assert_string_equal(m.body.mksn_reqst.name, "labsess");

	r.version = 1;
	r.type = SRPC_MSG_MKSN_REPLY;
	r.ses_feats = 1;
	r.body.mksn_reply.sid = m.body.mksn_reqst.sid;
	r.body.mksn_reply.timeout = 100;
	assert_encodes_to(&r, MKSN_REP);

	decode_capture(RMSN_REQ, &m);
	assert_int_equal(m.type, SRPC_MSG_RMSN_REQST);
	assert_int_equal(m.body.rmsn_reqst.rpyid, 0x074b00000000002bULL);
	assert_session(m.body.rmsn_reqst.sid);
	memset(&r, 0, sizeof(r));
	r.version = 1;
	r.type = SRPC_MSG_RMSN_REPLY;
	r.ses_feats = 1;
	r.body.rmsn_reply.sid = (struct srpc_sid){ SRPC_NID4_ANY, -1 };
	assert_encodes_to(&r, RMSN_REP);
}

static void test_capture_test_add(void **state)
{
	struct srpc_msg m, r = { 0 };
	const struct srpc_test_reqst *t = &m.body.tes_reqst;

	(void)state;
	decode_capture(TEST_PING_REQ, &m);
	assert_int_equal(m.type, SRPC_MSG_TEST_REQST);
	assert_int_equal(t->rpyid, 0x074b000000000003ULL);
	assert_int_equal(t->bulkid, 0);
	assert_session(t->sid);
	assert_int_equal(t->bid, 2);
	assert_int_equal(t->service, SRPC_SERVICE_PING);
	assert_int_equal(t->loop, 1);
	assert_int_equal(t->concur, 1);
	assert_int_equal(t->is_client, 0);
	assert_int_equal(t->stop_onerr, 1);
	assert_int_equal(t->ndest, 0);
	assert_int_equal(t->param.kind, SRPC_TEST_PARAM_PING);

	decode_capture(TEST_BRW_W_REQ, &m);
	assert_int_equal(t->service, SRPC_SERVICE_BRW);
	assert_int_equal(t->bid, 3);
	assert_int_equal(t->param.kind, SRPC_TEST_PARAM_BULK_V1);
	assert_int_equal(t->param.blk_opc, LST_BRW_WRITE);
	assert_int_equal(t->param.blk_flags, LST_BRW_CHECK_FULL);
	assert_int_equal(t->param.blk_len, 65536);
	assert_int_equal(t->param.blk_offset, 0);

	decode_capture(TEST_BRW_R_REQ, &m);
	assert_int_equal(t->param.blk_opc, LST_BRW_READ);
	assert_int_equal(t->param.blk_flags, LST_BRW_CHECK_SIMPLE);
	assert_int_equal(t->param.blk_len, 4096);

	r.version = 1;
	r.type = SRPC_MSG_TEST_REPLY;
	r.ses_feats = 1;
	r.body.tes_reply.sid = (struct srpc_sid){ CONSOLE_NID, SESSION_STAMP };
	assert_encodes_to(&r, TEST_PING_REP);
	assert_encodes_to(&r, TEST_BRW_R_REP);
}

static void test_capture_ping_brw(void **state)
{
	struct srpc_msg m, r = { 0 };

	(void)state;
	decode_capture(PING_REQ, &m);
	assert_int_equal(m.type, SRPC_MSG_PING_REQST);
	assert_int_equal(m.body.ping_reqst.rpyid, 0x074b000000000007ULL);
	assert_int_equal(m.body.ping_reqst.magic, LST_PING_TEST_MAGIC);
	assert_int_equal(m.body.ping_reqst.seq, 0);
	assert_int_equal(m.body.ping_reqst.time_sec, 0x6b010753);
	assert_int_equal(m.body.ping_reqst.time_nsec, 0x0eeead19);
	r.version = 1;
	r.type = SRPC_MSG_PING_REPLY;
	r.ses_feats = 1;
	r.body.ping_reply.magic = LST_PING_TEST_MAGIC;
	r.body.ping_reply.seq = m.body.ping_reqst.seq;
	assert_encodes_to(&r, PING_REP);

	decode_capture(BRW_R_REQ, &m);
	assert_int_equal(m.type, SRPC_MSG_BRW_REQST);
	assert_int_equal(m.body.brw_reqst.rpyid, 0x074b00000000001aULL);
	assert_int_equal(m.body.brw_reqst.bulkid, 0x074b00000000001bULL);
	assert_int_equal(m.body.brw_reqst.rw, LST_BRW_READ);
	assert_int_equal(m.body.brw_reqst.len, 4096);
	assert_int_equal(m.body.brw_reqst.flags, LST_BRW_CHECK_SIMPLE);
	memset(&r, 0, sizeof(r));
	r.version = 1;
	r.type = SRPC_MSG_BRW_REPLY;
	r.ses_feats = 1;
	assert_encodes_to(&r, BRW_REP);
}

static void test_capture_stat(void **state)
{
	struct srpc_msg m;
	const struct srpc_stat_reply *s = &m.body.stat_reply;

	(void)state;
	decode_capture(STAT_REQ, &m);
	assert_int_equal(m.type, SRPC_MSG_STAT_REQST);
	assert_int_equal(m.body.stat_reqst.rpyid, 0x074b000000000024ULL);
	assert_session(m.body.stat_reqst.sid);
	assert_int_equal(m.body.stat_reqst.type, 0);

	decode_capture(STAT_REP, &m);
	assert_int_equal(m.type, SRPC_MSG_STAT_REPLY);
	assert_int_equal(s->status, 0);
	assert_session(s->sid);
	assert_int_equal(s->fw.running_ms, 8327);
	assert_int_equal(s->fw.active_batches, 0);
	assert_int_equal(s->rpc.rpcs_rcvd, 16);
	assert_int_equal(s->rpc.rpcs_dropped, 0);
	assert_int_equal(s->rpc.bulk_get, 3 * 65536);
	assert_int_equal(s->rpc.bulk_put, 3 * 4096);
	assert_int_equal(s->lnet.msgs_max, 2);
	assert_int_equal(s->lnet.send_count, 25);
	assert_int_equal(s->lnet.recv_count, 23);
	assert_int_equal(s->lnet.send_length, 14832);
	assert_int_equal(s->lnet.recv_length, 199216);
	assert_int_equal(s->lnet.drop_length, 0);
	assert_encodes_to(&m, STAT_REP);
}

static const char *const captures[] = {
	MKSN_REQ, MKSN_REP, TEST_PING_REQ, TEST_PING_REP, PING_REQ, PING_REP, TEST_BRW_W_REQ,
	TEST_BRW_R_REQ, TEST_BRW_R_REP, BRW_REP, BRW_R_REQ, STAT_REQ, STAT_REP, RMSN_REQ, RMSN_REP,
};
#define N_CAPTURES (sizeof(captures) / sizeof(captures[0]))

static void test_truncated(void **state)
{
	(void)state;
	for (size_t c = 0; c < N_CAPTURES; c++) {
		uint8_t b[SRPC_MSG_SIZE];
		struct srpc_msg m;

		load(captures[c], b);
		for (size_t len = 0; len < SRPC_MSG_SIZE; len++) {
			uint8_t *p = malloc(len ? len : 1);   /* exact size: ASan sees overruns */

			assert_non_null(p);
			memcpy(p, b, len);
			assert_int_equal(srpc_msg_decode(p, len, &m), -EMSGSIZE);
			free(p);
		}
		assert_int_equal(srpc_msg_decode_hdr(b, SRPC_HDR_SIZE - 1, &m), -EMSGSIZE);
		assert_int_equal(srpc_msg_decode(b, SRPC_MSG_SIZE, &m), 0);
	}
}

/* A big-endian sender of the ping request and of the brw test add (whose
 * bulk_v1 parameter has 16-bit fields), written field by field. */
static void test_big_endian(void **state)
{
	uint8_t le[SRPC_MSG_SIZE], be[SRPC_MSG_SIZE];
	struct srpc_msg a, b;

	(void)state;
	load(PING_REQ, le);
	memset(be, 0, sizeof(be));
	for (int o = 0; o < 24; o += 4)
		ul_put_be32(be + o, ul_get_le32(le + o));
	ul_put_be64(be + 24, ul_get_le64(le + 24));     /* rpyid */
	ul_put_be32(be + 32, ul_get_le32(le + 32));     /* magic */
	ul_put_be32(be + 36, ul_get_le32(le + 36) + 5); /* seq, changed */
	ul_put_be64(be + 40, ul_get_le64(le + 40));
	ul_put_be64(be + 48, ul_get_le64(le + 48));
	assert_int_equal(srpc_msg_decode(le, sizeof(le), &a), 0);
	assert_int_equal(srpc_msg_decode(be, sizeof(be), &b), 0);
	assert_true(b.swapped);
	assert_int_equal(b.type, SRPC_MSG_PING_REQST);
	assert_int_equal(b.ses_feats, 1);
	assert_int_equal(b.body.ping_reqst.rpyid, a.body.ping_reqst.rpyid);
	assert_int_equal(b.body.ping_reqst.magic, LST_PING_TEST_MAGIC);
	assert_int_equal(b.body.ping_reqst.seq, a.body.ping_reqst.seq + 5);
	assert_int_equal(b.body.ping_reqst.time_nsec, a.body.ping_reqst.time_nsec);

	load(TEST_BRW_W_REQ, le);
	memset(be, 0, sizeof(be));
	for (int o = 0; o < 24; o += 4)
		ul_put_be32(be + o, ul_get_le32(le + o));
	for (int o = 24; o < 24 + 40; o += 8)              /* rpyid bulkid sid bid */
		ul_put_be64(be + o, ul_get_le64(le + o));
	for (int o = 64; o < 76; o += 4)                   /* service loop concur */
		ul_put_be32(be + o, ul_get_le32(le + o));
	be[76] = le[76];
	be[77] = le[77];
	ul_put_be32(be + 78, ul_get_le32(le + 78));         /* ndest */
	ul_put_be16(be + 82, ul_get_le16(le + 82));         /* blk_opc */
	ul_put_be16(be + 84, ul_get_le16(le + 84));         /* blk_flags */
	ul_put_be32(be + 86, ul_get_le32(le + 86));         /* blk_len */
	ul_put_be32(be + 90, ul_get_le32(le + 90));         /* blk_offset */
	assert_int_equal(srpc_msg_decode(le, sizeof(le), &a), 0);
	assert_int_equal(srpc_msg_decode(be, sizeof(be), &b), 0);
	assert_true(b.swapped);
	b.swapped = false;
	memset(a.body.tes_reqst.param.raw, 0, sizeof(a.body.tes_reqst.param.raw));
	memset(b.body.tes_reqst.param.raw, 0, sizeof(b.body.tes_reqst.param.raw));
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(b.body.tes_reqst.param.blk_len, 65536);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Every type: random bytes in, decode, encode, decode: the same message,
 * and the encoding is a fixed point. Unused body bytes come out zero. */
static void test_round_trip(void **state)
{
	(void)state;
	for (uint32_t type = 0; type < SRPC_MSG_TYPE_COUNT; type++)
		for (int iter = 0; iter < 50; iter++) {
			uint8_t in[SRPC_MSG_SIZE], out[SRPC_MSG_SIZE], again[SRPC_MSG_SIZE];
			struct srpc_msg a, b;
			size_t body = srpc_body_size(type);

			for (size_t i = 0; i < sizeof(in); i++)
				in[i] = (uint8_t)rnd();
			ul_put_le32(in, SRPC_MSG_MAGIC);
			ul_put_le32(in + 8, type);
			if (iter & 1)
				ul_put_le32(in + 20, LST_FEAT_BULK_LEN);
			if (type == SRPC_MSG_TEST_REQST && (iter % 3) != 2)
				ul_put_le32(in + 24 + 40, iter % 3 ? SRPC_SERVICE_PING : SRPC_SERVICE_BRW);
			/* the ping parameter is 8 of the union's 12 bytes */
			if (type == SRPC_MSG_TEST_REQST && (iter % 3) == 1)
				memset(in + 24 + 58 + 8, 0, 4);
			assert_true(body > 0 && body <= SRPC_BODY_SIZE);
			assert_int_equal(srpc_msg_decode(in, sizeof(in), &a), 0);
			assert_int_equal(srpc_msg_encode(&a, out, sizeof(out)), SRPC_MSG_SIZE);
			assert_memory_equal(out, in, SRPC_HDR_SIZE + body);
			for (size_t i = SRPC_HDR_SIZE + body; i < SRPC_MSG_SIZE; i++)
				assert_int_equal(out[i], 0);
			assert_int_equal(srpc_msg_decode(out, sizeof(out), &b), 0);
			assert_int_equal(srpc_msg_encode(&b, again, sizeof(again)), SRPC_MSG_SIZE);
			assert_memory_equal(out, again, sizeof(out));
		}
}

static void test_errors(void **state)
{
	uint8_t b[SRPC_MSG_SIZE];
	struct srpc_msg m = { 0 };

	(void)state;
	load(PING_REQ, b);
	b[0] ^= 1;
	assert_int_equal(srpc_msg_decode(b, sizeof(b), &m), -EPROTO);
	load(PING_REQ, b);
	ul_put_le32(b + 8, SRPC_MSG_TYPE_COUNT);
	assert_int_equal(srpc_msg_decode(b, sizeof(b), &m), -EBADMSG);
	m.type = SRPC_MSG_TYPE_COUNT;
	assert_int_equal(srpc_msg_encode(&m, b, sizeof(b)), -EINVAL);
	m.type = SRPC_MSG_PING_REPLY;
	assert_int_equal(srpc_msg_encode(&m, b, sizeof(b) - 1), -ENOSPC);
	assert_int_equal(srpc_body_size(SRPC_MSG_TYPE_COUNT), 0);
	assert_int_equal(srpc_body_size(SRPC_MSG_STAT_REPLY), 136);
	assert_int_equal(srpc_body_size(SRPC_MSG_TEST_REQST), 70);
	assert_int_equal(srpc_body_size(SRPC_MSG_MKSN_REQST), 60);
	assert_int_equal(srpc_service2request(SRPC_SERVICE_BRW), SRPC_MSG_BRW_REQST);
	assert_int_equal(srpc_service2reply(SRPC_SERVICE_MAKE_SESSION), SRPC_MSG_MKSN_REPLY);
	assert_int_equal(srpc_service2request(7), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_session),
		cmocka_unit_test(test_capture_test_add),
		cmocka_unit_test(test_capture_ping_brw),
		cmocka_unit_test(test_capture_stat),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_big_endian),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
